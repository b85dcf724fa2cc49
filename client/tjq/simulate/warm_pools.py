"""Warm pools in a replay: the pool an attempt leaves, its end (reused, released, expired)
(a part of the fast engine's replay)."""

from __future__ import annotations

from job_queue.scheduler import WaitingJob
from job_queue.scheduler.snapshot import WarmPool
from tjq.simulate.records import AttemptRecord, PoolRecord


class WarmPools:
    """The replay's idle warm pools (a mixin of the engine's replay)."""

    def _leave_pool(self, index: int, attempt: AttemptRecord, now: float) -> None:
        spec = self.results[index].spec
        keep_alive = self.settings.keep_alive_s if spec.keep_alive_s is None else spec.keep_alive_s
        if not keep_alive or not self._counted(spec):
            return  # no pool, or one of instances nobody counts
        name = f"{spec.name}#{attempt.number}"
        share = spec.share if self.settings.shares else None
        pool = WarmPool(
            name,
            spec.name,
            spec.demand,
            spec.configuration,
            now,
            now + keep_alive,
            share,
            submitter=spec.submitter,
        )
        record = PoolRecord(spec.name, spec.instance_count, now, pool.expires_at)
        self.pools[name] = (pool, record)
        self.pool_records.append(record)

    def _end_pool(self, name: str, now: float, how: str) -> None:
        pool, record = self.pools.pop(name)
        record.until, record.ended_by = now, how
        self._charge(pool, pool.since, now)

    def _expire_pools(self, now: float) -> None:
        for name, (pool, record) in list(self.pools.items()):
            if pool.expired(now):
                del self.pools[name]
                record.until, record.ended_by = pool.expires_at, "expired"
                self._charge(pool, pool.since, pool.expires_at)

    def _matching_pool(self, job: WaitingJob) -> str | None:
        """The pool SageMaker starts ``job`` on: the oldest idle one of its configuration."""
        if not self.pools:
            return None
        return next((name for name, (p, _) in self.pools.items() if p.matches(job)), None)
