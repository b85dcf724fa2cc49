"""Training plans with quota shares, as scenarios: a share's plan counts toward its limit, its
idle reserved instances are lent (unless RESERVE) and reclaimed, and a borrower on them is
stopped before the reservation ends."""

import copy
from dataclasses import dataclass, field, replace

import pytest

from job_queue.scheduler import Policy, Share, Strategy, plan
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.scheduler.snapshot import Snapshot
from tests.unit.share_jobs import NOW, P5, running, waiting

PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/research-week"


def reserved(count=2, ends_in=86_400.0):
    """The research team's plan: ``count`` instances reserved until ``ends_in`` from now."""
    window = Reservation(count, NOW - 3600, NOW + ends_in)
    return TrainingPlan(PLAN_ARN, P5, "Active", (window,), read_at=NOW)


def research(strategy=Strategy.LEND):
    return Share("R", {P5: 0}, strategy, plans=((P5, PLAN_ARN),))


BORROWER = Share("B", {P5: 1}, Strategy.LEND_AND_BORROW, borrow_limit=100)


def on_plan(name, share, priority=0):
    job = running(name, share, priority)
    return replace(job, plan=PLAN_ARN, max_runtime=7200)


@dataclass
class PlanScenario:
    title: str
    waiting: list
    active: list = field(default_factory=list)
    shares: tuple = (research(), BORROWER)
    plan: TrainingPlan = field(default_factory=reserved)
    starts: dict = field(default_factory=dict)  # job -> the plan it starts on (None: on-demand)
    preempted: dict = field(default_factory=dict)  # victim -> the start of its reason


BOUNDED = 3600

PLANS = [
    PlanScenario(
        "a share's plan counts toward its limit: its job starts on the reserved instances",
        waiting=[waiting("r1", "R", max_runtime=BOUNDED)],
        starts={"r1": PLAN_ARN},
    ),
    PlanScenario(
        "a lending share's idle reserved instances are lent: a borrower starts on them",
        waiting=[waiting("b2", "B", max_runtime=BOUNDED)],
        active=[running("b1", "B")],
        starts={"b2": PLAN_ARN},
    ),
    PlanScenario(
        "a RESERVE share's idle reserved instances are not lent",
        waiting=[waiting("b2", "B", max_runtime=BOUNDED)],
        active=[running("b1", "B")],
        shares=(research(Strategy.RESERVE), BORROWER),
    ),
    PlanScenario(
        "the plan's owner reclaims its reserved instances from a borrower",
        waiting=[waiting("r1", "R", instances=2, max_runtime=BOUNDED)],
        active=[running("b1", "B"), on_plan("b-borrower", "B")],
        preempted={"b-borrower": "reclaimed for r1 of share R"},
    ),
    PlanScenario(
        "a borrower on reserved instances is stopped before the reservation ends",
        waiting=[],
        active=[running("b1", "B"), on_plan("b-borrower", "B")],
        plan=reserved(ends_in=1800 + 300 - 10),
        preempted={"b-borrower": "reservation ending"},
    ),
    PlanScenario(
        "a job that would outlast the reservation runs on on-demand capacity instead",
        waiting=[waiting("b2", "B", max_runtime=90_000)],
        starts={"b2": None},
    ),
]


@pytest.mark.parametrize("s", PLANS, ids=[s.title for s in PLANS])
def test_training_plans_with_shares(s: PlanScenario):
    before = copy.deepcopy((s.waiting, s.active))
    seen = Snapshot(NOW, {P5: 1}, s.active, plans=[s.plan], shares=s.shares)
    result = plan(seen, s.waiting, Policy())
    assert {j.name: result.plans.get(j.name) for j in result.starts} == s.starts
    assert {p.victim.name: p.reason for p in result.preemptions}.keys() == s.preempted.keys()
    for preemption in result.preemptions:
        assert preemption.reason.startswith(s.preempted[preemption.victim.name])
    assert (s.waiting, s.active) == before, "input was mutated"
