"""The table's design: its keys, the waiting queue's sort order, and the write expressions.

Items (``pk`` / ``sk``):

* ``JOB#<name>`` / ``JOB`` — a job: its request, state, priority and attempt history.
* ``WAITING#<instance type>`` / ``<order key>`` — one entry per waiting job, in a partition
  per instance type (``WAITING#*`` for jobs that need several types), and with quota shares
  per share too (``WAITING#<instance type>#<share>``). The sort key orders it: priority
  high to low, then submission order. A strongly consistent Query reads a queue in order
  without a Scan, and only as far as the scheduler needs. With fair share on, each
  submitter's jobs wait in a line of their own (``<partition>@<submitter>``), so that a
  pass reads the head of each line, not the whole queue.
* ``DEPENDENT`` / ``<order key>`` — the entry of a waiting job whose dependency does not hold
  yet (:mod:`~job_queue.scheduler.dependencies`): out of line, read whole by every pass of
  a queue that ever had one, and moved to its partition (same order key) once it holds.
* ``ACCOUNT`` / ``<submitter>`` (or ``#share:<name>``) — fair share's accounts
  (:mod:`~job_queue.store.accounts`): how many jobs wait in each of the submitter's lines,
  and the decayed usage of the work that ended, both kept with ADD in the transactions that
  queue, start and end jobs.
* ``POOL`` / ``POOL`` — what holds instances, with a version number: the jobs (``active``)
  and the warm pools SageMaker kept of their instances (``pools``, by the SageMaker job that
  left each). Every change of what holds capacity is a transaction that includes this item.
  Changes a stale plan could misuse (claiming instances, preempting, a new priority, a pool
  that is idle again) check or bump the version, so two overlapping scheduling passes
  cannot both spend the same free instance; changes that only free instances or mark a
  start do not, since a plan that missed them is merely cautious.
* ``SEQ`` / ``SEQ`` — the submission counter (FIFO order within a priority).
* ``RUNS`` / ``RUNS`` — how long completed jobs ran, per instance type and priority
  (:mod:`~job_queue.store.runs`), for expected start times.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from job_queue.models import MAX_PRIORITY, Demand

if TYPE_CHECKING:
    from job_queue.models import Job
    from job_queue.scheduler import WaitingJob

POOL_KEY = {"pk": "POOL", "sk": "POOL"}
SEQ_KEY = {"pk": "SEQ", "sk": "SEQ"}
MULTI_TYPE = "*"  # the waiting partition of jobs that need several capped types
UNCAPPED = "-"  # of jobs that need no capped instances (they start at once)
DEPENDENT = "DEPENDENT"  # the entries of jobs out of line until their dependency holds

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


# -- keys -----------------------------------------------------------------------------------


def job_key(name: str) -> dict:
    return {"pk": f"JOB#{name}", "sk": "JOB"}


def order_key(priority: int, seq: int) -> str:
    """Sort key of a waiting entry: higher priority first, then submission order."""
    return f"{MAX_PRIORITY - priority:05d}#{seq:012d}"


def partition(itype: str, share: str | None = None) -> str:
    """The waiting partition of ``itype`` (or ``*``) and ``share``."""
    return f"WAITING#{itype}" if share is None else f"WAITING#{itype}#{share}"


def queue_partition(demand: Demand, share: str | None = None) -> str:
    """The waiting partition of a job: by instance type (``*``: several; ``-``: none that
    is capped), and share."""
    if not demand:
        return partition(UNCAPPED, share)
    return partition(next(iter(demand)) if len(demand) == 1 else MULTI_TYPE, share)


def line_partition(plain: str, submitter: str) -> str:
    """The waiting partition of one submitter's jobs of partition ``plain`` (fair share)."""
    return f"{plain}@{submitter}"


def waiting_key(job: Job | WaitingJob) -> dict:
    """The key of a job's entry: in its partition, or (``in_line``) its submitter's line;
    out of line while it waits on its parents."""
    if job.waits_on_parents:
        return {"pk": DEPENDENT, "sk": order_key(job.priority, job.seq)}
    plain = queue_partition(job.demand, job.share)
    where = line_partition(plain, job.submitter) if job.in_line and job.submitter else plain
    return {"pk": where, "sk": order_key(job.priority, job.seq)}


def append_history(entry: dict) -> tuple[str, dict]:
    """The SET clause and values that append ``entry`` to a job's audit trail."""
    clause = "history = list_append(if_not_exists(history, :no_history), :audit)"
    return clause, {":audit": [entry], ":no_history": []}


# -- write expressions (TransactWriteItems actions; the store adds the table name) ------------


def put(item: dict, condition: str | None = None) -> dict:
    action = {"Item": ser(item)}
    if condition:
        action["ConditionExpression"] = condition
    return {"Put": action}


def delete(key: dict, condition: str) -> dict:
    return {"Delete": {"Key": ser(key), "ConditionExpression": condition}}


def update(
    key: dict, expression: str, condition: str | None, values: dict, names: dict | None = None
):
    """An Update action (``condition`` None: unconditional, as an ADD to a counter)."""
    action = {"Key": ser(key), "UpdateExpression": expression}
    if condition:
        action["ConditionExpression"] = condition
    if values:
        action["ExpressionAttributeValues"] = ser(values)
    all_names = {**(names or {})}
    if "#state" in expression or "#state" in (condition or ""):
        all_names["#state"] = "state"
    if all_names:
        action["ExpressionAttributeNames"] = all_names
    return {"Update": action}


def set_fields(
    key, fields: dict, condition: str, expected: dict, remove=(), audit: dict | None = None
) -> dict:
    """Set every field of ``fields`` (and remove those in ``remove``) if ``condition``;
    with ``audit``, append it to the item's ``history``."""
    names = {f"#f{i}": name for i, name in enumerate(fields)}
    values = {f":f{i}": value for i, value in enumerate(fields.values())}
    sets = [f"#f{i} = :f{i}" for i in range(len(fields))]
    if audit is not None:
        clause, audit_values = append_history(audit)
        sets.append(clause)
        values.update(audit_values)
    expression = "SET " + ", ".join(sets)
    if remove:
        expression += " REMOVE " + ", ".join(remove)
    return update(key, expression, condition, {**values, **expected}, names)


def update_active_entry(
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
    return update(
        POOL_KEY,
        f"SET active.#name.#field = :value{version_update}",
        condition,
        values,
        {"#name": name, "#field": field},
    )


# -- DynamoDB's attribute values ------------------------------------------------------------

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def ser(value: dict) -> dict:
    """A plain dict as DynamoDB attribute values (floats as Decimals)."""
    return {k: _serializer.serialize(_to_dynamo(v)) for k, v in value.items()}


def de(item: dict) -> dict:
    """DynamoDB attribute values as a plain dict (whole Decimals as ints)."""
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


def error_code(exc) -> str:
    """The error code of a botocore ClientError (ConditionalCheckFailedException ...)."""
    return exc.response.get("Error", {}).get("Code", "")
