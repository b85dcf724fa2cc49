"""The queue in one DynamoDB table.

Items (``pk`` / ``sk``):

* ``JOB#<name>`` / ``JOB`` — a job: its request, state, priority and attempt history.
* ``WAITING#<instance type>`` / ``<order key>`` — one entry per waiting job, in a partition
  per instance type (``WAITING#*`` for jobs that need several types), and with quota shares
  per share too (``WAITING#<instance type>#<share>``). The sort key orders it: priority
  high to low, then submission order. A strongly consistent Query reads a queue in order
  without a Scan, and only as far as the scheduler needs.
* ``POOL`` / ``POOL`` — the jobs that hold instances, with a version number. Every change
  of what holds capacity is a transaction that includes this item. Changes a stale plan
  could misuse (claiming instances, preempting, a new priority) check and bump the version,
  so two overlapping scheduling passes cannot both spend the same free instance; changes
  that only free instances or mark a start do not, since a plan that missed them is merely
  cautious.
* ``SEQ`` / ``SEQ`` — the submission counter (FIFO order within a priority).

Every transition is a conditional write on the expected state; a lost race raises
:class:`~job_queue.errors.StaleState`.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from job_queue.errors import StaleState
from job_queue.models import Attempt, Demand, Job, JobState
from job_queue.request import MAX_PRIORITY
from job_queue.scheduler import ActiveJob, WaitingJob

POOL_KEY = {"pk": "POOL", "sk": "POOL"}
SEQ_KEY = {"pk": "SEQ", "sk": "SEQ"}
MULTI_TYPE = "*"
_FIRST_PAGE = 8  # waiting entries per Query; doubles while the scheduler reads on
_MAX_PAGE = 256

# The table as the template declares it (tests check the two agree).
KEY_SCHEMA = [
    {"AttributeName": "pk", "KeyType": "HASH"},
    {"AttributeName": "sk", "KeyType": "RANGE"},
]
ATTRIBUTE_DEFINITIONS = [
    {"AttributeName": "pk", "AttributeType": "S"},
    {"AttributeName": "sk", "AttributeType": "S"},
]
TTL_ATTRIBUTE = "expires_at"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


@dataclass(frozen=True)
class Pool:
    """The jobs that hold instances, and the version a capacity change must expect."""

    version: int
    jobs: tuple[ActiveJob, ...]
    attempt_names: Mapping[str, str]
    shares_text: str | None = None  # quota shares set at run time (PUT /shares)
    shares_deployed: str | None = None  # the deployed shares they replaced


def order_key(priority: int, seq: int) -> str:
    """Sort key of a waiting entry: higher priority first, then submission order."""
    return f"{MAX_PRIORITY - priority:05d}#{seq:012d}"


def queue_partition(demand: Demand, share: str | None = None) -> str:
    """The waiting partition of a job: by instance type (``*``: several), and share."""
    return partition(next(iter(demand)) if len(demand) == 1 else MULTI_TYPE, share)


def partition(itype: str, share: str | None = None) -> str:
    """The waiting partition of ``itype`` (or ``*``) and ``share``."""
    return f"WAITING#{itype}" if share is None else f"WAITING#{itype}#{share}"


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
            TableName=self._table, Key=_ser(_job_key(name)), ConsistentRead=True
        ).get("Item")
        return _job_from_item(_de(item)) if item else None

    def pool(self) -> Pool:
        """The jobs holding instances now (strongly consistent)."""
        item = self._db.get_item(TableName=self._table, Key=_ser(POOL_KEY), ConsistentRead=True)
        if "Item" not in item:
            try:
                self._db.put_item(
                    TableName=self._table,
                    Item=_ser({**POOL_KEY, "version": 0, "active": {}}),
                    ConditionExpression="attribute_not_exists(pk)",
                )
            except ClientError as exc:
                if _code(exc) != "ConditionalCheckFailedException":
                    raise
            return self.pool()
        pool = _de(item["Item"])
        entries = pool["active"]
        return Pool(
            version=int(pool["version"]),
            jobs=tuple(
                ActiveJob(
                    name=name,
                    priority=int(e["priority"]),
                    seq=int(e["seq"]),
                    demand=_demand(e["demand"]),
                    state=JobState(e["state"]),
                    started_at=float(e["started_at"]),
                    max_runtime=_optional_float(e.get("max_runtime")),
                    share=e.get("share"),
                )
                for name, e in sorted(entries.items())
            ),
            attempt_names={name: e["attempt_name"] for name, e in entries.items()},
            shares_text=pool.get("shares"),
            shares_deployed=pool.get("shares_deployed"),
        )

    def set_shares(self, shares_text: str, deployed: str, pool_version: int) -> None:
        """Replace the quota shares at run time (until a deployment changes ``deployed``).
        Bumps the pool version: a pass planned with the old shares must plan again."""
        self._transact(
            _update(
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
            self._read_partition(partition(itype, share), lambda t=itype, s=share: wanted(t, s))
            for itype, share in partitions
        ]
        for _, job in heapq.merge(*streams, key=lambda pair: pair[0]):
            yield job

    def position(self, job: Job) -> int:
        """1-based place of a waiting job: 1 + the waiting jobs ahead of it that need one of
        its instance types, of its share if it has one (as
        :func:`job_queue.scheduler.positions` counts)."""
        key = order_key(job.priority, job.seq)
        ahead = sum(self._count_before(partition(t, job.share), key) for t in job.demand)
        # Jobs needing several types are few; read them and keep those that compete.
        multi = self._read_partition(partition(MULTI_TYPE, job.share), lambda: True)
        for sort_key, other in multi:
            if sort_key >= key:
                break
            ahead += bool(set(other.demand) & set(job.demand))
        return ahead + 1

    def depth(self, instance_types: list[str], share: str | None = None) -> int:
        """How many jobs (of a share) wait, counted without reading them."""
        partitions = [partition(t, share) for t in [*instance_types, MULTI_TYPE]]
        # A metric: eventually consistent reads cost half.
        return sum(self._count_before(p, "~", consistent=False) for p in partitions)

    def next_seq(self) -> int:
        result = self._db.update_item(
            TableName=self._table,
            Key=_ser(SEQ_KEY),
            UpdateExpression="ADD #v :one",
            ExpressionAttributeNames={"#v": "value"},
            ExpressionAttributeValues=_ser({":one": 1}),
            ReturnValues="UPDATED_NEW",
        )
        return int(_de(result["Attributes"])["value"])

    # -- transitions ---------------------------------------------------------------------

    def add(self, job: Job) -> bool:
        """Queue a new job. False if a job of that name already exists."""
        try:
            self._transact(
                _put(_job_to_item(job), "attribute_not_exists(pk)"),
                _put(_waiting_item(job)),
            )
        except StaleState:
            return False
        return True

    def claim(self, job: WaitingJob, sagemaker_name: str, pool_version: int, now: float):
        """waiting → starting: take the job's instances, if the pool is as the plan saw it."""
        entry = _pool_entry(job, JobState.STARTING, now, sagemaker_name)
        self._transact(
            _update(
                _job_key(job.name),
                "SET #state = :starting, attempt_name = :an, updated_at = :now",
                "#state IN (:pending, :preempted)",
                {
                    ":starting": "starting",
                    ":pending": "pending",
                    ":preempted": "preempted",
                    ":an": sagemaker_name,
                    ":now": now,
                },
            ),
            _delete(
                {
                    "pk": queue_partition(job.demand, job.share),
                    "sk": order_key(job.priority, job.seq),
                },
                "attribute_exists(pk)",
            ),
            _update(
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
            _update(
                _job_key(job.name),
                "SET #state = :running, attempts = :attempts, first_started_at = "
                "if_not_exists(first_started_at, :now), updated_at = :now",
                "#state = :starting AND attempt_name = :an",
                {
                    ":running": "running",
                    ":starting": "starting",
                    ":an": attempt.sagemaker_job_name,
                    ":attempts": _attempts_value((*job.attempts, attempt)),
                    ":now": attempt.started_at,
                },
            ),
            # No version bump: a pass that still sees it starting only preempts less.
            _update_pool_entry(
                job.name, attempt.sagemaker_job_name, "state", "running", bump=False
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
        update = "SET #state = :to, updated_at = :now"
        if preempted_by:
            update += ", preempted_by = :by"
            values[":by"] = preempted_by
        self._transact(
            _update(_job_key(job.name), update, "#state = :from AND attempt_name = :an", values),
            _update_pool_entry(job.name, job.attempt_name, "state", to_state.value, pool_version),
        )

    def settle(self, job: Job, to_state: JobState, now: float, **changes) -> None:
        """An active job's SageMaker job ended: release its instances.

        ``to_state`` PENDING or PREEMPTED puts the job back in the queue at its original place.
        ``changes`` are other job fields to set (attempts, failure_reason, not_before ...).
        """
        fields = {"state": to_state.value, "updated_at": now, **changes}
        if "attempts" in fields:
            fields["attempts"] = _attempts_value(fields["attempts"])
        if to_state.is_finished:
            fields.update(ended_at=now, **{TTL_ATTRIBUTE: int(now + self._retention)})
        actions = [
            _set_fields(
                _job_key(job.name),
                fields,
                "#state = :expected_state AND attempt_name = :expected_an",
                {":expected_state": job.state.value, ":expected_an": job.attempt_name},
                remove=("preempted_by",) if to_state.is_waiting else (),
            ),
            _update(
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
            actions.append(_put(_waiting_item(waiting)))
        self._transact(*actions)

    def cancel_waiting(self, job: Job, now: float) -> None:
        """pending or preempted → cancelled: the job leaves the queue."""
        self._transact(
            _set_fields(
                _job_key(job.name),
                {
                    "state": "cancelled",
                    "updated_at": now,
                    "ended_at": now,
                    "expires_at": int(now + self._retention),
                },
                "#state = :expected_state",
                {":expected_state": job.state.value},
            ),
            _delete(_waiting_key(job), "attribute_exists(pk)"),
        )

    def change_priority(self, job: Job, priority: int, now: float) -> None:
        """Set a waiting or active job's priority; a waiting job keeps its submission order."""
        condition = "#state = :expected_state AND priority = :old"
        expected = {":expected_state": job.state.value, ":old": job.priority}
        update = _set_fields(
            _job_key(job.name), {"priority": priority, "updated_at": now}, condition, expected
        )
        if job.state.is_waiting:
            moved = replace(job, priority=priority)
            self._transact(
                update,
                _delete(_waiting_key(job), "attribute_exists(pk)"),
                _put(_waiting_item(moved)),
            )
        else:
            self._transact(
                update,
                _update_pool_entry(job.name, job.attempt_name, "priority", priority),
            )

    def bulk_load(self, jobs: list[Job]) -> None:
        """Write waiting jobs without transactions: for benchmarks and tests that need a deep
        queue fast. Not for live use (it checks nothing)."""
        items = [item for job in jobs for item in (_job_to_item(job), _waiting_item(job))]
        for start in range(0, len(items), 25):
            batch = [{"PutRequest": {"Item": _ser(item)}} for item in items[start : start + 25]]
            pending = {self._table: batch}
            while pending:
                pending = self._db.batch_write_item(RequestItems=pending).get("UnprocessedItems")

    # -- internals -------------------------------------------------------------------------

    def _read_partition(self, partition: str, wanted: Callable[[], bool]):
        start_key = None
        page = _FIRST_PAGE
        while wanted():
            params = {
                "TableName": self._table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": _ser({":pk": partition}),
                "ConsistentRead": True,
                "Limit": page,
            }
            if start_key:
                params["ExclusiveStartKey"] = start_key
            result = self._db.query(**params)
            for raw in result.get("Items", []):
                item = _de(raw)
                yield (
                    item["sk"],
                    WaitingJob(
                        name=item["name"],
                        priority=int(item["priority"]),
                        seq=int(item["seq"]),
                        demand=_demand(item["demand"]),
                        not_before=float(item.get("not_before", 0)),
                        submitted_at=float(item.get("submitted_at", 0)),
                        state=JobState(item.get("state", "pending")),
                        max_runtime=_optional_float(item.get("max_runtime")),
                        share=item.get("share"),
                    ),
                )
            start_key = result.get("LastEvaluatedKey")
            if not start_key:
                return
            page = min(page * 2, _MAX_PAGE)

    def _count_before(self, partition: str, key: str, consistent: bool = True) -> int:
        count, start_key = 0, None
        while True:
            params = {
                "TableName": self._table,
                "KeyConditionExpression": "pk = :pk AND sk < :key",
                "ExpressionAttributeValues": _ser({":pk": partition, ":key": key}),
                "Select": "COUNT",
                "ConsistentRead": consistent,
            }
            if start_key:
                params["ExclusiveStartKey"] = start_key
            result = self._db.query(**params)
            count += result["Count"]
            start_key = result.get("LastEvaluatedKey")
            if not start_key:
                return count

    def _transact(self, *actions: dict) -> None:
        for action in actions:
            action[next(iter(action))]["TableName"] = self._table
        try:
            self._db.transact_write_items(TransactItems=list(actions))
        except ClientError as exc:
            if _code(exc) in ("TransactionCanceledException", "ConditionalCheckFailedException"):
                raise StaleState(str(exc)) from exc
            raise


# -- item building -----------------------------------------------------------------------


def _job_key(name: str) -> dict:
    return {"pk": f"JOB#{name}", "sk": "JOB"}


def _waiting_key(job: Job) -> dict:
    return {"pk": queue_partition(job.demand, job.share), "sk": order_key(job.priority, job.seq)}


def _waiting_item(job: Job) -> dict:
    return {
        **_waiting_key(job),
        "name": job.name,
        "priority": job.priority,
        "seq": job.seq,
        "demand": dict(job.demand),
        "not_before": job.not_before,
        "submitted_at": job.submitted_at,
        "state": job.state.value,
        **({"max_runtime": job.max_runtime} if job.max_runtime is not None else {}),
        **({"share": job.share} if job.share is not None else {}),
    }


def _pool_entry(job: WaitingJob, state: JobState, started_at, attempt_name) -> dict:
    return {
        "priority": job.priority,
        "seq": job.seq,
        "demand": dict(job.demand),
        "state": state.value,
        "started_at": started_at,
        "attempt_name": attempt_name,
        **({"max_runtime": job.max_runtime} if job.max_runtime is not None else {}),
        **({"share": job.share} if job.share is not None else {}),
    }


def _optional_float(value) -> float | None:
    return None if value is None else float(value)


def _job_to_item(job: Job) -> dict:
    item = {
        **_job_key(job.name),
        "name": job.name,
        "state": job.state.value,
        "priority": job.priority,
        "seq": job.seq,
        "demand": dict(job.demand),
        "submitted_at": job.submitted_at,
        "request": json.dumps(job.request, sort_keys=True),
        "request_hash": job.request_hash,
        "attempts": _attempts_value(job.attempts),
        "not_before": job.not_before,
        "start_failures": job.start_failures,
    }
    optional = {
        "attempt_name": job.attempt_name,
        "preempted_by": job.preempted_by,
        "last_error": job.last_error,
        "failure_reason": job.failure_reason,
        "first_started_at": job.first_started_at,
        "ended_at": job.ended_at,
        "share": job.share,
    }
    item.update({k: v for k, v in optional.items() if v is not None})
    return item


def _job_from_item(item: dict) -> Job:
    def number(key):
        return float(item[key]) if item.get(key) is not None else None

    return Job(
        name=item["name"],
        priority=int(item["priority"]),
        seq=int(item["seq"]),
        demand=_demand(item["demand"]),
        state=JobState(item["state"]),
        submitted_at=float(item["submitted_at"]),
        request=json.loads(item["request"]),
        request_hash=item.get("request_hash", ""),
        attempt_name=item.get("attempt_name"),
        attempts=tuple(
            Attempt(
                number=int(a["number"]),
                sagemaker_job_name=a["sagemaker_job_name"],
                started_at=float(a["started_at"]),
                ended_at=float(a["ended_at"]) if a.get("ended_at") is not None else None,
                outcome=a.get("outcome"),
                failure_reason=a.get("failure_reason"),
                preempted_by=a.get("preempted_by"),
            )
            for a in item.get("attempts", [])
        ),
        preempted_by=item.get("preempted_by"),
        not_before=number("not_before") or 0.0,
        start_failures=int(item.get("start_failures", 0)),
        last_error=item.get("last_error"),
        failure_reason=item.get("failure_reason"),
        first_started_at=number("first_started_at"),
        ended_at=number("ended_at"),
        share=item.get("share"),
    )


def _attempts_value(attempts) -> list[dict]:
    return [{k: v for k, v in a.__dict__.items() if v is not None} for a in attempts]


def _demand(value: Mapping) -> dict[str, int]:
    return {itype: int(count) for itype, count in value.items()}


def _put(item: dict, condition: str | None = None) -> dict:
    action = {"Item": _ser(item)}
    if condition:
        action["ConditionExpression"] = condition
    return {"Put": action}


def _delete(key: dict, condition: str) -> dict:
    return {"Delete": {"Key": _ser(key), "ConditionExpression": condition}}


def _update(key: dict, update: str, condition: str, values: dict, names: dict | None = None):
    action = {
        "Key": _ser(key),
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeValues": _ser(values),
    }
    all_names = {**(names or {})}
    if "#state" in update or "#state" in condition:
        all_names["#state"] = "state"
    if all_names:
        action["ExpressionAttributeNames"] = all_names
    return {"Update": action}


def _set_fields(key, fields: dict, condition: str, expected: dict, remove=()) -> dict:
    names = {f"#f{i}": name for i, name in enumerate(fields)}
    values = {f":f{i}": value for i, value in enumerate(fields.values())}
    update = "SET " + ", ".join(f"#f{i} = :f{i}" for i in range(len(fields)))
    if remove:
        update += " REMOVE " + ", ".join(remove)
    return _update(key, update, condition, {**values, **expected}, names)


def _update_pool_entry(
    name, attempt_name, field, value, pool_version=None, bump: bool = True
) -> dict:
    """Set one field of a pool entry, bumping the pool version (checked if given)."""
    condition = "active.#name.attempt_name = :an"
    values = {":value": value, ":an": attempt_name}
    if not bump:
        version_update = ""
    elif pool_version is None:
        version_update = ", version = version + :one"
        values[":one"] = 1
    else:
        version_update = ", version = :next"
        condition += " AND version = :version"
        values.update({":next": pool_version + 1, ":version": pool_version})
    return _update(
        POOL_KEY,
        f"SET active.#name.#field = :value{version_update}",
        condition,
        values,
        {"#name": name, "#field": field},
    )


def _ser(value: dict) -> dict:
    return {k: _serializer.serialize(_to_dynamo(v)) for k, v in value.items()}


def _de(item: dict) -> dict:
    return {k: _from_dynamo(_deserializer.deserialize(v)) for k, v in item.items()}


def _to_dynamo(value):
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_dynamo(v) for v in value]
    return value


def _from_dynamo(value):
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    return value


def _code(exc: ClientError) -> str:
    return exc.response.get("Error", {}).get("Code", "")
