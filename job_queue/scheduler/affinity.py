"""Warm affinity: a job that would have idle pools released for it first lets later jobs
of its share, priority and type that match an idle pool start on it.

It trades strict first come, first served within one priority for fewer cold starts, and is
bounded: never ahead of a higher priority, never for longer than the policy's
``warm_affinity_s`` since the deferring job's submission, and over at most the policy's
``affinity_window`` later jobs per pass. The pass (:mod:`~job_queue.scheduler.planner`) keeps the
deferrals (:class:`WarmAffinity`, its warm-affinity steps) and decides the deferring jobs, in
queue order, when one ends.

Pools need not be the job's share's: a job may start on another share's idle pool that it
matches whenever its share may take that pool's capacity (as SageMaker would start it there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from job_queue.scheduler.pass_state import PassState
from job_queue.scheduler.shares import Share
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
    """The first of ``pools`` (which ``borrower`` would release to borrow) that
    a job held ``behind`` it of its priority matches, and that job (None: none matches)."""
    for pool in pools:
        match = next(
            (m for m in behind if m.priority == borrower.priority and pool.matches(m)), None
        )
        if match is not None:
            return pool, match
    return None


class WarmAffinity(PassState):
    """The pass's warm-affinity steps: the deferrals of one pass, and the borrowers' pools
    left to jobs held behind them. The planner decides a deferring job with ``_offer``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: dict[tuple[str, str], Deferral] = {}  # jobs letting matches go first
        self._behind: dict[tuple[str, str], list[WaitingJob]] = {}  # held behind a borrower

    def _offer(self, job: WaitingJob, share: Share, may_defer: bool) -> None:
        raise NotImplementedError

    def _defers(self, job: WaitingJob, share: Share) -> bool:
        """While jobs of a share and type let matching jobs go first: a job of their share
        and priority starts on its pool ahead of them, or waits behind them (True); another
        job of their share ends the wait for the types it needs, and is decided as usual
        (False), as is a job of another share, which has a queue order of its own."""
        itype = next(iter(job.demand)) if len(job.demand) == 1 else None
        deferral = self._deferred.get((share.name, itype)) if itype is not None else None
        if (
            deferral is not None
            and job.priority == deferral.priority
            and deferral.examined < self._policy.affinity_window
        ):
            deferral.examined += 1
            pool = self._own_pool(job, share) or self._matched_pool(job, share, False)
            if pool is not None:
                self._start_on(job, pool, share)  # ahead of earlier jobs of its priority
            else:
                deferral.jobs.append(job)
            return True
        for key in [(share.name, t) for t in job.demand if (share.name, t) in self._deferred]:
            self._end_deferral(key)
        return False

    def _warm_instead(self, job: WaitingJob, share: Share) -> bool:
        """Warm affinity for a borrower: if it would borrow only by releasing a pool that a
        later job of its share and priority (held behind it) matches, that job
        starts on the pool instead, and the borrower waits: the share borrows as much, and
        nobody starts cold."""
        if not may_defer(job, self._policy, self._now):
            return False
        if self._has_room(share, job.demand, soon=False, borrow=True):
            return False
        pools = self._search(job, share, self._releasable_pools(job, share), True, soon=False)
        behind = self._behind.get((share.name, next(iter(job.demand))), [])
        idle = [p for p in pools or () if isinstance(p, WarmPool)]
        taken = taker(job, idle, behind)
        if taken is None:
            return False
        pool, match = taken
        behind.remove(match)
        self._start_on(match, pool, share)
        return True

    def _end_deferral(self, key: tuple[str, str]) -> None:
        """The jobs that let matches go first are decided now, in queue order."""
        share = self._shares[key[0]]
        for job in self._deferred.pop(key).jobs:
            self._offer(job, share, may_defer=False)
