"""The queue in one DynamoDB table: reads in queue order and conditional transitions.

The table's keys and write expressions are :mod:`job_queue.store.table`'s, its items'
codecs :mod:`job_queue.store.codecs`'. Every transition is a conditional write on the
expected state; a lost race raises :class:`~job_queue.errors.StaleState`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from botocore.exceptions import ClientError

from job_queue.errors import StaleState
from job_queue.models import Attempt, Job, JobState
from job_queue.scheduler import ActiveJob, WaitingJob
from job_queue.store import codecs, table
from job_queue.store.table import MULTI_TYPE, POOL_KEY, SEQ_KEY, TTL_ATTRIBUTE

_FIRST_PAGE = 8  # waiting entries per Query; doubles while the scheduler reads on
_MAX_PAGE = 256

_PENDING, _PREEMPTED = JobState.PENDING.value, JobState.PREEMPTED.value


@dataclass(frozen=True)
class Pool:
    """The jobs that hold instances, and the version a capacity change must expect."""

    version: int
    jobs: tuple[ActiveJob, ...]
    attempt_names: Mapping[str, str]
    shares_text: str | None = None  # quota shares set at run time (PUT /shares)
    shares_deployed: str | None = None  # the deployed shares they replaced


class DynamoJobStore:
    """Reads and conditional writes of the queue table.

    Example::

        store = DynamoJobStore(boto3.client("dynamodb"), "training-job-queue")
        pool = store.pool()
        for job in store.waiting(["ml.p5.48xlarge"]):
            ...
    """

    def __init__(self, client, table_name: str, retention_seconds: float = 30 * 86400) -> None:
        self._db = client
        self._table = table_name
        self._retention = retention_seconds

    # -- reads ---------------------------------------------------------------------------

    def get(self, name: str) -> Job | None:
        item = self._db.get_item(
            TableName=self._table, Key=table.ser(table.job_key(name)), ConsistentRead=True
        ).get("Item")
        return codecs.job_from_item(table.de(item)) if item else None

    def pool(self) -> Pool:
        """The jobs holding instances now (strongly consistent)."""
        item = self._db.get_item(
            TableName=self._table, Key=table.ser(POOL_KEY), ConsistentRead=True
        )
        if "Item" not in item:
            try:
                self._db.put_item(
                    TableName=self._table,
                    Item=table.ser({**POOL_KEY, "version": 0, "active": {}}),
                    ConditionExpression="attribute_not_exists(pk)",
                )
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
            return self.pool()
        pool = table.de(item["Item"])
        entries = pool["active"]
        return Pool(
            version=int(pool["version"]),
            jobs=tuple(codecs.active_from_entry(n, e) for n, e in sorted(entries.items())),
            attempt_names={name: e["attempt_name"] for name, e in entries.items()},
            shares_text=pool.get("shares"),
            shares_deployed=pool.get("shares_deployed"),
        )

    def set_shares(self, shares_text: str, deployed: str, pool_version: int) -> None:
        """Replace the quota shares at run time (until a deployment changes ``deployed``).
        Bumps the pool version: a pass planned with the old shares must plan again."""
        self._transact(
            table.update(
                POOL_KEY,
                "SET shares = :shares, shares_deployed = :deployed, version = :next",
                "version = :version",
                {
                    ":shares": shares_text,
                    ":deployed": deployed,
                    ":next": pool_version + 1,
                    ":version": pool_version,
                },
            )
        )

    def waiting(
        self,
        instance_types: list[str],
        is_open: Callable[[str, str | None], bool] | None = None,
        shares: Sequence[str | None] = (None,),
    ) -> Iterator[WaitingJob]:
        """Waiting jobs of these instance types and shares (None: jobs without a share) in
        queue order, read lazily page by page.

        ``is_open(instance type or "*", share)`` (the scheduler's) tells which partitions
        are still worth reading: a closed one is read no further.
        """
        partitions = [(t, s) for s in shares for t in [*instance_types, MULTI_TYPE]]

        def wanted(itype: str, share: str | None) -> bool:
            return is_open is None or is_open(itype, share)

        streams = [
            self._read_partition(
                table.partition(itype, share), lambda t=itype, s=share: wanted(t, s)
            )
            for itype, share in partitions
        ]
        for _, job in heapq.merge(*streams, key=lambda pair: pair[0]):
            yield job

    def position(self, job: Job) -> int:
        """1-based place of a waiting job: 1 + the waiting jobs ahead of it that need one of
        its instance types, of its share if it has one (as
        :func:`job_queue.scheduler.positions` counts)."""
        key = table.order_key(job.priority, job.seq)
        ahead = sum(self._count_before(table.partition(t, job.share), key) for t in job.demand)
        # Jobs needing several types are few; read them and keep those that compete.
        multi = self._read_partition(table.partition(MULTI_TYPE, job.share), lambda: True)
        for sort_key, other in multi:
            if sort_key >= key:
                break
            ahead += bool(set(other.demand) & set(job.demand))
        return ahead + 1

    def depth(self, instance_types: list[str], share: str | None = None) -> int:
        """How many jobs (of a share) wait, counted without reading them."""
        partitions = [table.partition(t, share) for t in [*instance_types, MULTI_TYPE]]
        # A metric: eventually consistent reads cost half.
        return sum(self._count_before(p, "~", consistent=False) for p in partitions)

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

    # -- transitions ---------------------------------------------------------------------

    def add(self, job: Job) -> bool:
        """Queue a new job. False if a job of that name already exists."""
        try:
            self._transact(
                table.put(codecs.job_item(job), "attribute_not_exists(pk)"),
                table.put(codecs.waiting_item(job)),
            )
        except StaleState:
            return False
        return True

    def claim(self, job: WaitingJob, sagemaker_name: str, pool_version: int, now: float):
        """waiting → starting: take the job's instances, if the pool is as the plan saw it."""
        entry = codecs.pool_entry(job, JobState.STARTING, now, sagemaker_name)
        self._transact(
            table.update(
                table.job_key(job.name),
                "SET #state = :starting, attempt_name = :an, updated_at = :now",
                "#state IN (:pending, :preempted)",
                {
                    ":starting": JobState.STARTING.value,
                    ":pending": _PENDING,
                    ":preempted": _PREEMPTED,
                    ":an": sagemaker_name,
                    ":now": now,
                },
            ),
            table.delete(_waiting_key(job), "attribute_exists(pk)"),
            table.update(
                POOL_KEY,
                "SET active.#name = :entry, version = :next",
                "version = :version",
                {":entry": entry, ":next": pool_version + 1, ":version": pool_version},
                {"#name": job.name},
            ),
        )

    def mark_running(self, job: Job, attempt: Attempt) -> None:
        """starting → running once SageMaker accepted the job."""
        self._transact(
            table.update(
                table.job_key(job.name),
                "SET #state = :running, attempts = :attempts, first_started_at = "
                "if_not_exists(first_started_at, :now), updated_at = :now",
                "#state = :starting AND attempt_name = :an",
                {
                    ":running": JobState.RUNNING.value,
                    ":starting": JobState.STARTING.value,
                    ":an": attempt.sagemaker_job_name,
                    ":attempts": codecs.attempts_value((*job.attempts, attempt)),
                    ":now": attempt.started_at,
                },
            ),
            # No version bump: a pass that still sees it starting only preempts less.
            table.update_pool_entry(
                job.name, attempt.sagemaker_job_name, "state", JobState.RUNNING.value, bump=False
            ),
        )

    def begin_stop(
        self,
        job: Job,
        to_state: JobState,
        now: float,
        preempted_by: str | None = None,
        pool_version: int | None = None,
    ) -> None:
        """running (or starting, or preempting) → preempting / cancelling.

        A preemption passes the pool version its plan saw; a cancel does not need one.
        """
        values = {
            ":to": to_state.value,
            ":from": job.state.value,
            ":an": job.attempt_name,
            ":now": now,
        }
        expression = "SET #state = :to, updated_at = :now"
        if preempted_by:
            expression += ", preempted_by = :by"
            values[":by"] = preempted_by
        self._transact(
            table.update(
                table.job_key(job.name), expression, "#state = :from AND attempt_name = :an", values
            ),
            table.update_pool_entry(
                job.name, job.attempt_name, "state", to_state.value, pool_version
            ),
        )

    def settle(self, job: Job, to_state: JobState, now: float, **changes) -> None:
        """An active job's SageMaker job ended: release its instances.

        ``to_state`` PENDING or PREEMPTED puts the job back in the queue at its original place.
        ``changes`` are other job fields to set (attempts, failure_reason, not_before ...).
        """
        fields = {"state": to_state.value, "updated_at": now, **changes}
        if "attempts" in fields:
            fields["attempts"] = codecs.attempts_value(fields["attempts"])
        if to_state.is_finished:
            fields.update(ended_at=now, **{TTL_ATTRIBUTE: int(now + self._retention)})
        actions = [
            table.set_fields(
                table.job_key(job.name),
                fields,
                "#state = :expected_state AND attempt_name = :expected_an",
                {":expected_state": job.state.value, ":expected_an": job.attempt_name},
                remove=("preempted_by",) if to_state.is_waiting else (),
            ),
            table.update(
                POOL_KEY,
                # No version bump: freeing instances cannot overrun capacity; a pass that
                # still counts them only starts less, and this settle's own pass follows.
                "REMOVE active.#name",
                "active.#name.attempt_name = :an",
                {":an": job.attempt_name},
                {"#name": job.name},
            ),
        ]
        if to_state.is_waiting:
            waiting = replace(job, state=to_state, not_before=changes.get("not_before", 0.0))
            actions.append(table.put(codecs.waiting_item(waiting)))
        self._transact(*actions)

    def cancel_waiting(self, job: Job, now: float) -> None:
        """pending or preempted → cancelled: the job leaves the queue."""
        self._transact(
            table.set_fields(
                table.job_key(job.name),
                {
                    "state": JobState.CANCELLED.value,
                    "updated_at": now,
                    "ended_at": now,
                    TTL_ATTRIBUTE: int(now + self._retention),
                },
                "#state = :expected_state",
                {":expected_state": job.state.value},
            ),
            table.delete(_waiting_key(job), "attribute_exists(pk)"),
        )

    def change_priority(self, job: Job, priority: int, now: float) -> None:
        """Set a waiting or active job's priority; a waiting job keeps its submission order."""
        condition = "#state = :expected_state AND priority = :old"
        expected = {":expected_state": job.state.value, ":old": job.priority}
        new_priority = table.set_fields(
            table.job_key(job.name), {"priority": priority, "updated_at": now}, condition, expected
        )
        if job.state.is_waiting:
            moved = replace(job, priority=priority)
            self._transact(
                new_priority,
                table.delete(_waiting_key(job), "attribute_exists(pk)"),
                table.put(codecs.waiting_item(moved)),
            )
        else:
            self._transact(
                new_priority,
                table.update_pool_entry(job.name, job.attempt_name, "priority", priority),
            )

    def bulk_load(self, jobs: list[Job]) -> None:
        """Write waiting jobs without transactions: for benchmarks and tests that need a deep
        queue fast. Not for live use (it checks nothing)."""
        items = [item for job in jobs for item in (codecs.job_item(job), codecs.waiting_item(job))]
        for start in range(0, len(items), 25):
            chunk = items[start : start + 25]
            batch = [{"PutRequest": {"Item": table.ser(item)}} for item in chunk]
            pending = {self._table: batch}
            while pending:
                pending = self._db.batch_write_item(RequestItems=pending).get("UnprocessedItems")

    # -- internals -------------------------------------------------------------------------

    def _read_partition(self, partition: str, wanted: Callable[[], bool]):
        """(sort key, waiting job) of a partition in order, a page at a time while
        ``wanted()``; pages grow so that a pass that reads on pays few calls."""
        query = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": partition},
        }
        for page in self._pages(query, wanted, first_page=_FIRST_PAGE):
            for raw in page.get("Items", []):
                item = table.de(raw)
                yield item["sk"], codecs.waiting_from_item(item)

    def _count_before(self, partition: str, key: str, consistent: bool = True) -> int:
        query = {
            "KeyConditionExpression": "pk = :pk AND sk < :key",
            "ExpressionAttributeValues": {":pk": partition, ":key": key},
            "Select": "COUNT",
        }
        return sum(page["Count"] for page in self._pages(query, consistent=consistent))

    def _pages(
        self,
        query: dict,
        wanted: Callable[[], bool] = lambda: True,
        first_page: int | None = None,
        consistent: bool = True,
    ) -> Iterator[dict]:
        """The pages of a Query, following LastEvaluatedKey while ``wanted()``; with
        ``first_page``, pages of that many items, doubling up to 256."""
        params = {
            "TableName": self._table,
            **query,
            "ExpressionAttributeValues": table.ser(query["ExpressionAttributeValues"]),
            "ConsistentRead": consistent,
        }
        limit = first_page
        while wanted():
            if limit:
                params["Limit"] = limit
            result = self._db.query(**params)
            yield result
            if not result.get("LastEvaluatedKey"):
                return
            params["ExclusiveStartKey"] = result["LastEvaluatedKey"]
            limit = limit and min(limit * 2, _MAX_PAGE)

    def _transact(self, *actions: dict) -> None:
        for action in actions:
            action[next(iter(action))]["TableName"] = self._table
        try:
            self._db.transact_write_items(TransactItems=list(actions))
        except ClientError as exc:
            if _code(exc) in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                raise StaleState(str(exc)) from exc
            raise


def _waiting_key(job: Job | WaitingJob) -> dict:
    return table.waiting_key(job.demand, job.share, job.priority, job.seq)


def _code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")
