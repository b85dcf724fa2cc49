"""Backfill, the pass's step: when a held job could start at the latest, and the later jobs
that may start before then.

A held job reserves its share and types from then instead of closing them, and a later job
may start in what is free only if it is bound to end before (EASY backfilling). The bound of
a running job is its start plus its MaxRuntimeInSeconds and the policy's provisioning
allowance (:meth:`~job_queue.scheduler.snapshot.Policy.bound`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from job_queue.scheduler.diagnosis import Diagnosis
from job_queue.scheduler.shares import Share
from job_queue.scheduler.snapshot import WaitingJob, WarmPool


def latest_start(now: float, need: int, have: int, ends: Iterable[tuple[float, int]]) -> float:
    """When ``need`` instances are there at the latest: ``have`` now, and each ``(end,
    count)`` frees ``count`` more at ``end``. Infinite when even all of them are not enough
    (or one that is needed has no bound)."""
    if have >= need:
        return now
    for end, count in sorted(ends):
        have += count
        if have >= need:
            return max(now, end)
    return math.inf


class Backfill(Diagnosis):
    """The pass's backfill step (the planner holds a job with ``_latest_start`` and offers a
    later job of its share and types to ``_backfill``)."""

    def _latest_start(self, job: WaitingJob) -> float:
        """When the instances the job needs are there at the latest: running jobs (of any
        share) end by their bound, stopping ones now. A later job that ends before then
        cannot delay it, whatever the quota rules say (they only ever make it start later).
        Infinite when a job it waits for has no bound."""
        ends = [
            (self._bound_end(a), a.demand) for a in self._running if a.name not in self._victims
        ]
        ends += [(end, demand) for end, demand, _ in self._started_ends]
        latest = self._now
        for itype, need in job.demand.items():
            have = self._free[itype] + self._releasing[itype] + self._pools.instances(itype)
            typed = [(end, demand[itype]) for end, demand in ends if itype in demand]
            latest = max(latest, latest_start(self._now, need, have, typed))
        return latest

    def _backfill(
        self, job: WaitingJob, share: Share, pool: WarmPool | None, reserved_from: float
    ) -> None:
        """Behind a reservation, a job starts only if it is done before the held job can
        start, on its share's own capacity; otherwise it waits, and the first held job's
        reservation stands (as in EASY backfilling, only that job's start is protected)."""
        self._backfill_examined += 1
        if self._bound_end(job) > reserved_from:
            self._waits(job, self._held_for(job, share, reserved_from))
            return
        if pool is not None:
            self._start_on(job, pool, share)
        elif self._has_room(share, job.demand, soon=False):
            self._start(job, share)
        else:
            pools = self._search(job, share, self._releasable_pools(job, share), soon=False)
            if pools is not None:
                self._admit(job, share, pools)
            else:
                self._waits(job, self._diagnose(job, share))
