"""`make demo`: the blog's scenario through the SageMaker SDK, over HTTP, on this machine.

`smq local-api` is started in-process (the real Lambda handler behind a local API, AWS
emulated, real time: a stop takes a second). Four jobs with the post's own arguments (a
priority tag, `keep_alive_period_in_seconds=60`) are queued through the installed SDK: with
SDK v3, `ModelTrainer`s submitted by `TrainingQueue.submit` (which names them, as the story
needs); with SDK v2, PyTorch estimators whose `QueueTrainingJobSession` queues
`fit(wait=False)`. job1 (priority 1), job2 (2) and job3 (1) go on two ml.p5.48xlarge; then
job4 (3) arrives and preempts job1. Every job leaves its instances in a warm pool, so each
next job starts on the instances the team already holds.

The emulated jobs train until the story says they finish: the demo tells the emulator when
(job2 first, then job4, then the rest), and waits for the queue to react before the next
step. So the story is the same on any machine, however slow or busy."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

INSTANCE = "ml.p5.48xlarge"
STOP_SECONDS = 1.0
RUN_SECONDS = 3600.0  # longer than the demo: a job ends when the story says so
READING_SECONDS = 1.5  # the jobs train this long between steps: time to read a table
JOBS = (("job1", 1), ("job2", 2), ("job3", 1), ("job4", 3))  # (name, priority)
TRAIN_SCRIPT = 'print("training ...")\n'
PYTORCH_IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


def run(
    out: Callable[[str], None] = print, reading_seconds: float = READING_SECONDS
) -> list[list[tuple[str, str, int]]]:
    """Play the scenario, printing the queue after each step; returns each step's table.

    ``reading_seconds`` only paces the story for a reader; what happens does not depend on
    it, since a job finishes when the demo says so."""
    import tjq.session  # noqa: F401 (the SDK is slow to import: not while jobs run)
    from tjq.local.server import LocalApi

    tables: list[list[tuple[str, str, int]]] = []
    with (
        LocalApi(
            capacity={INSTANCE: 2}, run_seconds=RUN_SECONDS, stop_seconds=STOP_SECONDS
        ) as local,
        _exported(local.environment()),
    ):
        from tjq.api import QueueClient
        from tjq.table import pool_lines, queue_table

        client = QueueClient.from_environment()
        started = time.monotonic()

        def step(title: str, until: Callable[[list[dict]], bool], started_on_pool=()) -> None:
            answer = _wait_for(client, until, title)
            jobs = answer["jobs"]
            out(f"\n[{time.monotonic() - started:4.1f}s] {title}")
            for name in started_on_pool:
                attempt = client.job(name)["attempts"][-1]
                if attempt["start"] == "warm":
                    out(f"[demo] {name} started on the warm pool of {attempt['warm_pool_of']}")
            for line in pool_lines(answer.get("pools", [])):
                out(f"[demo] {line}")
            out(queue_table(jobs))
            tables.append([(j["name"], j["state"], j["priority"]) for j in jobs])

        def finish(*names: str) -> None:
            """The jobs' training ends: their current SageMaker jobs complete."""
            time.sleep(reading_seconds)
            for name in names:
                out(f"\n[demo] {name}'s training finishes")
                local.cloud.sagemaker.set_run_seconds(client.job(name)["sagemaker_job_name"], 0)

        with tempfile.TemporaryDirectory() as source:
            Path(source, "train.py").write_text(TRAIN_SCRIPT)
            for job in JOBS[:3]:
                _fit(*job, source, out)
            step(
                "job1 (priority 1), job2 (2), job3 (1) submitted: two start, job3 waits",
                lambda jobs: (
                    _states(jobs) == {"job1": "running", "job2": "running", "job3": "pending"}
                ),
            )
            _fit(*JOBS[3], source, out)
            step(
                "job4 (priority 3) submitted: job1, the lowest-priority running job, is stopped",
                lambda jobs: _states(jobs).get("job4") in ("pending", "running"),
            )
            step(
                "job1 stopped and back in the queue, in its place; job4 runs on job1's instances",
                lambda jobs: (
                    _states(jobs).get("job1") == "preempted"
                    and _states(jobs).get("job4") == "running"
                ),
                started_on_pool=["job4"],
            )
            finish("job2")
            step(
                "job2 completed first: job1 resumes ahead of job3 (same priority, queued first)",
                lambda jobs: "job2" not in _states(jobs) and _states(jobs).get("job1") == "running",
                started_on_pool=["job1"],
            )
            finish("job4")
            step(
                "job4 completed: job3 starts",
                lambda jobs: "job4" not in _states(jobs) and _states(jobs).get("job3") == "running",
                started_on_pool=["job3"],
            )
            finish("job1", "job3")
            step("job1 and job3 completed", lambda jobs: not jobs)
    return tables


def _fit(name: str, priority: int, source: str, out: Callable[[str], None]) -> None:
    """Submit one job as a user of the installed SDK would: with the post's arguments."""
    from job_queue import tags
    from tjq import QueueTrainingJobSession
    from tjq.local.cloud import ROLE_ARN
    from tjq.session import sdk_major

    if sdk_major() >= 3:
        # ModelTrainer.train() names a job <base_job_name>-<timestamp>; TrainingQueue.submit
        # takes the job's name, as AWS Batch's does.
        from sagemaker.core.shapes import Tag
        from sagemaker.core.training.configs import Compute, SourceCode
        from sagemaker.train import ModelTrainer

        from tjq import TrainingQueue

        trainer = ModelTrainer(
            training_image=PYTORCH_IMAGE,
            source_code=SourceCode(source_dir=source, entry_script="train.py"),
            compute=Compute(
                instance_type=INSTANCE, instance_count=1, keep_alive_period_in_seconds=60
            ),
            role=ROLE_ARN,
            base_job_name=name,
            tags=[Tag(key=tags.PRIORITY, value=str(priority))],
        )
        TrainingQueue(out=out).submit(trainer, job_name=name)
        return
    from sagemaker.pytorch import PyTorch

    PyTorch(
        entry_point="train.py",
        source_dir=source,
        role=ROLE_ARN,
        instance_type=INSTANCE,
        instance_count=1,
        framework_version="2.3",
        py_version="py311",
        keep_alive_period_in_seconds=60,
        sagemaker_session=QueueTrainingJobSession(out=out),
        tags=[{"Key": tags.PRIORITY, "Value": str(priority)}],
    ).fit(wait=False, job_name=name)


@contextlib.contextmanager
def _exported(variables: dict[str, str]):
    """What a user exports in their shell, for the duration of the demo only."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _states(jobs: list[dict]) -> dict[str, str]:
    return {job["name"]: job["state"] for job in jobs}


def _wait_for(
    client, until: Callable[[list[dict]], bool], step: str, timeout: float = 120.0
) -> dict:
    """GET /jobs once ``until`` holds for its jobs (it may take a stop's time, or a busy
    machine's)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = client.jobs()
        if until(answer["jobs"]):
            return answer
        if time.monotonic() > deadline:
            raise TimeoutError(f"the queue did not reach this step in {timeout:g}s: {step}")
        time.sleep(0.05)


def main() -> None:
    # The Lambda's logs, the SDK's notices and moto's request log would drown the tables.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    for noisy in ("werkzeug", "botocore", "sagemaker", "sagemaker.config"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    print(
        f"Capacity: 2 x {INSTANCE}. Each job trains until the story says it finishes; "
        f"a stop takes {STOP_SECONDS:g}s; every job keeps its instances in a warm pool for 60s."
    )
    run()


if __name__ == "__main__":
    main()
