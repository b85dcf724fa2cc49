"""The emulated training container's logs: a few lines per SageMaker job in emulated
CloudWatch Logs, as SageMaker writes them — group ``/aws/sagemaker/TrainingJobs``, one stream
per host, ``<job name>/algo-<n>-<epoch seconds>`` — so that following a job's logs across
its attempts is tested end to end. Unless it runs the job's script (``--run-scripts``: then
what the script prints), the lines say what the emulator did."""

from __future__ import annotations

import contextlib
import time

from tjq.local.emulated_job import EmulatedJob

LOG_GROUP = "/aws/sagemaker/TrainingJobs"


def streams(job: EmulatedJob) -> list[str]:
    """The job's log streams: one per instance."""
    hosts = sum(job.demand.values()) or 1
    return [f"{job.name}/algo-{n}-{int(job.created_at)}" for n in range(1, hosts + 1)]


def lines_for(job: EmulatedJob, status: str) -> list[str]:
    """What the container writes as the job enters ``status``."""
    if status == "InProgress":
        running = "" if job.container else " (emulated: no code runs)"
        return [f"Starting training job {job.name}", f"Invoking the training script{running}"]
    if status == "Stopping":
        return ["Received SIGTERM: the training job is being stopped"]
    if status == "Completed":
        return ["Training finished: reporting success"]
    if status == "Failed":
        return [f"Training failed: {job.failure_reason or 'an error'}"]
    return []


def write(logs, job: EmulatedJob, status: str) -> None:
    """Append the lines of ``status`` to each of the job's streams."""
    append(logs, job, lines_for(job, status))


def append(logs, job: EmulatedJob, lines: list[str]) -> None:
    """Append ``lines`` to each of the job's streams (wall-clock timestamps: CloudWatch Logs
    refuses events far in the past, and the emulator's clock may be)."""
    if logs is None or not lines:
        return
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=LOG_GROUP)
    for host, stream in enumerate(streams(job), start=1):
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_stream(logGroupName=LOG_GROUP, logStreamName=stream)
        now = int(time.time() * 1000)
        events = [{"timestamp": now, "message": f"[algo-{host}] {line}"} for line in lines]
        logs.put_log_events(logGroupName=LOG_GROUP, logStreamName=stream, logEvents=events)
