"""Training plans during one pass: when a plan's reserved instances count, which jobs may use
them, and which running jobs must leave them.

A plan reserves instances of one type for one or more windows (reservations). Inside a pass,
each plan is a capacity of its own, under the key ``TYPE@PLAN`` (:func:`plan_key`), beside
the type's on-demand capacity (the plain type). The rules, the same in the Lambda and the
simulator:

* A reservation's instances count only while it is open and not yet in its last 35 minutes
  (SageMaker starts terminating them 30 minutes before the end; the queue stops its jobs 5
  minutes before that), and only while the plan is neither Expired nor Failed.
* A job may start on a plan only if its MaxRuntimeInSeconds bound ends before that point:
  a job without a bound, or with one that outlasts the reservation, waits for a longer
  reservation or for on-demand capacity.
* A job prefers a plan's free reserved instances to on-demand capacity of its type (the plan
  is paid for): its options are the plans that admit it, in configuration order, then
  on-demand.
* A job running on a plan whose reservation stops counting is stopped, and requeued as a
  preemption ("reservation ending").
* Jobs on plans run without a warm pool: the reservation holds the instances between jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from job_queue.models import JobState
from job_queue.scheduler.snapshot import ActiveJob, Preemption, WaitingJob

TERMINATION_WINDOW_S = 1800.0  # SageMaker terminates a reservation's instances this early
# The queue stops its jobs this long before the window opens: the sweep, which notices,
# runs every minute, and a stop takes a while.
STOP_AHEAD_S = 300.0
UNUSABLE_END_S = TERMINATION_WINDOW_S + STOP_AHEAD_S  # a reservation's end the queue never uses
RESERVATION_ENDING = "reservation ending"
ENDED = frozenset({"Expired", "Failed"})  # plan statuses that take the capacity with them
NOT_READ = "not read yet"  # the error of a plan the queue has not described yet


def never_used(start: float, end: float) -> str | None:
    """Why a reservation from ``start`` to ``end`` would never count (None: it would)."""
    if end - start > UNUSABLE_END_S:
        return None
    return (
        f"a reservation of {end - start:g}s would never be used: the queue stops counting one "
        f"{UNUSABLE_END_S:g}s before it ends (SageMaker's 30-minute termination window and 5 "
        "minutes to stop)"
    )


@dataclass(frozen=True)
class Reservation:
    """``count`` reserved instances from ``start`` to ``end`` (clock seconds)."""

    count: int
    start: float
    end: float

    @property
    def usable_until(self) -> float:
        """When its instances stop counting: shortly before the termination window opens."""
        return self.end - UNUSABLE_END_S

    def usable(self, now: float) -> bool:
        return self.start <= now < self.usable_until


@dataclass(frozen=True)
class TrainingPlan:
    """A training plan of the queue's capacity, as last read (DescribeTrainingPlan).

    ``error`` says why it could not be read, or why what was read is unusable (then its
    last known reservations, if any, still stand).
    """

    arn: str
    instance_type: str
    status: str = "Unknown"  # Pending | Active | Scheduled | Expired | Failed, as SageMaker says
    reservations: tuple[Reservation, ...] = ()
    error: str | None = None
    read_at: float | None = None

    @property
    def name(self) -> str:
        return self.arn.rsplit("/", 1)[-1]

    @property
    def key(self) -> str:
        return plan_key(self.instance_type, self.name)

    def reservation(self, now: float) -> Reservation | None:
        """The reservation whose instances count now, if any."""
        if self.status in ENDED:
            return None
        return next((r for r in self.reservations if r.usable(now)), None)

    def capacity(self, now: float) -> int:
        reservation = self.reservation(now)
        return reservation.count if reservation else 0

    def admits(self, max_runtime: float | None, now: float) -> bool:
        """A job of this bound, started now, ends before the reservation's instances go."""
        reservation = self.reservation(now)
        return (
            reservation is not None
            and max_runtime is not None
            and now + max_runtime <= reservation.usable_until
        )

    def next_change(self, now: float) -> float | None:
        """When its capacity next changes: a reservation opens or stops counting."""
        times = [t for r in self.reservations for t in (r.start, r.usable_until) if t > now]
        return min(times, default=None)


def plan_key(instance_type: str, plan_name: str) -> str:
    """The capacity key of a plan's instances inside a pass."""
    return f"{instance_type}@{plan_name}"


def key_type(key: str) -> str:
    """The instance type a capacity key counts."""
    return key.partition("@")[0]


def with_plans(
    capacity: Mapping[str, int], plans: Iterable[TrainingPlan], now: float
) -> dict[str, int]:
    """On-demand capacity and, beside it, each plan's instances that count now."""
    return {**capacity, **{plan.key: plan.capacity(now) for plan in plans}}


def on_plan(job: ActiveJob, plans: Sequence[TrainingPlan]) -> ActiveJob:
    """``job`` as a pass counts it: a job on a plan holds that plan's instances."""
    plan = _plan(job.plan, plans)
    if plan is None:
        return job
    demand = {plan.key if t == plan.instance_type else t: n for t, n in job.demand.items()}
    return replace(job, demand=demand)


def options(
    job: WaitingJob, capacity: Mapping[str, int], plans: Sequence[TrainingPlan], now: float
) -> list[tuple[str | None, WaitingJob]]:
    """Where ``job`` may start, best first: (plan ARN, the job counted on that plan) for each
    plan that admits it, then (None, the job) on on-demand capacity if that could ever hold
    it. None of them: it waits for a plan, and holds nobody back meanwhile. A job that needs
    several capped types, or a type without plans, runs on on-demand capacity only."""
    if len(job.demand) != 1:
        return [(None, job)]
    ((itype, count),) = job.demand.items()
    typed = [plan for plan in plans if plan.instance_type == itype]
    if not typed:
        return [(None, job)]
    found: list[tuple[str | None, WaitingJob]] = [
        (plan.arn, replace(job, demand={plan.key: count}))
        for plan in typed
        if plan.admits(job.max_runtime, now)
    ]
    if capacity.get(itype, 0) >= count:
        found.append((None, job))
    return found


def ending(
    active: Iterable[ActiveJob],
    plans: Sequence[TrainingPlan],
    now: float,
    lost: Callable[[ActiveJob], float] | None = None,
) -> list[Preemption]:
    """Running jobs to stop because their plan's instances stop counting (the reservation's
    termination window opened, or the plan expired or failed); ``lost`` estimates the work
    each stop throws away."""
    stops = []
    for job in active:
        plan = _plan(job.plan, plans)
        if job.state is JobState.RUNNING and plan is not None and plan.capacity(now) == 0:
            why = f"{RESERVATION_ENDING}: training plan {plan.name} "
            why += "ended" if plan.status in ENDED else "is about to terminate its instances"
            stops.append(Preemption(job, RESERVATION_ENDING, why, lost(job) if lost else None))
    return stops


def _plan(arn: str | None, plans: Sequence[TrainingPlan]) -> TrainingPlan | None:
    if arn is None:
        return None
    return next((plan for plan in plans if plan.arn == arn), None)
