"""The two orders of the scheduler: the queue's, and that of preemption candidates."""

from __future__ import annotations

from collections.abc import Iterable

from job_queue.models import JobState
from job_queue.scheduler.snapshot import ActiveJob, WaitingJob


def queue_order(job: WaitingJob) -> tuple[int, int]:
    """Sort key of the queue: higher priority first, then first submitted first."""
    return (-job.priority, job.seq)


def preemption_order(job: ActiveJob) -> tuple[int, float, int]:
    """Sort key of preemption candidates: lowest priority, then most recently started
    (then the later submitted, for jobs started in the same pass)."""
    return (job.priority, -job.started_at, -job.seq)


def preemption_candidates(
    active: Iterable[ActiveJob], now: float, min_run_s: float
) -> list[ActiveJob]:
    """Running jobs that may be preempted (run for at least ``min_run_s``), in preemption
    order."""
    protected_since = now - min_run_s
    return sorted(
        (
            job
            for job in active
            if job.state is JobState.RUNNING and job.started_at <= protected_since
        ),
        key=preemption_order,
    )
