"""Idle warm pools during one pass: which one a job starts on, and which ones are released.

The rules, the same in every layout:

* A pool past its keep-alive is gone: SageMaker has ended it, whether or not the queue has
  noticed yet.
* A job starts on the oldest idle pool of its configuration and demand, before anything else
  (with quota shares, its share's own first; another share's if its share may take it).
* An idle pool never blocks waiting work: pools a job does not match are released for it when
  free instances (and, unless it may backfill, instances that stops under way are about to
  free) are not enough — the oldest first, only as many as it needs, and before anything is
  preempted. With quota shares, only pools whose capacity the job's share may then take.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from job_queue.scheduler.snapshot import WaitingJob, WarmPool


class IdlePools:
    """The pools that are still idle in this pass, oldest first."""

    def __init__(self, pools: Iterable[WarmPool], now: float) -> None:
        live = (pool for pool in pools if not pool.expired(now))
        self._pools = sorted(live, key=lambda pool: (pool.since, pool.name))

    @property
    def held(self) -> tuple[WarmPool, ...]:
        """The pools that hold instances now."""
        return tuple(self._pools)

    def matching(
        self, job: WaitingJob, allowed: Callable[[WarmPool], bool] | None = None
    ) -> WarmPool | None:
        """The oldest pool ``job`` can start on (of those ``allowed``: with shares, one its
        own share left)."""
        if not self._pools:
            return None
        return next(
            (p for p in self._pools if p.matches(job) and (allowed is None or allowed(p))),
            None,
        )

    def of_types(self, types: Iterable[str]) -> list[WarmPool]:
        """The idle pools of these instance types, oldest first."""
        types = set(types)
        return [pool for pool in self._pools if set(pool.demand) & types]

    def instances(self, itype: str) -> int:
        if not self._pools:
            return 0
        return sum(pool.demand.get(itype, 0) for pool in self._pools)

    def remove(self, pool: WarmPool) -> None:
        """The pool is taken (a job starts on it) or released."""
        self._pools.remove(pool)
