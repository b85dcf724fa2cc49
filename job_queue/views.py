"""JSON shapes of jobs in API answers."""

from __future__ import annotations

from collections.abc import Sequence

from job_queue.layout import Layout
from job_queue.limits import ran_for
from job_queue.models import Action, AuditEntry, Demand, Job
from job_queue.outlook import Outlook
from job_queue.sagemaker import attempt_name
from job_queue.scheduler import ActiveJob, WaitingJob
from job_queue.scheduler.dependencies import Dependency
from job_queue.scheduler.forecast import ExpectedStart
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.shares import ShareUsage
from job_queue.scheduler.snapshot import OutsideJob, WarmPool
from job_queue.scheduler.waiting_for import WaitingFor, iso
from job_queue.share_config import share_to_dict
from job_queue.store import Holders


def _instances(demand: Demand, helpers: Demand | None = None) -> dict:
    """What a job runs on: ``instances`` per type (uncapped helpers included, which
    ``helpers`` names again), with the type and count of a single-type job."""
    instances = {**demand, **(helpers or {})}
    types = list(instances)
    return {
        "instance_type": types[0] if len(types) == 1 else "+".join(sorted(types)),
        "instance_count": sum(instances.values()),
        "instances": instances,
        "helpers": dict(helpers or {}),
    }


def expected_row(expected: ExpectedStart | None) -> dict | None:
    """A waiting job's expected start, as the API shows it (None: not foreseen)."""
    if expected is None:
        return None
    return {
        "at_latest": iso(expected.at_latest),
        "likely": iso(expected.likely),
        "based_on": expected.based_on,
    }


def job_detail(job: Job, outlook: Outlook, now: float) -> dict:
    """GET /jobs/{name}: the job, its place in the queue and when it is expected to start
    (``outlook``), and every SageMaker job it ran as."""
    return {
        "name": job.name,
        "state": job.state.value,
        "priority": job.priority,
        "share": job.share,
        "position": outlook.position,
        "position_beyond": outlook.beyond,
        "expected_start": expected_row(outlook.expected),
        **_instances(job.demand, job.helpers),
        "submitted_at": iso(job.submitted_at),
        "first_started_at": iso(job.first_started_at),
        "ended_at": iso(job.ended_at),
        "waiting_seconds": round(
            (job.first_started_at or job.ended_at or now) - job.submitted_at, 1
        ),
        # The current attempt's SageMaker job, or the one its next attempt will run as.
        "sagemaker_job_name": job.attempt_name
        or attempt_name(job.name, job.seq, len(job.attempts) + 1),
        "training_plan": job.training_plan if job.state.holds_instances else None,
        "keep_alive_seconds": job.keep_alive,
        "checkpoint": None if job.checkpoint is None else str(job.checkpoint),
        "checkpoint_s3_uri": job.checkpoint_uri,
        "preemptions": job.preemptions,
        "max_preemptions": job.max_preemptions,  # its tag (null: the queue's MaxPreemptions)
        "preemption_summary": preemption_summary(job),
        "max_total_runtime_seconds": job.max_total_runtime,  # its tag (null: no limit)
        "total_runtime_seconds": round(ran_for(job.attempts, now)),
        "preempted_by": job.preempted_by,
        "failure_reason": job.failure_reason,
        "start_failures": job.start_failures,
        "last_start_error": job.last_error,
        "retry_not_before": iso(job.not_before) if job.not_before > now else None,
        "dependency": None if job.dependency is None else str(job.dependency),
        "dependency_met_at": iso(job.dependency_met_at),
        **reason_fields(outlook.waiting_for),
        "submitted_by": job.submitted_by,
        "submitter": job.submitter,
        "history": [history_row(entry) for entry in job.history],
        "attempts": [
            {
                "attempt": a.number,
                "sagemaker_job_name": a.sagemaker_job_name,
                "started_at": iso(a.started_at),
                "ended_at": iso(a.ended_at),
                "outcome": a.outcome,
                "failure_reason": a.failure_reason,
                "preempted_by": a.preempted_by,
                "start": "warm" if a.warm_pool else "cold",
                "warm_pool_of": a.warm_pool,
            }
            for a in job.attempts
        ],
    }


RECENT_PREEMPTIONS = 10  # as AWS Batch's preemptionSummary shows them


def preemption_summary(job: Job) -> dict:
    """How often the job was preempted, and the last ten times: when, by whom, the work
    it lost (AWS Batch's ``preemptionSummary``)."""
    preempted = [entry for entry in job.history if entry.action is Action.PREEMPTED]
    return {
        "preempted_attempt_count": job.preemptions,
        "recent_preempted_attempts": [
            {"at": iso(e.at), "preempted_by": e.preempted_by, "lost_work_seconds": e.lost_work_s}
            for e in preempted[-RECENT_PREEMPTIONS:]
        ],
    }


def history_row(entry: AuditEntry) -> dict:
    """One line of a job's audit trail: when, what, by whom (and the change it made)."""
    row = {"at": iso(entry.at), "action": entry.action.value, "by": entry.by}
    if entry.action is Action.PRIORITY_CHANGED:
        row.update({"from": entry.from_priority, "to": entry.to_priority})
    if entry.preempted_by is not None:
        row["preempted_by"] = entry.preempted_by
    if entry.lost_work_s is not None:
        row["lost_work_seconds"] = entry.lost_work_s
    if entry.released_for is not None:
        row["released_for"] = entry.released_for
    return row


def active_row(job: ActiveJob, sagemaker_job_name: str, now: float) -> dict:
    """A job holding instances, as a row of GET /jobs."""
    return {
        "name": job.name,
        "state": job.state.value,
        "priority": job.priority,
        "share": job.share,
        "position": None,
        **_instances(job.demand, job.helpers),
        "sagemaker_job_name": sagemaker_job_name,
        "running_seconds": round(now - job.started_at, 1),
        "training_plan": job.plan,
        "submitter": job.submitter,
        "checkpoint": None if job.checkpoint is None else str(job.checkpoint),
    }


def waiting_row(
    job: WaitingJob,
    position: int | None,
    now: float,
    expected: ExpectedStart | None = None,
    why: WaitingFor | None = None,
    dependency: Dependency | None = None,
) -> dict:
    """A pending job, as a row of GET /jobs (with when it is expected to start, and why it
    waits; ``dependency``: a job out of line until it holds, with no place in line yet)."""
    return {
        "name": job.name,
        "state": job.state.value,
        "priority": job.priority,
        "share": job.share,
        "position": position,
        "expected_start": expected_row(expected),
        **_instances(job.demand, job.helpers),
        "submitted_at": iso(job.submitted_at),
        "waiting_seconds": round(now - job.submitted_at, 1),
        "submitter": job.submitter,
        "retry_not_before": iso(job.not_before) if job.not_before > now else None,
        "dependency": None if dependency is None else str(dependency),
        **reason_fields(why),
    }


def reason_fields(why: WaitingFor | None) -> dict:
    """Why a waiting job waits: ``waiting_for`` (its code, sentence and facts) and, for
    people and older clients, ``waiting_reason`` (the sentence). None: it is not waiting,
    or starts in the next pass."""
    if why is None:
        return {"waiting_for": None, "waiting_reason": None}
    return {"waiting_for": why.to_dict(), "waiting_reason": why.message}


def plan_row(plan: TrainingPlan, active: Sequence[ActiveJob], now: float) -> dict:
    """A training plan, as GET /jobs lists it: its reservation open now (or the next one),
    how many of its instances count now and how many the queue's jobs use."""
    shown = plan.reservation(now) or next((r for r in plan.reservations if r.start > now), None)
    return {
        "name": plan.name,
        "arn": plan.arn,
        "instance_type": plan.instance_type,
        "status": plan.status,
        "reserved": plan.capacity(now),
        "in_use": sum(j.demand.get(plan.instance_type, 0) for j in active if j.plan == plan.arn),
        "window": None
        if shown is None
        else {
            "start": iso(shown.start),
            "end": iso(shown.end),
            "usable_until": iso(shown.usable_until),
            "instances": shown.count,
        },
        "reservations": [
            {"instances": r.count, "start": iso(r.start), "end": iso(r.end)}
            for r in plan.reservations
        ],
        "error": plan.error,
        "read_at": iso(plan.read_at),
    }


def pool_row(pool: WarmPool, now: float) -> dict:
    """An idle warm pool, as GET /jobs lists it: whose it is, what it holds, until when."""
    return {
        "job": pool.job,
        "sagemaker_job_name": pool.name,
        "share": pool.share,
        **_instances(pool.demand),
        "available_since": iso(pool.since),
        "expires_at": iso(pool.expires_at),
        "expires_in_seconds": max(0.0, round(pool.expires_at - now, 1)),
    }


def outside_row(job: OutsideJob, now: float) -> dict:
    """A job on a capped type the queue did not start, as GET /jobs lists it."""
    return {
        "sagemaker_job_name": job.name,
        **_instances(job.demand),
        "since": iso(job.since),
        "running_seconds": round(now - job.since, 1),
    }


def shares_view(
    layout: Layout,
    usage: list[ShareUsage],
    waiting: dict[str, int],
    changed_by: str | None = None,
    changed_at: float | None = None,
) -> dict:
    """GET /shares: each share's settings and, per instance type, its limit, what its jobs
    hold, what it borrows and lends; how many of its jobs wait; and who last replaced the
    shares (None: they are as deployed)."""
    rows = []
    for share in layout.shares:
        rows.append(
            {
                **share_to_dict(share),
                "default": share.name == layout.default_share,
                "waiting": waiting.get(share.name, 0),
                "instance_types": {
                    u.instance_type: {
                        "limit": u.limit,
                        "in_use": u.in_use,
                        "borrowed": u.borrowed,
                        "lent": u.lent,
                    }
                    for u in usage
                    if u.share == share.name
                },
            }
        )
    changed = {"by": changed_by, "at": iso(changed_at)} if changed_by else None
    return {"shares": rows, "capacity": dict(layout.capacity), "changed": changed}


def holds_view(held: Holders) -> dict:
    """The admins' holds on the queue and its shares (``share`` null: the whole queue), and
    the trail of who held, drained or resumed what, latest last."""
    return {
        "holds": [
            {"share": h.share, "drain": h.drain, "by": h.by, "since": iso(h.since)}
            for h in held.holds
        ],
        "hold_changes": [
            {"action": c.action.value, "share": c.share, "by": c.by, "at": iso(c.at)}
            for c in held.hold_changes
        ],
    }
