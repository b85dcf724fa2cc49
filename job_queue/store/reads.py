"""Reads of the queue table: a job, the holders of capacity, the waiting queue in order.

Strongly consistent where a decision depends on them (a GSI would be eventually consistent
and could hide a just-submitted job from the pass that should start it); the waiting queue is
read lazily, page by page, only as far as the scheduler asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from job_queue.head_of_line import Blocking
from job_queue.models import Job
from job_queue.scheduler import ActiveJob, WaitingJob
from job_queue.scheduler.fair_share import FairShare, Standings
from job_queue.scheduler.forecast import RunHistory
from job_queue.scheduler.holds import HoldChange, QueueHold
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.snapshot import OutsideJob, WarmPool
from job_queue.store import codecs, table
from job_queue.store.accounts import ACCOUNT_PK, Accounts, accounts_from
from job_queue.store.hold_writes import changes_from, holds_from
from job_queue.store.notes import blocking_from
from job_queue.store.queue_reading import QueueReading
from job_queue.store.runs import RUNS_KEY, history_from
from job_queue.store.table import MULTI_TYPE, POOL_KEY, SEQ_KEY


@dataclass(frozen=True)
class Holders:
    """What holds instances — jobs and warm pools — and the version a capacity change must
    expect."""

    version: int
    jobs: tuple[ActiveJob, ...]
    attempt_names: Mapping[str, str]
    pools: tuple[WarmPool, ...] = ()  # warm pools, idle or being started on
    outside: tuple[OutsideJob, ...] = ()  # jobs on capped types the queue did not start
    shares_text: str | None = None  # quota shares set at run time (PUT /shares)
    shares_deployed: str | None = None  # the deployed shares they replaced
    shares_changed_by: str | None = None  # who set them, and when
    shares_changed_at: float | None = None
    plans: tuple[TrainingPlan, ...] = ()  # the training plans as last read
    waiting_count: int | None = None  # waiting jobs as the last sweep counted them
    waiting_counted_at: float | None = None
    lines: bool = False  # fair share was on once: jobs may wait in their submitters' lines
    weights_text: str | None = None  # fair-share weights set at run time (PUT /usage/weights)
    weights_deployed: str | None = None  # the deployed weights they replaced
    weights_changed_by: str | None = None  # who set them, and when
    weights_changed_at: float | None = None
    holds: tuple[QueueHold, ...] = ()  # an admin holds or drains the queue, or shares of it
    hold_changes: tuple[HoldChange, ...] = ()  # who held, drained or resumed what (latest last)
    blocking: Mapping[str, Blocking] = field(default_factory=dict)  # HeadOfLineLimits' counts
    dependents: bool = False  # a dependent job was queued once: passes read DEPENDENT
    usage_reported: str | None = None  # the last month whose usage report was sent
    budgets_text: str | None = None  # submitters' budgets set at run time (PUT /budgets)
    budgets_deployed: str | None = None  # the deployed budgets they replaced
    budgets_changed_by: str | None = None  # who set them, and when
    budgets_changed_at: float | None = None
    budgets_warned: Mapping[str, float] | None = None  # holder -> level warned of (0.8, 1.0)

    def idle_pools(self, now: float) -> tuple[WarmPool, ...]:
        """The warm pools that hold instances now: no job is being started on them, and
        they have not expired."""
        return tuple(p for p in self.pools if p.claimed_by is None and not p.expired(now))


class TableReads:
    """The reads of :class:`~job_queue.store.DynamoJobStore`."""

    def __init__(self, client, table_name: str, fair_share: FairShare | None = None) -> None:
        self._db = client
        self._table = table_name
        self._fair = fair_share

    # -- reads ---------------------------------------------------------------------------

    def get(self, name: str) -> Job | None:
        item = self._db.get_item(
            TableName=self._table, Key=table.ser(table.job_key(name)), ConsistentRead=True
        ).get("Item")
        return codecs.job_from_item(table.de(item)) if item else None

    def holders(self) -> Holders:
        """The jobs and warm pools holding instances now (strongly consistent)."""
        item = self._db.get_item(
            TableName=self._table, Key=table.ser(POOL_KEY), ConsistentRead=True
        ).get("Item")
        if item is None or "outside" not in item:
            self._create_holders(exists=item is not None)
            return self.holders()
        return _holders_from(table.de(item))

    def holders_and_history(self) -> tuple[Holders, RunHistory]:
        """The holders and the run-time history in one call, for a request that needs both
        (a submission: the pass, then the answer's expected start)."""
        keys = [table.ser(POOL_KEY), table.ser(RUNS_KEY)]
        result = self._db.batch_get_item(
            RequestItems={self._table: {"Keys": keys, "ConsistentRead": True}}
        )
        items = {}
        for raw in result.get("Responses", {}).get(self._table, []):
            item = table.de(raw)
            items[item["pk"]] = item
        holders = items.get(POOL_KEY["pk"])
        if result.get("UnprocessedKeys") or holders is None or "outside" not in holders:
            # Throttled, or a table without its holders item yet: one read each.
            return self.holders(), self.run_history()
        return _holders_from(holders), history_from(items.get(RUNS_KEY["pk"], {}))

    def _create_holders(self, exists: bool) -> None:
        """The holders item, empty; or, in a table from before warm pools or outside jobs,
        the maps it lacks."""
        try:
            if exists:
                self._db.update_item(
                    TableName=self._table,
                    Key=table.ser(POOL_KEY),
                    UpdateExpression="SET pools = if_not_exists(pools, :none), outside = :none",
                    ConditionExpression="attribute_not_exists(outside)",
                    ExpressionAttributeValues=table.ser({":none": {}}),
                )
            else:
                empty = {"version": 0, "active": {}, "pools": {}, "outside": {}}
                self._db.put_item(
                    TableName=self._table,
                    Item=table.ser({**POOL_KEY, **empty}),
                    ConditionExpression="attribute_not_exists(pk)",
                )
        except ClientError as exc:
            # (a failed condition: another invocation did it)
            if table.error_code(exc) != "ConditionalCheckFailedException":
                raise

    def waiting(
        self,
        instance_types: list[str],
        is_open: Callable[[str, str | None], bool] | None = None,
        shares: Sequence[str | None] = (None,),
        after: tuple[int, int] | None = None,
        multi: bool = True,
        lines: Mapping[str, Sequence[str]] | None = None,
    ) -> Iterator[WaitingJob]:
        """Waiting jobs of these instance types and shares in (priority, submission) order,
        read lazily page by page (``after``: only those behind the job of that priority and
        seq; ``lines``: the submitters' lines to read too, :attr:`Accounts.lines`); see
        :meth:`QueueReading.waiting`."""
        start = None if after is None else table.order_key(*after)
        reading = QueueReading(self._waiting_page, start, lines)
        return reading.waiting(instance_types, is_open, shares, multi)

    def reading(
        self, accounts: Accounts | None = None, standing: Standings | None = None
    ) -> QueueReading:
        """A reading of the waiting queue that several readers share (one pass and the
        answer that follows it): with ``accounts``, the submitters' lines too, in fair-share
        order by ``standing`` if given."""
        lines = accounts.lines if accounts else {}
        return QueueReading(self._waiting_page, lines=lines, standing=standing)

    def accounts(self, held: Holders) -> Accounts | None:
        """Fair share's accounts (one Query), if fair share is on or was (None: it never
        was, so no job waits in a line)."""
        if self._fair is None and not held.lines:
            return None
        query = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": ACCOUNT_PK},
        }
        items = [table.de(raw) for page in self._pages(query) for raw in page.get("Items", [])]
        return accounts_from(items, self._fair)

    def mark_lines(self) -> None:
        """Note in the holders item that jobs may wait in submitters' lines, before the first
        does: a queue that turns fair share off then still reads them."""
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(POOL_KEY),
            UpdateExpression="SET fair_lines = :yes, version = if_not_exists(version, :zero), "
            "active = if_not_exists(active, :none), pools = if_not_exists(pools, :none), "
            "outside = if_not_exists(outside, :none)",
            ExpressionAttributeValues=table.ser({":yes": True, ":zero": 0, ":none": {}}),
        )

    def depth(
        self, instance_types: list[str], share: str | None = None, accounts: Accounts | None = None
    ) -> int:
        """How many jobs (of a share) wait, counted without reading them (those in lines as
        their accounts count them)."""
        partitions = [table.partition(t, share) for t in [*instance_types, MULTI_TYPE]]
        # A metric: eventually consistent reads cost half.
        plain = sum(self._count_before(p, "~", consistent=False) for p in partitions)
        if accounts is None:
            return plain
        return plain + sum(accounts.in_line(p) for p in partitions)

    def next_seq(self) -> int:
        result = self._db.update_item(
            TableName=self._table,
            Key=table.ser(SEQ_KEY),
            UpdateExpression="ADD #v :one",
            ExpressionAttributeNames={"#v": "value"},
            ExpressionAttributeValues=table.ser({":one": 1}),
            ReturnValues="UPDATED_NEW",
        )
        return int(table.de(result["Attributes"])["value"])

    def _waiting_page(
        self, partition: str, after: str | None, start: dict | None, limit: int
    ) -> tuple[list[tuple[str, WaitingJob]], dict | None]:
        """One Query page of a waiting partition (behind sort key ``after``, from ``start``)."""
        condition, values = "pk = :pk", {":pk": partition}
        if after is not None:
            condition, values[":after"] = condition + " AND sk > :after", after
        params = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": table.ser(values),
            "ConsistentRead": True,
            "Limit": limit,
            **({"ExclusiveStartKey": start} if start else {}),
        }
        result = self._db.query(**params)
        items = [table.de(raw) for raw in result.get("Items", [])]
        entries = [(item["sk"], codecs.waiting_from_item(item)) for item in items]
        return entries, result.get("LastEvaluatedKey")

    def _count_before(self, partition: str, key: str, consistent: bool = True) -> int:
        query = {
            "KeyConditionExpression": "pk = :pk AND sk < :key",
            "ExpressionAttributeValues": {":pk": partition, ":key": key},
            "Select": "COUNT",
        }
        return sum(page["Count"] for page in self._pages(query, consistent=consistent))

    def _pages(self, query: dict, consistent: bool = True) -> Iterator[dict]:
        """The pages of a Query, following LastEvaluatedKey."""
        params = {
            "TableName": self._table,
            **query,
            "ExpressionAttributeValues": table.ser(query["ExpressionAttributeValues"]),
            "ConsistentRead": consistent,
        }
        while True:
            result = self._db.query(**params)
            yield result
            if not result.get("LastEvaluatedKey"):
                return
            params["ExclusiveStartKey"] = result["LastEvaluatedKey"]


def _holders_from(holders: Mapping) -> Holders:
    entries = holders["active"]
    return Holders(
        version=int(holders["version"]),
        jobs=tuple(codecs.active_from_entry(n, e) for n, e in sorted(entries.items())),
        attempt_names={name: e["attempt_name"] for name, e in entries.items()},
        pools=tuple(codecs.warm_pool_from_entry(n, e) for n, e in sorted(holders["pools"].items())),
        outside=tuple(
            codecs.outside_from_entry(n, e) for n, e in sorted(holders["outside"].items())
        ),
        shares_text=holders.get("shares"),
        shares_deployed=holders.get("shares_deployed"),
        shares_changed_by=holders.get("shares_changed_by"),
        shares_changed_at=holders.get("shares_changed_at"),
        plans=codecs.plans_from(holders.get("plans", {})),
        waiting_count=holders.get("waiting_count"),
        waiting_counted_at=holders.get("waiting_counted_at"),
        lines=bool(holders.get("fair_lines")),
        weights_text=holders.get("weights"),
        weights_deployed=holders.get("weights_deployed"),
        weights_changed_by=holders.get("weights_changed_by"),
        weights_changed_at=holders.get("weights_changed_at"),
        holds=holds_from(holders.get("holds", ())),
        hold_changes=changes_from(holders.get("hold_changes", ())),
        blocking=blocking_from(holders.get("blocking", {})),
        dependents=bool(holders.get("dependents")),
        usage_reported=holders.get("usage_reported"),
        budgets_text=holders.get("budgets"),
        budgets_deployed=holders.get("budgets_deployed"),
        budgets_changed_by=holders.get("budgets_changed_by"),
        budgets_changed_at=holders.get("budgets_changed_at"),
        budgets_warned=holders.get("budgets_warned"),
    )
