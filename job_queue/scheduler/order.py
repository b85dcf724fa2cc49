"""The scheduler's orders: the queue's (and a job's place in it), and that of preemption
candidates."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from job_queue.models import JobState
from job_queue.scheduler.snapshot import ActiveJob, Policy, WaitingJob


def queue_order(job: WaitingJob) -> tuple[int, int]:
    """Sort key of the queue: higher priority first, then first submitted first."""
    return (-job.priority, job.seq)


def preemption_order(job: ActiveJob) -> tuple[int, float, int]:
    """Sort key of running jobs by priority, then most recently started (then the later
    submitted, for jobs started in the same pass)."""
    return (job.priority, -job.started_at, -job.seq)


# When a job that saves at an interval last saved (its newest checkpoint), if known.
SavedAt = Callable[[ActiveJob], float | None]


def lost_work(job: ActiveJob, now: float, saved_at: float | None = None) -> float:
    """Seconds of progress that stopping ``job`` now throws away, by how it checkpoints:

    * on stop: nothing (it saves in SageMaker's stop window and resumes from there);
    * every N seconds: the time since its last save in this attempt -- ``saved_at`` (its
      newest checkpoint) when known, otherwise since the attempt's last whole interval;
    * not declared: everything since its attempt started.
    """
    ran = max(0.0, now - job.started_at)
    declared = job.checkpoint
    if declared is None:
        return ran
    if declared.on_stop:
        return 0.0
    if saved_at is not None:
        return max(0.0, now - max(saved_at, job.started_at))
    return ran % declared.every_s


class LostWork:
    """:func:`lost_work` of running jobs within one pass. A job's newest checkpoint is looked
    up (``saved_at``) only for jobs that save at an interval, at most once, and only when
    asked: when victims are chosen."""

    def __init__(self, now: float, saved_at: SavedAt | None = None) -> None:
        self.now, self._saved_at = now, saved_at
        self._known: dict[str, float] = {}

    def __call__(self, job: ActiveJob) -> float:
        if job.name not in self._known:
            interval = job.checkpoint is not None and not job.checkpoint.on_stop
            saved = self._saved_at(job) if interval and self._saved_at else None
            self._known[job.name] = lost_work(job, self.now, saved)
        return self._known[job.name]


def preemption_candidates(
    active: Iterable[ActiveJob], now: float, min_run_s: float
) -> list[ActiveJob]:
    """Running jobs that may be preempted (run for at least ``min_run_s``), by priority
    (lowest first), then most recently started: pass them through :func:`least_lost_first`
    for the preemption order."""
    protected_since = now - min_run_s
    return sorted(
        (
            job
            for job in active
            if job.state is JobState.RUNNING and job.started_at <= protected_since
        ),
        key=preemption_order,
    )


def least_lost_first(
    candidates: Iterable[ActiveJob], lost: LostWork, policy: Policy
) -> Iterator[ActiveJob]:
    """The preemption order: ``candidates`` (from :func:`preemption_candidates`) with each
    priority's jobs reordered by the work their stop would throw away, least first (among
    equals, the most recently started first). Lazy: the victim search stops reading once it
    has room, and a priority's losses are estimated only when it reaches them. With the
    policy's ``least_lost_work`` off, the candidates as they are."""
    if not policy.least_lost_work:
        yield from candidates
        return
    for _, same_priority in itertools.groupby(candidates, key=lambda job: job.priority):
        yield from sorted(same_priority, key=lost)


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
