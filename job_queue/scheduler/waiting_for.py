"""Why a waiting job is not starting: a machine-readable code, a sentence, and the facts
behind it, decided by the scheduling pass itself (:mod:`~job_queue.scheduler.diagnosis`).

The Lambda's views, the sweep's ``WaitingJobs`` metric and the simulator all take the codes
from a pass's :class:`~job_queue.scheduler.snapshot.Plan`; nothing derives them again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from job_queue.scheduler.reservations import ENDED, NOT_READ, TrainingPlan, key_type

if TYPE_CHECKING:
    from job_queue.scheduler.snapshot import WaitingJob

MAX_NAMED = 5  # jobs a sentence names; the facts list them all


class Reason(StrEnum):
    """What a waiting job waits for."""

    HIGHER_PRIORITY = "higher-priority"  # jobs of higher priority hold or are ahead of it
    QUEUE_ORDER = "queue-order"  # jobs of its priority (or lower, never preempted) came first
    HELD_FOR = "held-for"  # it would delay the job first in line that backfill protects
    SHARE_LIMIT = "share-limit"  # its share holds its whole limit
    BORROW_LIMIT = "borrow-limit"  # its share may borrow no more
    RESERVED_ELSEWHERE = "reserved-elsewhere"  # the idle instances are a RESERVE share's
    PLAN_WINDOW = "plan-window"  # a training plan of its type has no reservation open
    BOUND_TOO_LONG = "bound-too-long"  # its MaxRuntimeInSeconds outlasts the reservation
    BACKING_OFF = "backing-off"  # SageMaker refused its last start; it retries later
    MIN_RUNTIME = "min-runtime"  # the jobs it would preempt have run too briefly
    FAIR_SHARE = "fair-share"  # another submitter, who used less lately, goes first
    HELD = "held"  # an admin holds the queue (or its share)
    DEPENDENCY = "dependency"  # jobs it depends on have not ended as it needs yet
    NO_CAPACITY = "no-capacity"  # its instance type or share is no longer in the layout
    BUDGET = "budget"  # its share or submitter spent its budget (instance-hours or dollars)


@dataclass(frozen=True)
class WaitingFor:
    """Why one job waits: ``code``, a ``message`` for people, and the facts: the jobs it
    waits for or behind, when the reason ends (if known), the share concerned, and whether
    it is first in line (set by the pass)."""

    code: Reason
    message: str
    jobs: tuple[str, ...] = ()
    until: float | None = None
    share: str | None = None
    first: bool = False  # first in line for its instances: no job ahead of it waits for them

    def to_dict(self) -> dict:
        """As the API shows it."""
        return {
            "code": self.code.value,
            "message": self.message,
            "jobs": list(self.jobs),
            "until": iso(self.until),
            "share": self.share,
            "first_in_line": self.first,
        }


def iso(timestamp: float | None) -> str | None:
    """A clock time as the API writes it (UTC, seconds)."""
    if timestamp is None or not math.isfinite(timestamp):
        return None
    moment = datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
    return moment.replace("+00:00", "Z")


def named(jobs: Iterable[WaitingJob | object], with_priority: bool = False) -> str:
    """Jobs for a sentence: the first few names, and how many more."""
    jobs = list(jobs)
    shown = [
        f"{job.name} (priority {job.priority})" if with_priority else job.name
        for job in jobs[:MAX_NAMED]
    ]
    more = len(jobs) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def backing_off(not_before: float, last_error: str | None, now: float) -> WaitingFor:
    """SageMaker refused the job's last start: it is passed over until ``not_before``."""
    message = f"retry in {math.ceil(not_before - now)} s: {last_error or 'start refused'}"
    if (last_error or "").startswith("ResourceLimitExceeded"):
        # The queue counted free instances, so the account limit is used by jobs it did not
        # start, or the capacity is set above the limit.
        message += (
            " — instances used outside the queue, or a capacity above the account's "
            "limit for the type (Service Quotas)?"
        )
    return WaitingFor(Reason.BACKING_OFF, message, until=not_before)


def behind(job: WaitingJob, head: WaitingJob, fair: bool) -> WaitingFor:
    """``job`` waits behind ``head``, the first job held for its share and instances."""
    if head.priority > job.priority:
        message = f"behind {head.name} (priority {head.priority}), first in line for its instances"
        return WaitingFor(Reason.HIGHER_PRIORITY, message, (head.name,), share=head.share)
    if fair and head.seq > job.seq:
        message = (
            f"fair share: {head.name} of {head.submitter}, who used the instances less "
            "lately, goes first"
        )
        return WaitingFor(Reason.FAIR_SHARE, message, (head.name,), share=head.share)
    message = f"behind {head.name}, first in line for its instances (first come, first served)"
    return WaitingFor(Reason.QUEUE_ORDER, message, (head.name,), share=head.share)


def beyond_horizon(ahead: int) -> WaitingFor:
    """A job further back than the part of the queue a pass read."""
    return WaitingFor(Reason.QUEUE_ORDER, f"more than {ahead} jobs are ahead of it in line")


def not_on_plans(job: WaitingJob, plans: Iterable[TrainingPlan], now: float) -> WaitingFor:
    """``job`` may start only on training plans of its type, and none admits it now."""
    said = [(plan, _plan_says(plan, job.max_runtime, now)) for plan in plans]
    said = [(plan, s) for plan, s in said if s is not None]
    if not said:
        return WaitingFor(Reason.PLAN_WINDOW, "no training plan of its type admits it now")
    code = min((code for _, (code, _) in said), key=lambda c: c is not Reason.BOUND_TOO_LONG)
    opens = [p.next_change(now) for p, (c, _) in said if c is Reason.PLAN_WINDOW]
    until = min((t for t in opens if t is not None), default=None)
    message = "; ".join(text for _, (_, text) in said)
    return WaitingFor(code, message, until=until if code is Reason.PLAN_WINDOW else None)


def with_plans_said(
    why: WaitingFor, job: WaitingJob, plans: Iterable[TrainingPlan], now: float
) -> WaitingFor:
    """``why``, with what the training plans of the job's type that cannot take it now say
    (a job held for on-demand instances might otherwise wonder about its plan)."""
    types = {key_type(key) for key in job.demand}
    said = [_plan_says(p, job.max_runtime, now) for p in plans if p.instance_type in types]
    notes = [text for _, text in filter(None, said)]
    if not notes:
        return why
    return replace(why, message=f"{why.message}; {'; '.join(notes)}")


def _plan_says(
    plan: TrainingPlan, max_runtime: float | None, now: float
) -> tuple[Reason, str] | None:
    name = f"training plan {plan.name}"
    if plan.error:
        said = f"{name} {plan.error}" if plan.error == NOT_READ else f"{name}: {plan.error}"
        return Reason.PLAN_WINDOW, said
    if plan.status in ENDED:
        return Reason.PLAN_WINDOW, f"{name} is {plan.status}"
    reservation = plan.reservation(now)
    if reservation is None:
        opens = min((r.start for r in plan.reservations if r.start > now), default=math.inf)
        if opens == math.inf:
            return Reason.PLAN_WINDOW, f"{name} has no reservation left"
        return Reason.PLAN_WINDOW, f"{name} has no reservation open until {iso(opens)}"
    if max_runtime is None:
        return Reason.BOUND_TOO_LONG, f"{name} takes only jobs with a MaxRuntimeInSeconds"
    if not plan.admits(max_runtime, now):
        return Reason.BOUND_TOO_LONG, (
            f"its MaxRuntimeInSeconds ({int(max_runtime)} s) outlasts {name}'s reservation "
            f"(usable until {iso(reservation.usable_until)}: SageMaker reclaims its instances "
            "in the last 30 minutes)"
        )
    return None
