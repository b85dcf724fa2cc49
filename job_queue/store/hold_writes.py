"""The admins' holds on the queue or its shares (:mod:`job_queue.scheduler.holds`), kept on
the holders item with the trail of who held, drained or resumed what, and when."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from job_queue.scheduler.holds import KEPT_CHANGES, HoldAction, HoldChange, QueueHold
from job_queue.store import table
from job_queue.store.table import POOL_KEY


class HoldWrites:
    """The hold writes of :class:`~job_queue.store.DynamoJobStore` (a mixin: it uses the
    store's ``_transact``)."""

    def set_holds(
        self,
        holds: Iterable[QueueHold],
        trail: Sequence[HoldChange],
        change: HoldChange,
        pool_version: int,
    ) -> None:
        """Replace the holds, adding ``change`` to ``trail`` (as read with ``pool_version``).
        Bumps the version: a pass planned without a hold (or with one lifted) must plan
        again; a lost race raises StaleState."""
        kept = [*trail, change][-KEPT_CHANGES:]
        self._transact(
            table.update(
                POOL_KEY,
                "SET holds = :holds, hold_changes = :trail, version = :next",
                "version = :version",
                {
                    ":holds": [_hold_value(h) for h in holds],
                    ":trail": [_change_value(c) for c in kept],
                    ":next": pool_version + 1,
                    ":version": pool_version,
                },
            )
        )


def holds_from(value: Iterable[dict]) -> tuple[QueueHold, ...]:
    return tuple(
        QueueHold(h.get("share"), bool(h["drain"]), h["by"], float(h["since"])) for h in value
    )


def changes_from(value: Iterable[dict]) -> tuple[HoldChange, ...]:
    return tuple(
        HoldChange(HoldAction(c["action"]), c.get("share"), c["by"], float(c["at"])) for c in value
    )


def _hold_value(hold: QueueHold) -> dict:
    return {"share": hold.share, "drain": hold.drain, "by": hold.by, "since": hold.since}


def _change_value(change: HoldChange) -> dict:
    return {
        "action": change.action.value,
        "share": change.share,
        "by": change.by,
        "at": change.at,
    }
