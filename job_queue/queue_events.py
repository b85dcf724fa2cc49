"""The queue's own events: one "Training Job Queue State Change" on the default EventBridge
bus for every state change of a queued job, for users to route (SNS, chat, mail) with an
ordinary rule, and one "Training Job Queue Warm Pool Released" when the queue ends a job's
idle warm pool for another job, one "Training Job Queue Hold Changed" when an admin
holds, drains or resumes the queue or a share, one "Training Job Queue Blocked" when a
job waited first in line past its HeadOfLineLimits, and one "Training Job Queue Dependency
Met" when the jobs a job depends on ended as it needs, so that it joined the line; and
one "Training Job Queue Usage Report" when a month has ended: its usage report; and one
"Training Job Queue Budget Warning" when a share's or a submitter's spending reaches 80% of
its budget, and again when it is spent.

The service records each change as it writes it (:class:`StateChange`, on the invocation's
report); the handler publishes them when the invocation ends, in the order they happened.
Publishing is best effort: a change is in the table whether or not its event got out, and an
event that EventBridge refuses is logged, never retried into a second state change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from job_queue.models import Job, JobState
from job_queue.scheduler.budgets import Standing
from job_queue.scheduler.waiting_for import WaitingFor

logger = Logger(child=True)

SOURCE = "training-job-queue"
DETAIL_TYPE = "Training Job Queue State Change"
POOL_DETAIL_TYPE = "Training Job Queue Warm Pool Released"
HOLD_DETAIL_TYPE = "Training Job Queue Hold Changed"
BLOCKED_DETAIL_TYPE = "Training Job Queue Blocked"
READY_DETAIL_TYPE = "Training Job Queue Dependency Met"
USAGE_DETAIL_TYPE = "Training Job Queue Usage Report"
BUDGET_DETAIL_TYPE = "Training Job Queue Budget Warning"
_BATCH = 10  # PutEvents takes at most 10 entries


@dataclass(frozen=True)
class StateChange:
    """A queued job moved from one state to another (``from_state`` None: just submitted)."""

    job: str
    from_state: JobState | None
    to_state: JobState
    at: float
    priority: int
    share: str | None
    sagemaker_job_name: str | None
    submitted_by: str | None
    attempt: int | None  # the attempt it is on (starting to its end), if it has one
    reason: str | None = None
    waiting_for: WaitingFor | None = None  # on a submission: why it waits, as first decided

    @classmethod
    def of(
        cls,
        job: Job,
        to_state: JobState,
        at: float,
        reason: str | None = None,
        *,
        sagemaker_job_name: str | None = None,
        attempt: int | None = None,
        submitted: bool = False,
    ) -> StateChange:
        """``job`` (as it was before the change; ``submitted``: a new job) moved to
        ``to_state``."""
        return cls(
            job.name,
            None if submitted else job.state,
            to_state,
            at,
            job.priority,
            job.share,
            sagemaker_job_name or job.attempt_name,
            job.submitted_by,
            attempt if attempt is not None else (len(job.attempts) or None),
            reason,
        )


@dataclass(frozen=True)
class PoolReleased:
    """The queue ended the idle warm pool that ``job`` left (SageMaker job ``pool``) so that
    ``for_job`` could have its instances."""

    job: str
    pool: str
    for_job: str
    at: float
    share: str | None
    reason: str


@dataclass(frozen=True)
class HoldChanged:
    """An admin (``by``) held, drained or resumed (``action``) the queue or ``share``."""

    action: str
    share: str | None
    by: str
    at: float


@dataclass(frozen=True)
class JobBlocked:
    """``job`` waited first in line for ``why`` for ``waited_s``, past its HeadOfLineLimits;
    ``action``: what the sweep did (cancel: it failed the job; alarm: nothing more)."""

    job: str
    why: WaitingFor
    waited_s: float
    action: str
    share: str | None
    at: float


@dataclass(frozen=True)
class DependencyMet:
    """The jobs ``job`` depends on ended as ``dependency`` needs: it joined the line."""

    job: str
    dependency: str  # as the depends-on tag writes it: afterok:train
    share: str | None
    at: float


@dataclass(frozen=True)
class UsageReported:
    """The usage report of last calendar month (``month``, such as 2026-11), as GET /usage
    answers it, its rows cut to the :data:`REPORT_ROWS` most billed."""

    month: str
    report: dict
    at: float


REPORT_ROWS = 50  # an event holds at most 256 KB


@dataclass(frozen=True)
class BudgetWarning:
    """A share's or a submitter's spending reached ``level`` (0.8: 80%; 1.0: spent) of its
    budget."""

    standing: Standing
    level: float
    at: float


Change = (
    StateChange | PoolReleased | HoldChanged | JobBlocked | DependencyMet | UsageReported
) | BudgetWarning
_DETAIL_TYPES = {
    StateChange: DETAIL_TYPE,
    PoolReleased: POOL_DETAIL_TYPE,
    HoldChanged: HOLD_DETAIL_TYPE,
    JobBlocked: BLOCKED_DETAIL_TYPE,
    DependencyMet: READY_DETAIL_TYPE,
    UsageReported: USAGE_DETAIL_TYPE,
    BudgetWarning: BUDGET_DETAIL_TYPE,
}


def detail(change: Change, queue_name: str) -> dict:
    """The event's ``detail``."""
    if isinstance(change, UsageReported):
        rows = change.report["rows"]
        return {
            "queue": queue_name,
            "month": change.month,
            **change.report,
            "rows": rows[:REPORT_ROWS],
            "more_rows": max(0, len(rows) - REPORT_ROWS),
            "at": _iso(change.at),
        }
    if isinstance(change, BudgetWarning):
        return {
            "queue": queue_name,
            "level": change.level,
            **change.standing.to_dict(),
            "at": _iso(change.at),
        }
    if isinstance(change, JobBlocked):
        return {
            "queue": queue_name,
            "job": change.job,
            "blocked_for": change.why.code.value,
            "waiting_for": change.why.to_dict(),
            "waited_seconds": round(change.waited_s),
            "action": change.action,
            "share": change.share,
            "at": _iso(change.at),
        }
    if isinstance(change, DependencyMet):
        return {
            "queue": queue_name,
            "job": change.job,
            "dependency": change.dependency,
            "share": change.share,
            "at": _iso(change.at),
        }
    if isinstance(change, HoldChanged):
        return {
            "queue": queue_name,
            "action": change.action,
            "share": change.share,
            "by": change.by,
            "at": _iso(change.at),
        }
    if isinstance(change, PoolReleased):
        return {
            "queue": queue_name,
            "job": change.job,
            "sagemaker_job_name": change.pool,
            "released_for": change.for_job,
            "reason": change.reason,
            "share": change.share,
            "at": _iso(change.at),
        }
    return {
        "queue": queue_name,
        "job": change.job,
        "from": change.from_state.value if change.from_state else None,
        "to": change.to_state.value,
        "reason": change.reason,
        "waiting_for": change.waiting_for.to_dict() if change.waiting_for else None,
        "priority": change.priority,
        "share": change.share,
        "sagemaker_job_name": change.sagemaker_job_name,
        "attempt": change.attempt,
        "submitted_by": change.submitted_by,
        "at": _iso(change.at),
    }


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def pattern(queue_name: str) -> dict:
    """The event pattern of this queue's events (the template's rules, and the local API's)."""
    return {
        "source": [SOURCE],
        "detail-type": list(_DETAIL_TYPES.values()),
        "detail": {"queue": [queue_name]},
    }


def publish(client, changes: Sequence[Change], queue_name: str) -> int:
    """Put ``changes`` on the default bus, in order; how many EventBridge refused (logged)."""
    refused = 0
    entries = [
        {
            "Source": SOURCE,
            "DetailType": _DETAIL_TYPES[type(change)],
            "Detail": json.dumps(detail(change, queue_name)),
            "Time": datetime.fromtimestamp(change.at, UTC),
            "Resources": [],
        }
        for change in changes
    ]
    for start in range(0, len(entries), _BATCH):
        batch = entries[start : start + _BATCH]
        try:
            answer = client.put_events(Entries=batch)
        except (ClientError, BotoCoreError) as exc:
            logger.warning(f"could not publish {len(batch)} queue events: {exc}")
            refused += len(batch)
            continue
        for entry, result in zip(batch, answer.get("Entries", []), strict=False):
            if result.get("ErrorCode"):
                refused += 1
                logger.warning(
                    f"queue event refused: {result['ErrorCode']} {result.get('ErrorMessage')}",
                    extra={"job": json.loads(entry["Detail"]).get("job")},
                )
    return refused


def log_group(queue_name: str) -> str:
    """The CloudWatch Logs group the template's rule (and the local API) writes the queue's
    events to, which `smq events` reads."""
    return f"/aws/events/training-job-queue/{queue_name}"
