"""The queue in one DynamoDB table: conditional transitions (reads: :mod:`.reads`).

The table's keys and write expressions are :mod:`job_queue.store.table`'s, its items'
codecs :mod:`job_queue.store.codecs`'. Every transition is a conditional write on the
expected state; a lost race raises :class:`~job_queue.errors.StaleState`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from botocore.exceptions import ClientError

from job_queue import ledger
from job_queue.errors import Contended, JobConflict, StaleState
from job_queue.ledger import UsageRecord
from job_queue.models import Attempt, AuditEntry, Job, JobState
from job_queue.retry import RETRIES
from job_queue.scheduler import WaitingJob
from job_queue.scheduler.fair_share import FairShare
from job_queue.scheduler.snapshot import WarmPool
from job_queue.store import codecs, table
from job_queue.store.accounts import LineKeeping, line_of
from job_queue.store.dependency_writes import DependencyWrites
from job_queue.store.hold_writes import HoldWrites
from job_queue.store.holders_writes import HoldersItemWrites
from job_queue.store.ledger_writes import LedgerWrites, recorded
from job_queue.store.loading import BulkLoading
from job_queue.store.notes import HolderNotes
from job_queue.store.pool_writes import IDLE_POOL, PoolWrites
from job_queue.store.reads import Holders, TableReads
from job_queue.store.runs import RunTimes
from job_queue.store.table import POOL_KEY, TTL_ATTRIBUTE

_PENDING, _PREEMPTED = JobState.PENDING.value, JobState.PREEMPTED.value
# A warm pool that exists and that no job is being started on.

__all__ = ["DynamoJobStore", "Holders"]


class DynamoJobStore(
    TableReads,
    PoolWrites,
    HoldWrites,
    HoldersItemWrites,
    RunTimes,
    HolderNotes,
    LineKeeping,
    BulkLoading,
    DependencyWrites,
    LedgerWrites,
):
    """Reads and conditional writes of the queue table.

    Example::

        store = DynamoJobStore(boto3.client("dynamodb"), "training-job-queue")
        holders = store.holders()
        for job in store.waiting(["ml.p5.48xlarge"]):
            ...
    """

    def __init__(
        self,
        client,
        table_name: str,
        retention_seconds: float = 30 * 86400,
        fair_share: FairShare | None = None,
    ) -> None:
        """``fair_share``: the policy when fair share is on. Jobs then wait in their
        submitters' lines, and the usage of the work that ends is added to their accounts."""
        super().__init__(client, table_name, fair_share)
        self._retention = retention_seconds
        self._lines_marked = False

    # -- transitions ---------------------------------------------------------------------

    def add(self, job: Job) -> bool:
        """Queue a new job. False if a job of that name already exists."""
        job = self._placed(job)
        if job.waits_on_parents and not self._dependents_marked:
            self.mark_dependents()
        for _ in range(RETRIES):
            try:
                self._transact(
                    table.put(codecs.job_item(job), "attribute_not_exists(pk)"),
                    table.put(codecs.waiting_item(job)),
                    *self._accounts({line_of(job): 1}),
                )
                return True
            except Contended:
                continue  # another write to its submitter's account at the same moment
            except StaleState:
                return False
        raise JobConflict(f"{job.name}: the queue kept changing while it was queued; try again")

    def claim(
        self,
        job: WaitingJob,
        sagemaker_name: str,
        pool_version: int,
        now: float,
        warm: WarmPool | None = None,
        plan: str | None = None,
    ):
        """waiting → starting: take the job's instances, if the holders are as the plan saw
        them — on the idle warm pool ``warm``, which is claimed for this attempt, if given;
        on the training plan ``plan`` (an ARN), if given."""
        entry = codecs.active_entry(job, JobState.STARTING, now, sagemaker_name, plan)
        values = {
            ":starting": JobState.STARTING.value,
            ":pending": _PENDING,
            ":preempted": _PREEMPTED,
            ":an": sagemaker_name,
            ":now": now,
        }
        holders = "SET active.#name = :entry, version = :next"
        condition = "version = :version"
        names = {"#name": job.name}
        sets = [
            "#state = :starting",
            "attempt_name = :an",
            "updated_at = :now",
            "claimed_at = :now",
        ]
        removes = ["stopping_since"]
        for attribute, value in (("warm_pool", warm and warm.name), ("training_plan", plan)):
            if value is None:
                removes.append(attribute)
            else:
                sets.append(f"{attribute} = :{attribute}")
                values[f":{attribute}"] = value
        job_update = f"SET {', '.join(sets)}" + (f" REMOVE {', '.join(removes)}" if removes else "")
        if warm is not None:
            holders += ", pools.#pool.claimed_by = :an, pools.#pool.claimed_at = :now"
            condition += f" AND {IDLE_POOL}"
            names["#pool"] = warm.name
        self._transact(
            table.update(
                table.job_key(job.name), job_update, "#state IN (:pending, :preempted)", values
            ),
            table.delete(_waiting_key(job), "attribute_exists(pk)"),
            *self._accounts({line_of(job): -1}),
            table.update(
                POOL_KEY,
                holders,
                condition,
                {
                    ":entry": entry,
                    ":next": pool_version + 1,
                    ":version": pool_version,
                    **({":an": sagemaker_name, ":now": now} if warm else {}),
                },
                names,
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
            table.update_active_entry(
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
        audit: AuditEntry | None = None,
        failure_reason: str | None = None,
    ) -> None:
        """running (or starting, or preempting) → preempting / cancelling, with ``audit``
        added to the job's trail (``failure_reason``: cancelling to end failed, for it).

        A preemption passes the pool version its plan saw; a cancel does not need one.
        """
        values = {
            ":to": to_state.value,
            ":from": job.state.value,
            ":an": job.attempt_name,
            ":now": now,
        }
        # The first stop asked for ends the attempt's running (a cancel may follow a preemption).
        expression = (
            "SET #state = :to, updated_at = :now, "
            "stopping_since = if_not_exists(stopping_since, :now)"
        )
        if audit is not None:
            clause, audit_values = table.append_history(codecs.audit_value(audit))
            expression += ", " + clause
            values.update(audit_values)
        if preempted_by:
            expression += ", preempted_by = :by"
            values[":by"] = preempted_by
        if failure_reason:
            expression += ", failure_reason = :reason"
            values[":reason"] = failure_reason
        self._transact(
            table.update(
                table.job_key(job.name), expression, "#state = :from AND attempt_name = :an", values
            ),
            table.update_active_entry(
                job.name, job.attempt_name, "state", to_state.value, pool_version
            ),
        )

    def settle(
        self, job: Job, to_state: JobState, now: float, pool: WarmPool | None = None, **changes
    ) -> UsageRecord | None:
        """An active job's SageMaker job ended: its instances are free — or, with ``pool``,
        held by the warm pool SageMaker kept of them. Answers what the ledger recorded.

        ``to_state`` PENDING or PREEMPTED puts the job back in the queue at its original place.
        ``changes`` are other job fields to set (attempts, failure_reason, not_before ...).
        """
        fields = {"state": to_state.value, "updated_at": now, **changes}
        if "attempts" in fields:
            fields["attempts"] = codecs.attempts_value(fields["attempts"])
        if to_state.is_finished:
            fields.update(ended_at=now, **{TTL_ATTRIBUTE: int(now + self._retention)})
        waiting = None
        if to_state.is_waiting:
            waiting = self._placed(
                replace(
                    job,
                    state=to_state,
                    not_before=changes.get("not_before", 0.0),
                    last_error=changes.get("last_error", job.last_error),
                )
            )
            fields["in_line"] = waiting.in_line
        # No version bump: freeing instances cannot overrun capacity (a pass that still
        # counts them only starts less, and this settle's own pass follows), and a pool only
        # takes over the job's instances.
        holders, values, names = "REMOVE active.#name", {":an": job.attempt_name}, {}
        if pool is not None:
            holders += " SET pools.#pool = :pool"
            values[":pool"] = codecs.warm_pool_entry(pool)
            names["#pool"] = pool.name
        actions = [
            table.set_fields(
                table.job_key(job.name),
                fields,
                "#state = :expected_state AND attempt_name = :expected_an",
                {":expected_state": job.state.value, ":expected_an": job.attempt_name},
                remove=("claimed_at", "stopping_since")
                + (("preempted_by",) if to_state.is_waiting else ()),
            ),
            table.update(
                POOL_KEY,
                holders,
                "active.#name.attempt_name = :an",
                values,
                {"#name": job.name, **names},
            ),
        ]
        line = {}
        if waiting is not None:
            actions.append(table.put(codecs.waiting_item(waiting)))
            line = {line_of(waiting): 1}
        held = recorded(ledger.attempt_record(job, changes.get("attempts") or job.attempts, now))
        self._transact(
            *actions,
            *self._accounts(line, self._attempt_usage(job, changes, now)),
            *self._ledger(held),
        )
        return held

    def end_waiting(
        self,
        job: Job,
        now: float,
        audit: AuditEntry,
        failure_reason: str | None = None,
        state: JobState | None = None,
    ) -> None:
        """pending or preempted → cancelled (with ``failure_reason``: failed, as the sweep
        fails a job blocked past its HeadOfLineLimits, unless ``state`` says cancelled, as a
        dependency that can never hold cancels a job): the job leaves the queue."""
        if state is None:
            state = JobState.CANCELLED if failure_reason is None else JobState.FAILED
        reason = {} if failure_reason is None else {"failure_reason": failure_reason}
        self._transact(
            table.set_fields(
                table.job_key(job.name),
                {
                    "state": state.value,
                    "updated_at": now,
                    "ended_at": now,
                    TTL_ATTRIBUTE: int(now + self._retention),
                    **reason,
                },
                "#state = :expected_state",
                {":expected_state": job.state.value},
                audit=codecs.audit_value(audit),
            ),
            table.delete(_waiting_key(job), "attribute_exists(pk)"),
            *self._accounts({line_of(job): -1}),
        )

    def change_priority(self, job: Job, priority: int, now: float, audit: AuditEntry) -> None:
        """Set a waiting or active job's priority; a waiting job keeps its submission order."""
        condition = "#state = :expected_state AND priority = :old"
        expected = {":expected_state": job.state.value, ":old": job.priority}
        moved = self._placed(replace(job, priority=priority)) if job.state.is_waiting else job
        new_priority = table.set_fields(
            table.job_key(job.name),
            {"priority": priority, "updated_at": now, "in_line": moved.in_line},
            condition,
            expected,
            audit=codecs.audit_value(audit),
        )
        if job.state.is_waiting:
            lines = Counter({line_of(job): -1})
            lines[line_of(moved)] += 1
            self._transact(
                new_priority,
                table.delete(_waiting_key(job), "attribute_exists(pk)"),
                table.put(codecs.waiting_item(moved)),
                *self._accounts(lines),
            )
        else:
            self._transact(
                new_priority,
                table.update_active_entry(job.name, job.attempt_name, "priority", priority),
            )

    def _transact(self, *actions: dict) -> None:
        for action in actions:
            action[next(iter(action))]["TableName"] = self._table
        try:
            self._db.transact_write_items(TransactItems=list(actions))
        except ClientError as exc:
            if _conflict_only(exc):
                raise Contended(str(exc)) from exc
            if table.error_code(exc) in (
                "TransactionCanceledException",
                "ConditionalCheckFailedException",
            ):
                raise StaleState(str(exc)) from exc
            raise


def _conflict_only(exc: ClientError) -> bool:
    """A cancelled transaction whose only reasons are conflicts with other writes."""
    if table.error_code(exc) != "TransactionCanceledException":
        return False
    reasons = {r.get("Code") for r in exc.response.get("CancellationReasons", [])} - {"None"}
    return reasons == {"TransactionConflict"}


def _waiting_key(job: Job | WaitingJob) -> dict:
    return table.waiting_key(job)
