"""Warm affinity: a job that would have idle pools released for it first lets later jobs
of its share, priority and type that match an idle pool start on it.

It trades strict first come, first served within one priority for fewer cold starts, and is
bounded: never ahead of a higher priority, never for longer than the policy's
``warm_affinity_s`` since the deferring job's submission, and over at most the policy's
``affinity_window`` later jobs per pass. The pass (:mod:`~job_queue.scheduler.planner`) keeps the
deferrals and decides the deferring jobs, in queue order, when one ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from job_queue.scheduler.snapshot import Policy, WaitingJob, WarmPool


def may_defer(job: WaitingJob, policy: Policy, now: float) -> bool:
    """Whether ``job``, which would have idle pools released for it, first lets later jobs
    of its share and priority that match them start on them."""
    return (
        policy.warm_affinity_s > 0
        and len(job.demand) == 1
        and now - job.submitted_at < policy.warm_affinity_s
    )


@dataclass
class Deferral:
    """Jobs of one share, priority and type, in queue order, letting matching jobs go first."""

    priority: int
    jobs: list[WaitingJob] = field(default_factory=list)
    examined: int = 0  # later jobs looked at while it lasts


def taker(
    borrower: WaitingJob, pools: Sequence[WarmPool], behind: Sequence[WaitingJob]
) -> tuple[WarmPool, WaitingJob] | None:
    """The first of ``pools`` (its share's, which ``borrower`` would release to borrow) that
    a job held ``behind`` it of its priority matches, and that job (None: none matches)."""
    for pool in pools:
        match = next(
            (m for m in behind if m.priority == borrower.priority and pool.matches(m)), None
        )
        if match is not None:
            return pool, match
    return None
