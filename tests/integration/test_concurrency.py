"""Overlapping invocations on real threads against the emulated AWS: users' submissions,
cancels and priority changes while SageMaker events arrive.

API requests take turns, as in one Lambda execution environment; SageMaker's events overlap
them, so two scheduling passes race for the same capacity."""

import random
import sys
import threading

from tjq.local.calls import training_request

from job_queue import tags
from tests.conftest import G5, P5
from tests.integration.helpers import job

CAPACITY = {P5: 3, G5: 2}
THREADS = 6
JOBS_PER_THREAD = 6


def _workload(seed: int) -> list[list[dict]]:
    rng = random.Random(seed)
    batches = []
    for t in range(THREADS):
        batch = []
        for i in range(JOBS_PER_THREAD):
            itype = rng.choice([P5, P5, G5])
            batch.append(
                training_request(
                    f"t{t}-job{i}",
                    priority=rng.randint(0, 4),
                    instance_type=itype,
                    instance_count=rng.randint(1, CAPACITY[itype]),
                    run_seconds=rng.choice([120, 300, 600]),
                )
            )
        batches.append(batch)
    return batches


def test_overlapping_requests_are_each_answered_about_themselves(make_cloud):
    """Eight users ask at once about jobs that do not exist; each answer names their job.

    (Powertools' resolver keeps the request it answers in a class attribute, so requests
    answered on overlapping threads would swap; a short switch interval makes that likely.)
    """
    cloud = make_cloud({P5: 2})
    mixups: list[str] = []

    def user(t: int) -> None:
        for i in range(120):
            name = f"u{t}-job{i}"
            try:
                status, body = cloud.api("GET", f"/jobs/{name}")
            except Exception as exc:  # an answer that breaks is a mixup too
                status, body = None, repr(exc)
            if status != 404 or f"no job named {name} " not in body["message"]:
                mixups.append(f"asked about {name}, answered {status}: {body}")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        users = [threading.Thread(target=user, args=(t,)) for t in range(8)]
        for thread in users:
            thread.start()
        for thread in users:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert mixups == []


def test_overlapping_invocations_keep_every_invariant(make_cloud):
    cloud = make_cloud(CAPACITY, stop_seconds=60)
    batches = _workload(seed=7)
    errors: list[BaseException] = []
    answers: list[int] = []
    submitting = threading.Event()
    submitting.set()

    def user(batch: list[dict], rng: random.Random) -> None:
        try:
            for request in batch:
                status, _ = cloud.api("POST", "/add-job", request)
                answers.append(status)
                # Idempotent retry of the same request, as a client would after a timeout.
                if rng.random() < 0.2:
                    answers.append(cloud.api("POST", "/add-job", request)[0] - 200 + 201)
                name = request["TrainingJobName"]
                if rng.random() < 0.15:
                    cloud.api("DELETE", f"/jobs/{name}")
                elif rng.random() < 0.25:
                    cloud.api("PUT", f"/jobs/{name}/priority", {"priority": rng.randint(0, 6)})
        except BaseException as exc:  # surfaced below, with the thread's traceback
            errors.append(exc)

    def eventbridge() -> None:
        try:
            while submitting.is_set():
                cloud.advance(20)
        except BaseException as exc:
            errors.append(exc)

    users = [
        threading.Thread(target=user, args=(batch, random.Random(i)))
        for i, batch in enumerate(batches)
    ]
    events = threading.Thread(target=eventbridge)
    events.start()
    for thread in users:
        thread.start()
    for thread in users:
        thread.join()
    submitting.clear()
    events.join()
    if errors:
        raise errors[0]  # with the failing thread's traceback
    assert set(answers) == {201}, "every submission was accepted (retries answered 200)"

    # Drain without the sweep: a lost wake-up would leave jobs waiting on free capacity.
    for _ in range(200):
        if not cloud.jobs():
            break
        cloud.advance(60)
    assert cloud.jobs() == [], "jobs stuck in the queue"

    names = [r["TrainingJobName"] for batch in batches for r in batch]
    final = {name: job(cloud, name) for name in names}
    assert {f["state"] for f in final.values()} <= {"completed", "cancelled"}

    # Capacity was never exceeded (the emulated account would also have refused).
    for itype, cap in CAPACITY.items():
        assert cloud.sagemaker.peak_in_use.get(itype, 0) <= cap
    assert all(f["start_failures"] == 0 for f in final.values())

    # No job was ever started twice at once; every SageMaker job belongs to one attempt.
    by_job: dict[str, list[str]] = {}
    for sagemaker_job in cloud.sagemaker.jobs.values():
        by_job.setdefault(sagemaker_job.tags[tags.JOB], []).append(sagemaker_job.name)
    for name, record in final.items():
        attempts = [a["sagemaker_job_name"] for a in record["attempts"]]
        assert sorted(by_job.get(name, [])) == sorted(attempts), name
        assert len(set(attempts)) == len(attempts)
