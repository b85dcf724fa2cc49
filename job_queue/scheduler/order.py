"""The scheduler's orders: the queue's (and a job's place in it), and that of preemption
candidates."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

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


@dataclass
class Line:
    """Places in line, counted while the queue is read in order; it can be kept and read on
    from later (a next page). A job's place is 1 + the jobs ahead of it that need one of its
    instance types (with quota shares, of its own share): jobs of other types (or shares) do
    not make it wait in line."""

    single: dict[tuple[str | None, str], int] = field(default_factory=dict)  # jobs seen
    multi: list[tuple[str | None, frozenset[str]]] = field(default_factory=list)  # several types

    def place(self, job: WaitingJob) -> int:
        """The place of ``job``, the next job in queue order."""
        types = frozenset(job.demand)
        ahead = sum(self.single.get((job.share, t), 0) for t in types)
        ahead += sum(1 for share, seen in self.multi if share == job.share and seen & types)
        if len(types) == 1:
            (itype,) = types
            self.single[job.share, itype] = self.single.get((job.share, itype), 0) + 1
        else:
            self.multi.append((job.share, types))
        return ahead + 1


def positions(waiting: Iterable[WaitingJob], line: Line | None = None) -> list[int]:
    """Each waiting job's place in line (``waiting`` in queue order; ``line``: the jobs read
    before them, which it counts on)."""
    line = Line() if line is None else line
    return [line.place(job) for job in waiting]
