"""Training plans in a scheduling pass: when reserved instances count, who may start on them,
and who must leave them. Each row: the plans, what runs, what waits, what should happen."""

from dataclasses import dataclass, field

import pytest

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, WaitingJob, plan
from job_queue.scheduler.reservations import (
    RESERVATION_ENDING,
    STOP_AHEAD_S,
    TERMINATION_WINDOW_S,
    Reservation,
    TrainingPlan,
)
from job_queue.scheduler.snapshot import Snapshot

P5 = "ml.p5.48xlarge"
NOW = 100_000.0
HOUR = 3600.0
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"


def training_plan(name, count=2, start=NOW - HOUR, end=NOW + 10 * HOUR, status="Active", more=()):
    reservations = (Reservation(count, start, end), *more)
    return TrainingPlan(ARN + name, P5, status, reservations)


def waiting(name, seq, priority=0, instances=1, max_runtime=HOUR):
    return WaitingJob(name, priority, seq, {P5: instances}, max_runtime=max_runtime)


def running(name, priority=0, instances=1, on=None, started=NOW - HOUR, state=JobState.RUNNING):
    return ActiveJob(
        name, priority, 0, {P5: instances}, state, started, max_runtime=HOUR, plan=on and ARN + on
    )


@dataclass
class Scenario:
    title: str
    waiting: list
    plans: list
    capacity: int = 0  # on-demand instances of the type
    active: list = field(default_factory=list)
    on_plan: dict = field(default_factory=dict)  # job -> plan name it starts on
    on_demand: list = field(default_factory=list)  # jobs that start on on-demand capacity
    preempted: dict = field(default_factory=dict)  # victim -> preemptor


SCENARIOS = [
    Scenario(
        "jobs start on an open reservation, and its ARN goes with them",
        waiting=[waiting("a", 1), waiting("b", 2), waiting("c", 3)],
        plans=[training_plan("p")],
        on_plan={"a": "p", "b": "p"},
    ),
    Scenario(
        "a reservation that has not opened yet holds nobody's instances",
        waiting=[waiting("a", 1)],
        plans=[training_plan("p", start=NOW + HOUR)],
    ),
    Scenario(
        "the plan's free instances go first; on-demand capacity takes the rest",
        waiting=[waiting("a", 1), waiting("b", 2), waiting("c", 3), waiting("d", 4)],
        plans=[training_plan("p")],
        capacity=1,
        on_plan={"a": "p", "b": "p"},
        on_demand=["c"],
    ),
    Scenario(
        "a job whose bound outlasts the reservation waits; a shorter one behind it starts",
        waiting=[waiting("long", 1, max_runtime=10 * HOUR), waiting("short", 2)],
        plans=[training_plan("p")],
        on_plan={"short": "p"},
    ),
    Scenario(
        "a job without a bound never starts on a plan",
        waiting=[waiting("unbounded", 1, max_runtime=None)],
        plans=[training_plan("p")],
        capacity=1,
        on_demand=["unbounded"],
    ),
    Scenario(
        "a bound that ends inside the termination window (or just before it) is too long",
        waiting=[waiting("a", 1, max_runtime=10 * HOUR - TERMINATION_WINDOW_S - STOP_AHEAD_S + 1)],
        plans=[training_plan("p", start=NOW, end=NOW + 10 * HOUR)],
    ),
    Scenario(
        "a bound that ends as the queue's stop ahead of the termination window comes fits",
        waiting=[waiting("a", 1, max_runtime=10 * HOUR - TERMINATION_WINDOW_S - STOP_AHEAD_S)],
        plans=[training_plan("p", start=NOW, end=NOW + 10 * HOUR)],
        on_plan={"a": "p"},
    ),
    Scenario(
        "between two reservations of one plan nothing is reserved",
        waiting=[waiting("a", 1)],
        plans=[
            training_plan(
                "p",
                start=NOW - 5 * HOUR,
                end=NOW - HOUR,
                status="Scheduled",
                more=(Reservation(4, NOW + HOUR, NOW + 9 * HOUR),),
            )
        ],
    ),
    Scenario(
        "the second reservation of a plan counts its own instances",
        waiting=[waiting(n, i) for i, n in enumerate("abcde")],
        plans=[
            training_plan(
                "p",
                start=NOW - 9 * HOUR,
                end=NOW - HOUR,
                more=(Reservation(4, NOW, NOW + 9 * HOUR),),
            )
        ],
        on_plan={"a": "p", "b": "p", "c": "p", "d": "p"},
    ),
    Scenario(
        "an expired or failed plan takes its capacity with it",
        waiting=[waiting("a", 1), waiting("b", 2)],
        plans=[training_plan("gone", status="Expired"), training_plan("broke", status="Failed")],
        capacity=1,
        on_demand=["a"],
    ),
    Scenario(
        "two plans of one type: the first configured fills first",
        waiting=[waiting("a", 1), waiting("b", 2), waiting("c", 3)],
        plans=[training_plan("first", count=1), training_plan("second", count=1)],
        on_plan={"a": "first", "b": "second"},
    ),
    Scenario(
        "jobs running on the plan hold its instances; on-demand ones hold on-demand capacity",
        waiting=[waiting("a", 1), waiting("b", 2)],
        plans=[training_plan("p")],
        capacity=1,
        active=[running("on-plan", on="p"), running("on-demand")],
        on_plan={"a": "p"},
    ),
    Scenario(
        "a full plan: the job starts on free on-demand capacity instead",
        waiting=[waiting("a", 1)],
        plans=[training_plan("p", count=1)],
        capacity=1,
        active=[running("x", on="p")],
        on_demand=["a"],
    ),
    Scenario(
        "a higher priority preempts a lower-priority job on the plan it can use",
        waiting=[waiting("urgent", 1, priority=5)],
        plans=[training_plan("p", count=1)],
        capacity=1,
        active=[running("low-on-plan", on="p"), running("high-on-demand", priority=9)],
        preempted={"low-on-plan": "urgent"},
    ),
    Scenario(
        "a job that can start nowhere holds back later jobs on every place it waits for",
        waiting=[waiting("big", 1, instances=2), waiting("small", 2)],
        plans=[training_plan("p", count=2)],
        capacity=2,
        active=[running("x", on="p", priority=9), running("y", priority=9)],
    ),
    Scenario(
        "a job too big for on-demand capacity waits for a plan and holds nobody back",
        waiting=[waiting("big", 1, instances=2), waiting("small", 2)],
        plans=[training_plan("p", start=NOW + HOUR)],
        capacity=1,
        on_demand=["small"],
    ),
    Scenario(
        "a job running up to the termination window is stopped ahead of it: reservation ending",
        waiting=[waiting("next", 1)],
        plans=[
            training_plan("p", start=NOW - 9 * HOUR, end=NOW + TERMINATION_WINDOW_S + STOP_AHEAD_S)
        ],
        active=[running("late", on="p")],
        preempted={"late": RESERVATION_ENDING},
    ),
    Scenario(
        "a job running when its plan failed is stopped too; on-demand jobs are not",
        waiting=[],
        plans=[training_plan("p", status="Failed")],
        capacity=1,
        active=[running("on-plan", on="p"), running("on-demand")],
        preempted={"on-plan": RESERVATION_ENDING},
    ),
    Scenario(
        "a job stopping on an ending reservation frees nothing for the next job",
        waiting=[waiting("next", 1)],
        plans=[training_plan("p", start=NOW - 9 * HOUR, end=NOW + 60)],
        active=[running("stopping", on="p", state=JobState.PREEMPTING)],
    ),
]


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.title for s in SCENARIOS])
def test_scenario(s: Scenario):
    decided = plan(Snapshot(NOW, {P5: s.capacity}, s.active, plans=s.plans), s.waiting)
    started = [job.name for job in decided.starts]
    assert started == sorted([*s.on_plan, *s.on_demand], key=started.index)
    assert set(started) == {*s.on_plan, *s.on_demand}
    assert {name: arn.rsplit("/", 1)[-1] for name, arn in decided.plans.items()} == s.on_plan
    assert {p.victim.name: p.preemptor for p in decided.preemptions} == s.preempted
    # Starts keep the demand they were submitted with: the pass's keys never leak out.
    assert all(set(job.demand) == {P5} for job in decided.starts)


def test_a_reservation_ending_names_the_plan():
    ending = training_plan("p", start=NOW - 9 * HOUR, end=NOW + 60)
    seen = Snapshot(NOW, {P5: 0}, [running("late", on="p")], plans=[ending])
    (stop,) = plan(seen, []).preemptions
    assert stop.reason == "reservation ending: training plan p is about to terminate its instances"


def test_a_plan_changes_capacity_when_a_reservation_opens_or_enters_its_window():
    p = training_plan("p", start=NOW + HOUR, end=NOW + 5 * HOUR)
    assert p.next_change(NOW) == NOW + HOUR
    assert p.next_change(NOW + HOUR) == NOW + 5 * HOUR - TERMINATION_WINDOW_S - STOP_AHEAD_S
    assert p.next_change(NOW + 5 * HOUR) is None
