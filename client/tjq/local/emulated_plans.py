"""Emulated SageMaker training plans: reserved capacity for a time window.

A plan is one or more reservations (an instance type, a count, a start and an end). As
SageMaker does, the emulator:

* answers DescribeTrainingPlan: ``Status`` Scheduled before and between reservations, Active
  during one, Expired after the last; total, in-use and available instances; one
  ``ReservedCapacitySummaries`` entry per reservation;
* keeps a job with ``ResourceConfig.TrainingPlanArn`` InProgress / Pending (holding nothing)
  while its plan has no active reservation of its type with room, starts it when one has,
  and fails it with InsufficientCapacityError after two days of waiting;
* starts terminating a reservation's instances 30 minutes before it ends: a job still
  running on it then fails for capacity.

Plan capacity is reserved: it does not count against the account's on-demand limits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from job_queue.scheduler.reservations import never_used
from job_queue.share_config import INSTANCE_TYPE
from tjq.local.emulated_job import SageMakerFault

TERMINATION_WINDOW_S = 1800.0  # a reservation's instances start terminating this early
MAX_PENDING_S = 2 * 86400.0  # SageMaker fails a plan job that waited this long
ENDING = (
    "InsufficientCapacityError: the training plan's reserved capacity is ending; its "
    "instances are being terminated"
)
NEVER_STARTED = (
    "InsufficientCapacityError: the training plan had no capacity for the job within its "
    "maximum pending time"
)


@dataclass(frozen=True)
class Reservation:
    """Reserved instances of one type, from ``start`` to ``end`` (clock seconds)."""

    instance_type: str
    count: int
    start: float
    end: float

    def active(self, now: float) -> bool:
        return self.start <= now < self.end

    def status(self, now: float) -> str:
        return "Active" if self.active(now) else "Scheduled" if now < self.start else "Expired"


@dataclass
class EmulatedPlan:
    """A training plan: its name, its ARN, and its reservations in time order."""

    name: str
    arn: str
    reservations: list[Reservation]

    def active(self, itype: str, now: float) -> Reservation | None:
        """The reservation of ``itype`` that holds instances now, if any."""
        return next(
            (r for r in self.reservations if r.instance_type == itype and r.active(now)), None
        )

    def next_change_at(self, now: float) -> float | None:
        """When a reservation next opens or starts terminating."""
        times = [r.start for r in self.reservations if r.start > now]
        times += [r.end - TERMINATION_WINDOW_S for r in self.reservations]
        return min((t for t in times if t > now), default=None)

    def describe(self, now: float, in_use: int) -> dict:
        """The DescribeTrainingPlan answer, with ``in_use`` instances held by its jobs."""
        statuses = {r.status(now) for r in self.reservations}
        status = next(s for s in ("Active", "Scheduled", "Expired") if s in statuses)
        active = sum(r.count for r in self.reservations if r.active(now))
        return {
            "TrainingPlanArn": self.arn,
            "TrainingPlanName": self.name,
            "Status": status,
            "StartTime": min(r.start for r in self.reservations),
            "EndTime": max(r.end for r in self.reservations),
            "TotalInstanceCount": sum(r.count for r in self.reservations),
            "AvailableInstanceCount": max(0, active - in_use),
            "InUseInstanceCount": in_use,
            "TargetResources": ["training-job"],
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": f"{self.arn}/reserved-capacity/{index}",
                    "InstanceType": r.instance_type,
                    "TotalInstanceCount": r.count,
                    "Status": r.status(now),
                    "StartTime": r.start,
                    "EndTime": r.end,
                    "DurationHours": int((r.end - r.start) // 3600),
                }
                for index, r in enumerate(self.reservations, start=1)
            ],
        }


def plans_from_options(
    options: Iterable[str], started_at: float, region: str, account: str
) -> list[EmulatedPlan]:
    """Plans from ``NAME=TYPE:COUNT:START:END`` options (offsets in seconds from
    ``started_at``); a name given twice gets both reservations. ValueError naming the
    option that is malformed."""
    plans: dict[str, EmulatedPlan] = {}
    for option in options:
        name, _, spec = option.partition("=")
        parts = spec.split(":")
        try:
            itype, count, start, end = parts[0], int(parts[1]), float(parts[2]), float(parts[3])
        except (IndexError, ValueError):
            raise ValueError(
                f"expected NAME=TYPE:COUNT:START:END such as "
                f"p5-plan=ml.p5.48xlarge:4:0:86400, got {option!r}"
            ) from None
        if not name or len(parts) != 4:
            raise ValueError(f"expected NAME=TYPE:COUNT:START:END, got {option!r}")
        if not INSTANCE_TYPE.match(itype):
            raise ValueError(f"{option!r}: {itype!r} is not a SageMaker instance type")
        if count < 1 or start < 0 or end <= start:
            raise ValueError(f"{option!r}: needs COUNT >= 1 and 0 <= START < END")
        if problem := never_used(start, end):
            raise ValueError(f"{option!r}: {problem}")
        arn = f"arn:aws:sagemaker:{region}:{account}:training-plan/{name}"
        plan = plans.setdefault(name, EmulatedPlan(name, arn, []))
        plan.reservations.append(Reservation(itype, count, started_at + start, started_at + end))
        plan.reservations.sort(key=lambda r: r.start)
    return list(plans.values())


def plan_of(request: dict, plans: dict[str, EmulatedPlan], demand: dict[str, int]):
    """The plan a CreateTrainingJob request names (None: on-demand); ValueError with
    SageMaker's message for an unknown plan, or one without a reservation of the job's type."""
    arn = (request.get("ResourceConfig") or {}).get("TrainingPlanArn")
    if not arn:
        return None
    plan = plans.get(arn)
    if plan is None:
        raise ValueError(f"Training plan {arn} does not exist.")
    types = {r.instance_type for r in plan.reservations}
    if set(demand) - types:
        raise ValueError(
            f"Training plan {plan.name} reserves {', '.join(sorted(types))}, not "
            f"{', '.join(sorted(set(demand) - types))}."
        )
    return plan


def held_on(plan: EmulatedPlan, jobs: Iterable, itype: str | None = None) -> int:
    """Instances the plan's running jobs hold (of ``itype``, or of every type)."""
    return sum(
        count
        for job in jobs
        if job.plan == plan.arn and job.status in ("InProgress", "Stopping") and not job.pending
        for t, count in job.demand.items()
        if itype is None or t == itype
    )


def room_for(plan: EmulatedPlan, demand: dict[str, int], jobs: Iterable, now: float):
    """The active reservation the job can start on now (None: it waits)."""
    jobs = list(jobs)
    for itype, count in demand.items():
        reservation = plan.active(itype, now)
        if reservation is None or reservation.count - held_on(plan, jobs, itype) < count:
            return None
    return plan.active(next(iter(demand)), now)


class TrainingPlans:
    """LocalSageMaker's training plans (a mixin: it uses the emulator's jobs, clock, lock
    and transitions)."""

    def add_plans(self, plans: Iterable[EmulatedPlan]) -> None:
        """Training plans the account has bought (:func:`plans_from_options`)."""
        with self._lock:
            self.plans.update({plan.arn: plan for plan in plans})

    def describe_training_plan(self, request: dict) -> dict:
        name = request.get("TrainingPlanName", "")
        plan = next((p for p in self.plans.values() if name in (p.name, p.arn)), None)
        if plan is None:
            raise SageMakerFault("ResourceNotFound", f"Training plan {name} does not exist.")
        return plan.describe(self.clock(), held_on(plan, self.jobs.values()))

    def _start_pending(self, now: float) -> None:
        """Plan jobs whose plan now has room start, in the order they were created."""
        for job in self.jobs.values():
            if not job.pending or job.status != "InProgress":
                continue
            reservation = room_for(self.plans[job.plan], job.demand, self._running(), now)
            if reservation is not None:
                job.pending, job.reservation_ends = False, reservation.end
                job.ends_at += now - job.created_at  # its run time counts from now
                self._transition(job, "InProgress", "Starting")

    def _plan_end_reason(self, job, due: float) -> str | None:
        """Why a plan job ends at ``due`` if its plan ends it (None: it ends on its own)."""
        if job.pending:
            return NEVER_STARTED
        if job.reservation_ends is not None and due >= job.reservation_ends - TERMINATION_WINDOW_S:
            return ENDING
        return None

    def _running(self) -> list:
        return [job for job in self.jobs.values() if not job.pending]
