"""Writes on the holders item that are not a job's transition: the jobs on capped types that
the queue did not start (:mod:`job_queue.outside`), and the quota shares set at run time."""

from __future__ import annotations

from job_queue.errors import StaleState
from job_queue.scheduler.snapshot import OutsideJob
from job_queue.store import codecs, table
from job_queue.store.table import POOL_KEY


class HoldersItemWrites:
    """These writes of :class:`~job_queue.store.DynamoJobStore` (a mixin: it uses the store's
    ``_transact``)."""

    def hold_outside(self, job: OutsideJob) -> bool:
        """Count a job the queue did not start as holding its instances (False: it already
        is). A version bump: a plan that did not count them is stale."""
        try:
            self._transact(
                table.update(
                    POOL_KEY,
                    "SET outside.#job = :entry, version = version + :one",
                    "attribute_not_exists(outside.#job)",
                    {":entry": codecs.outside_entry(job), ":one": 1},
                    {"#job": job.name},
                )
            )
        except StaleState:
            return False
        return True

    def forget_outside(self, name: str) -> bool:
        """An outside job ended: its instances are free (False: it was not held). No version
        bump: a pass that still counts them only starts less."""
        try:
            self._transact(
                table.update(
                    POOL_KEY,
                    "REMOVE outside.#job",
                    "attribute_exists(outside.#job)",
                    {},
                    {"#job": name},
                )
            )
        except StaleState:
            return False
        return True

    def set_shares(
        self, shares_text: str, deployed: str, pool_version: int, changed_by: str, now: float
    ) -> None:
        """Replace the quota shares at run time (until a deployment changes ``deployed``),
        recording who did, and when. Bumps the pool version: a pass planned with the old
        shares must plan again."""
        self._transact(
            table.update(
                POOL_KEY,
                "SET shares = :shares, shares_deployed = :deployed, version = :next, "
                "shares_changed_by = :by, shares_changed_at = :now",
                "version = :version",
                {
                    ":shares": shares_text,
                    ":deployed": deployed,
                    ":next": pool_version + 1,
                    ":version": pool_version,
                    ":by": changed_by,
                    ":now": now,
                },
            )
        )
