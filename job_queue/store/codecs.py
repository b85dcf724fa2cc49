"""Items of the table and the types they hold, both ways: one codec per type.

* a :class:`~job_queue.models.Job` ↔ its ``JOB#`` item (request, state, attempt history);
* a :class:`~job_queue.scheduler.WaitingJob` ↔ its entry in a waiting partition (a job
  out of line for its dependency: with its ``depends_on`` tag);
* an :class:`~job_queue.scheduler.ActiveJob` ↔ its entry in the holders item's ``active``
  map;
* a :class:`~job_queue.scheduler.snapshot.WarmPool` ↔ its entry in the holders item's
  ``pools`` map (keyed by the SageMaker job that left it).

All three say where the job stands in the queue (priority, submission number, demand,
share) in the same attributes; the scheduler types also carry the max runtime that backfill
needs, so that a pass never reads a job's request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from job_queue import tags
from job_queue.models import Action, Attempt, AuditEntry, Checkpointing, Job, JobState, Outcome
from job_queue.scheduler import ActiveJob, WaitingJob
from job_queue.scheduler.dependencies import Dependency
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.scheduler.snapshot import OutsideJob, WarmPool
from job_queue.store.table import job_key, waiting_key

# -- what every item says of a job's place ----------------------------------------------------


def _place(job: Job | WaitingJob | ActiveJob) -> dict:
    item = {"priority": job.priority, "seq": job.seq, "demand": dict(job.demand)}
    if job.share is not None:
        item["share"] = job.share
    if job.helpers:
        item["helpers"] = dict(job.helpers)
    if job.submitter is not None:
        item["submitter"] = job.submitter
    return item


def _place_from(item: Mapping) -> dict:
    return {
        "priority": int(item["priority"]),
        "seq": int(item["seq"]),
        "demand": {itype: int(count) for itype, count in item["demand"].items()},
        "share": item.get("share"),
        "helpers": {itype: int(count) for itype, count in item.get("helpers", {}).items()},
        "submitter": item.get("submitter"),
    }


def _max_runtime(job: Job | WaitingJob | ActiveJob) -> dict:
    return {} if job.max_runtime is None else {"max_runtime": job.max_runtime}


def _warm_key(job: Job | WaitingJob) -> dict:
    return {} if job.warm_key is None else {"warm_key": job.warm_key}


def _optional_float(value) -> float | None:
    return None if value is None else float(value)


def _checkpoint(job: Job | WaitingJob | ActiveJob) -> dict:
    """How the job checkpoints and, when it saves at an interval, where (so that victims can
    be chosen by the work they would lose without reading a job's request)."""
    declared = job.checkpoint
    if declared is None:
        return {}
    where = None if declared.on_stop else job.checkpoint_uri
    return {"checkpoint": str(declared), **({"checkpoint_uri": where} if where else {})}


def _checkpoint_from(item: Mapping) -> dict:
    declared = item.get("checkpoint")
    return {
        "checkpoint": None if declared is None else Checkpointing.parse(declared),
        "checkpoint_uri": item.get("checkpoint_uri"),
    }


# -- waiting entries ----------------------------------------------------------------------------


def waiting_item(job: Job) -> dict:
    """The entry that puts a waiting job in its partition (or its submitter's line), in queue
    order."""
    return {
        **waiting_key(job),
        **({"in_line": True} if job.in_line else {}),
        "name": job.name,
        **_place(job),
        "not_before": job.not_before,
        "submitted_at": job.submitted_at,
        "state": job.state.value,
        **_max_runtime(job),
        **_warm_key(job),
        **_checkpoint(job),
        **({"last_error": job.last_error} if job.not_before and job.last_error else {}),
        **({"depends_on": str(job.dependency)} if job.waits_on_parents else {}),
    }


def waiting_from_item(item: Mapping) -> WaitingJob:
    return WaitingJob(
        name=item["name"],
        **_place_from(item),
        not_before=float(item.get("not_before", 0)),
        submitted_at=float(item.get("submitted_at", 0)),
        state=JobState(item.get("state", JobState.PENDING.value)),
        max_runtime=_optional_float(item.get("max_runtime")),
        warm_key=item.get("warm_key"),
        last_error=item.get("last_error"),
        in_line=bool(item.get("in_line")),
        **_checkpoint_from(item),
    )


# -- pool entries -------------------------------------------------------------------------------


def active_entry(
    job: WaitingJob, state: JobState, started_at: float, attempt_name: str, plan: str | None
) -> dict:
    """A job's entry in the pool item while it holds instances (keyed by the job's name), on
    the training plan ``plan`` (None: on-demand)."""
    return {
        **_place(job),
        "state": state.value,
        "started_at": started_at,
        "attempt_name": attempt_name,
        **_max_runtime(job),
        **_checkpoint(job),
        **({} if plan is None else {"plan": plan}),
    }


def active_from_entry(name: str, entry: Mapping) -> ActiveJob:
    return ActiveJob(
        name=name,
        **_place_from(entry),
        state=JobState(entry["state"]),
        started_at=float(entry["started_at"]),
        max_runtime=_optional_float(entry.get("max_runtime")),
        plan=entry.get("plan"),
        **_checkpoint_from(entry),
    )


# -- training plans ---------------------------------------------------------------------------


def plans_value(plans: Iterable[TrainingPlan]) -> dict:
    """The training plans as last read, as the holders item keeps them (keyed by ARN)."""
    return {
        plan.arn: {
            "instance_type": plan.instance_type,
            "status": plan.status,
            "reservations": [[r.count, r.start, r.end] for r in plan.reservations],
            **({} if plan.error is None else {"error": plan.error}),
            **({} if plan.read_at is None else {"read_at": plan.read_at}),
        }
        for plan in plans
    }


def plans_from(value: Mapping) -> tuple[TrainingPlan, ...]:
    return tuple(
        TrainingPlan(
            arn=arn,
            instance_type=entry["instance_type"],
            status=entry["status"],
            reservations=tuple(
                Reservation(int(n), float(start), float(end))
                for n, start, end in entry["reservations"]
            ),
            error=entry.get("error"),
            read_at=_optional_float(entry.get("read_at")),
        )
        for arn, entry in sorted(value.items())
    )


# -- warm pools -------------------------------------------------------------------------------


def warm_pool_entry(pool: WarmPool) -> dict:
    """A warm pool's entry in the holders item (keyed by ``pool.name``)."""
    entry = {
        "job": pool.job,
        "demand": dict(pool.demand),
        "since": pool.since,
        "expires_at": pool.expires_at,
    }
    optional = {
        "key": pool.key,
        "share": pool.share,
        "claimed_by": pool.claimed_by,
        "claimed_at": pool.claimed_at,
        "submitter": pool.submitter,
    }
    entry.update({k: v for k, v in optional.items() if v is not None})
    return entry


def warm_pool_from_entry(name: str, entry: Mapping) -> WarmPool:
    return WarmPool(
        name=name,
        job=entry["job"],
        demand={itype: int(count) for itype, count in entry["demand"].items()},
        key=entry.get("key"),
        since=float(entry["since"]),
        expires_at=float(entry["expires_at"]),
        share=entry.get("share"),
        claimed_by=entry.get("claimed_by"),
        claimed_at=_optional_float(entry.get("claimed_at")),
        submitter=entry.get("submitter"),
    )


# -- jobs started outside the queue ------------------------------------------------------------


def outside_entry(job: OutsideJob) -> dict:
    """An outside job's entry in the holders item (keyed by its SageMaker name)."""
    return {"demand": dict(job.demand), "since": job.since}


def outside_from_entry(name: str, entry: Mapping) -> OutsideJob:
    return OutsideJob(
        name=name,
        demand={itype: int(count) for itype, count in entry["demand"].items()},
        since=float(entry["since"]),
    )


# -- jobs -------------------------------------------------------------------------------------


def job_item(job: Job) -> dict:
    item = {
        **job_key(job.name),
        "name": job.name,
        "state": job.state.value,
        **_place(job),
        "submitted_at": job.submitted_at,
        "request": json.dumps(job.request, sort_keys=True),
        "request_hash": job.request_hash,
        "attempts": attempts_value(job.attempts),
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
        "warm_pool": job.warm_pool,
        "training_plan": job.training_plan,
        "submitted_by": job.submitted_by,
        "in_line": job.in_line or None,
        "checkpoint": None if job.checkpoint is None else str(job.checkpoint),
        "depends_on": None if job.dependency is None else str(job.dependency),
        "dependency_met_at": job.dependency_met_at,
        "claimed_at": job.claimed_at,
        "stopping_since": job.stopping_since,
    }
    item.update({k: v for k, v in optional.items() if v is not None})
    item["history"] = [audit_value(entry) for entry in job.history]
    return item


def job_from_item(item: Mapping) -> Job:
    return Job(
        name=item["name"],
        **_place_from(item),
        state=JobState(item["state"]),
        submitted_at=float(item["submitted_at"]),
        request=json.loads(item["request"]),
        request_hash=item.get("request_hash", ""),
        attempt_name=item.get("attempt_name"),
        attempts=tuple(_attempt_from(a) for a in item.get("attempts", [])),
        preempted_by=item.get("preempted_by"),
        not_before=_optional_float(item.get("not_before")) or 0.0,
        start_failures=int(item.get("start_failures", 0)),
        last_error=item.get("last_error"),
        failure_reason=item.get("failure_reason"),
        first_started_at=_optional_float(item.get("first_started_at")),
        ended_at=_optional_float(item.get("ended_at")),
        warm_pool=item.get("warm_pool"),
        training_plan=item.get("training_plan"),
        submitted_by=item.get("submitted_by"),
        in_line=bool(item.get("in_line")),
        history=tuple(_audit_from(entry) for entry in item.get("history", [])),
        checkpoint=_job_checkpoint(item),
        dependency=Dependency.parse(item["depends_on"]) if "depends_on" in item else None,
        dependency_met_at=_optional_float(item.get("dependency_met_at")),
        claimed_at=_optional_float(item.get("claimed_at")),
        stopping_since=_optional_float(item.get("stopping_since")),
    )


def _job_checkpoint(item: Mapping) -> Checkpointing | None:
    """The job's parsed checkpoint tag; an item written before it was kept apart has only
    its request's tag, read once here."""
    if "checkpoint" in item:
        return Checkpointing.parse(item["checkpoint"])
    value = tags.value(json.loads(item["request"]).get("Tags"), tags.CHECKPOINT)
    try:
        return None if value is None else Checkpointing.parse(value)
    except ValueError:
        return None  # refused at submission since; such an item keeps none


def audit_value(entry: AuditEntry) -> dict:
    """An audit-trail entry as the job's item keeps it (fields that are not set left out)."""
    value = {
        "at": entry.at,
        "action": entry.action.value,
        "by": entry.by,
        "from_priority": entry.from_priority,
        "to_priority": entry.to_priority,
        "preempted_by": entry.preempted_by,
        "lost_work_s": entry.lost_work_s,
        "released_for": entry.released_for,
    }
    return {k: v for k, v in value.items() if v is not None}


def _audit_from(value: Mapping) -> AuditEntry:
    return AuditEntry(
        at=float(value["at"]),
        action=Action(value["action"]),
        by=value.get("by"),
        from_priority=value.get("from_priority"),
        to_priority=value.get("to_priority"),
        preempted_by=value.get("preempted_by"),
        lost_work_s=None if value.get("lost_work_s") is None else int(value["lost_work_s"]),
        released_for=value.get("released_for"),
    )


def attempts_value(attempts: Sequence[Attempt]) -> list[dict]:
    """A job's attempts as the list its item keeps (fields that are not set left out)."""
    values = []
    for attempt in attempts:
        value = {
            "number": attempt.number,
            "sagemaker_job_name": attempt.sagemaker_job_name,
            "started_at": attempt.started_at,
            "ended_at": attempt.ended_at,
            "outcome": attempt.outcome.value if attempt.outcome else None,
            "failure_reason": attempt.failure_reason,
            "preempted_by": attempt.preempted_by,
            "warm_pool": attempt.warm_pool,
        }
        values.append({k: v for k, v in value.items() if v is not None})
    return values


def _attempt_from(value: Mapping) -> Attempt:
    return Attempt(
        number=int(value["number"]),
        sagemaker_job_name=value["sagemaker_job_name"],
        started_at=float(value["started_at"]),
        ended_at=_optional_float(value.get("ended_at")),
        outcome=Outcome(value["outcome"]) if value.get("outcome") else None,
        failure_reason=value.get("failure_reason"),
        preempted_by=value.get("preempted_by"),
        warm_pool=value.get("warm_pool"),
    )
