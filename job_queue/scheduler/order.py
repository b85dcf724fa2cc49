"""The scheduler's orders: the queue's (and a job's place in it), and that of preemption
candidates."""

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


def positions(waiting: Iterable[WaitingJob]) -> list[int]:
    """Each waiting job's place in line (``waiting`` in queue order): 1 + the jobs ahead of
    it that need one of its instance types (with quota shares, of its own share). Jobs of
    other types (or shares) do not make it wait in line."""
    single_type: dict[tuple[str | None, str], int] = {}  # jobs seen needing one type
    multi_type: list[tuple[str | None, frozenset[str]]] = []  # jobs seen needing several
    result = []
    for job in waiting:
        types = frozenset(job.demand)
        ahead = sum(single_type.get((job.share, t), 0) for t in types)
        ahead += sum(1 for share, seen in multi_type if share == job.share and seen & types)
        result.append(ahead + 1)
        if len(types) == 1:
            (itype,) = types
            single_type[job.share, itype] = single_type.get((job.share, itype), 0) + 1
        else:
            multi_type.append((job.share, types))
    return result
