"""The queue as a table, for `smq status` and the demo."""

from __future__ import annotations

from tabulate import tabulate

HEADERS = ("Job Name", "State", "Priority", "Position", "Instances", "Time", "SageMaker job")


def queue_table(jobs: list[dict]) -> str:
    """Rows of GET /jobs as a table: active jobs first, then the queue in start order."""
    if not jobs:
        return "(the queue is empty)"
    rows = [
        (
            job["name"],
            job["state"],
            job["priority"],
            job.get("position") or "",
            f"{job['instance_count']} x {job['instance_type']}",
            _time(job),
            job.get("sagemaker_job_name") or "",
        )
        for job in jobs
    ]
    return tabulate(rows, headers=HEADERS, disable_numparse=True)


def _time(job: dict) -> str:
    if job.get("running_seconds") is not None:
        return f"running {duration(job['running_seconds'])}"
    if job.get("waiting_seconds") is not None:
        return f"waiting {duration(job['waiting_seconds'])}"
    return ""


def duration(seconds: float) -> str:
    """3s, 4m05s, 2h03m."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
