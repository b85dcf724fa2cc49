"""The warm pools' transitions in the table: released, dropped once a job started on them
(or they ended), idle again after a start on them failed. Each a transaction on the holders
item, with fair share's charge for the pool's idle time where it ends."""

from __future__ import annotations

from job_queue.ledger import UsageRecord, pool_record
from job_queue.models import AuditEntry
from job_queue.scheduler.snapshot import WarmPool
from job_queue.store import codecs, table
from job_queue.store.ledger_writes import recorded
from job_queue.store.table import POOL_KEY

# A warm pool that exists and that no job is being started on.
IDLE_POOL = "attribute_exists(pools.#pool) AND attribute_not_exists(pools.#pool.claimed_by)"


class PoolWrites:
    """The warm-pool writes of :class:`~job_queue.store.DynamoJobStore` (a mixin: it uses
    the store's ``_transact`` and fair-share charges)."""

    def release_pool(
        self,
        pool: WarmPool,
        now: float,
        audit: AuditEntry | None = None,
        billed_s: float | None = None,
    ) -> UsageRecord | None:
        """An idle pool was released (or SageMaker ended it): its instances are free. No
        version bump: a pass that still counts them only starts less; one that plans to start
        a job on the pool claims it, which fails once it is gone. With ``audit``, the line is
        added to the trail of the job that left the pool, in the same transaction;
        ``billed_s``: what SageMaker says it billed for the pool, for the ledger."""
        held = recorded(pool_record(pool, now, billed_s))
        writes = [
            table.update(POOL_KEY, "REMOVE pools.#pool", IDLE_POOL, {}, {"#pool": pool.name}),
            *self._accounts({}, self._pool_usage(pool, min(now, pool.expires_at))),
            *self._ledger(held),
        ]
        if audit is not None:
            clause, values = table.append_history(codecs.audit_value(audit))
            writes.append(
                table.update(
                    table.job_key(pool.job), f"SET {clause}", "attribute_exists(#state)", values
                )
            )
        self._transact(*writes)
        return held

    def drop_pool(self, pool: WarmPool, billed_s: float | None = None) -> UsageRecord | None:
        """A pool claimed by ``pool.claimed_by`` is gone: the job started on it (SageMaker
        moved it) or SageMaker ended it. Its instances were counted by the claimer (its idle
        time until the claim is charged now)."""
        until = pool.claimed_at if pool.claimed_at is not None else pool.since
        held = recorded(pool_record(pool, until, billed_s))
        self._transact(
            table.update(
                POOL_KEY,
                "REMOVE pools.#pool",
                "pools.#pool.claimed_by = :by",
                {":by": pool.claimed_by},
                {"#pool": pool.name},
            ),
            *self._accounts({}, self._pool_usage(pool, until)),
            *self._ledger(held),
        )
        return held

    def unclaim_pool(self, pool: WarmPool) -> None:
        """SageMaker did not start the claimer on the pool: it is idle again, and holds its
        instances again — a version bump, as a plan that did not count them is stale."""
        self._transact(
            table.update(
                POOL_KEY,
                "REMOVE pools.#pool.claimed_by, pools.#pool.claimed_at "
                "SET version = version + :one",
                "pools.#pool.claimed_by = :by",
                {":by": pool.claimed_by, ":one": 1},
                {"#pool": pool.name},
            )
        )
