"""What the holders item also keeps that is not a holding: the training plans as last read,
the sweep's count of waiting jobs, fair-share weights and budgets set at run time, the budgets
warned of, and the jobs first in line that HeadOfLineLimits counts. Written without a
version bump: no plan depends on them being the latest."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from botocore.exceptions import ClientError

from job_queue.head_of_line import Blocking
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.waiting_for import Reason
from job_queue.store import codecs, table
from job_queue.store.table import POOL_KEY


class HolderNotes:
    """The notes on the holders item of :class:`~job_queue.store.DynamoJobStore` (a mixin)."""

    _db: object
    _table: str

    def set_plans(self, plans: Iterable[TrainingPlan]) -> None:
        """Keep the training plans as just read. No version bump: a plan's windows are known
        ahead, and a pass that read the plans a moment ago decides as this one would."""
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(POOL_KEY),
            UpdateExpression="SET plans = :plans",
            ConditionExpression="attribute_exists(version)",
            ExpressionAttributeValues=table.ser({":plans": codecs.plans_value(plans)}),
        )

    def set_waiting_count(self, count: int, now: float) -> None:
        """How many jobs wait, as the sweep counted them (no version bump: a figure to show)."""
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(POOL_KEY),
            UpdateExpression="SET waiting_count = :n, waiting_counted_at = :at",
            ConditionExpression="attribute_exists(version)",
            ExpressionAttributeValues=table.ser({":n": count, ":at": now}),
        )

    def set_weights(self, weights_text: str, deployed: str, changed_by: str, now: float) -> None:
        """Replace the fair-share weights at run time (until a deployment changes
        ``deployed``), recording who did, and when. No version bump: a pass that ordered the
        queue by the old weights has ordered it as the admins wanted a moment before."""
        self._set_run_time("weights", weights_text, deployed, changed_by, now)

    def set_budgets(self, budgets_text: str, deployed: str, changed_by: str, now: float) -> None:
        """Replace the submitters' budgets at run time (until a deployment changes
        ``deployed``), recording who did, and when. No version bump: the next pass reads
        them, and a budget never stops a running job."""
        self._set_run_time("budgets", budgets_text, deployed, changed_by, now)

    def _set_run_time(self, name: str, text: str, deployed: str, by: str, now: float) -> None:
        values = {":text": text, ":deployed": deployed, ":by": by, ":now": now}
        fields = ("", "_deployed", "_changed_by", "_changed_at")
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(POOL_KEY),
            UpdateExpression="SET #f0 = :text, #f1 = :deployed, #f2 = :by, #f3 = :now",
            ConditionExpression="attribute_exists(version)",
            ExpressionAttributeNames={f"#f{i}": name + suffix for i, suffix in enumerate(fields)},
            ExpressionAttributeValues=table.ser(values),
        )

    def set_budgets_warned(self, warned: Mapping[str, float], previous: Mapping | None) -> bool:
        """Which budgets were warned of, at which level (a holder, 0.8 or 1.0), if no other
        sweep changed them since they were ``previous``: whether this one may send its
        warnings."""
        before = dict(previous) if previous is not None else None
        return self._set_unless_changed("budgets_warned", dict(warned), before)

    def set_usage_reported(self, month: str, previous: str | None) -> bool:
        """The monthly usage report of ``month`` is sent, if no other sweep sent it since
        the last one (``previous``) was: whether this one may send it."""
        return self._set_unless_changed("usage_reported", month, previous or None)

    def _set_unless_changed(self, name: str, value, previous) -> bool:
        """Set the note ``name`` to ``value`` if it is still ``previous`` (None: unset):
        whether this invocation did (another sweep may have, since it was read)."""
        condition = "#note = :previous" if previous is not None else "attribute_not_exists(#note)"
        values = {":value": value, **({":previous": previous} if previous is not None else {})}
        try:
            self._db.update_item(
                TableName=self._table,
                Key=table.ser(POOL_KEY),
                UpdateExpression="SET #note = :value",
                ConditionExpression=f"attribute_exists(version) AND {condition}",
                ExpressionAttributeNames={"#note": name},
                ExpressionAttributeValues=table.ser(values),
            )
        except ClientError as exc:
            if table.error_code(exc) == "ConditionalCheckFailedException":  # another sweep did
                return False
            raise
        return True

    def set_blocking(self, kept: Mapping[str, Blocking]) -> None:
        """The jobs first in line that HeadOfLineLimits counts, as the sweep just found them
        (no version bump: a count for the next sweep)."""
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(POOL_KEY),
            UpdateExpression="SET blocking = :kept",
            ConditionExpression="attribute_exists(version)",
            ExpressionAttributeValues=table.ser({":kept": blocking_value(kept)}),
        )


def blocking_value(kept: Mapping[str, Blocking]) -> dict:
    return {
        name: {"reason": b.reason.value, "since": b.since, "alarmed": b.alarmed}
        for name, b in kept.items()
    }


def blocking_from(value: Mapping) -> dict[str, Blocking]:
    return {
        name: Blocking(Reason(e["reason"]), float(e["since"]), bool(e["alarmed"]))
        for name, e in value.items()
    }
