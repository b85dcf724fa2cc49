"""Quota shares with every other rule of the pass, as scenarios: backfill, warm affinity,
victims chosen by the work they lose, the minimum run time and training plans work within
shares exactly as they do in the single queue (one pass for every layout)."""

import copy
from dataclasses import dataclass, field, replace

import pytest

from job_queue.models import Checkpointing, JobState
from job_queue.scheduler import ActiveJob, Policy, Share, Strategy, WaitingJob, plan
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.scheduler.snapshot import Snapshot, WarmPool

P5 = "ml.p5.48xlarge"
NOW = 100_000.0
ALLOWANCE = Policy().start_allowance_s

# Two teams of two instances: A borrows (and preempts within itself), B only lends.
A = Share("A", {P5: 2}, Strategy.LEND_AND_BORROW, in_share_preemption=True)
B = Share("B", {P5: 2}, Strategy.LEND)
TEAMS = (A, B)


def waiting(name, share, priority=0, instances=1, max_runtime=None, key=None, seq=None):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq if seq is not None else sum(map(ord, name)),
        demand={P5: instances},
        max_runtime=max_runtime,
        share=share,
        warm_key=key,
        submitted_at=NOW - 60,
    )


def running(name, share, priority=0, started=NOW - 5000, ends_at=None, checkpoint=None):
    """A running job; ``ends_at``: when its MaxRuntimeInSeconds bound ends (None: no bound)."""
    max_runtime = None if ends_at is None else ends_at - started - ALLOWANCE
    return ActiveJob(
        name=name,
        priority=priority,
        seq=sum(map(ord, name)),
        demand={P5: 1},
        state=JobState.RUNNING,
        started_at=started,
        max_runtime=max_runtime,
        share=share,
        checkpoint=checkpoint,
    )


def pool(job, share, key):
    return WarmPool(
        f"{job}-1", job, {P5: 1}, key, since=NOW - 100, expires_at=NOW + 500, share=share
    )


@dataclass
class Scenario:
    title: str
    waiting: list
    active: list = field(default_factory=list)
    pools: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    warm: dict = field(default_factory=dict)  # job -> the queued job whose pool it starts on
    released: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)


B_FULL = [running("b1", "B"), running("b2", "B")]
ON_STOP = Checkpointing()  # saves when stopped: a preemption loses nothing

BACKFILL = [
    Scenario(
        "a share's held job reserves its share: a later job of the share that ends in time "
        "backfills, a longer one waits",
        waiting=[
            waiting("big", "A", instances=2, seq=1),
            waiting("long", "A", max_runtime=5000, seq=2),
            waiting("short", "A", max_runtime=300, seq=3),
        ],
        active=[running("a1", "A", ends_at=NOW + 1500), *B_FULL],
        starts=["short"],
    ),
    Scenario(
        "strict order: without backfill a share's held job holds back the share's later jobs",
        waiting=[
            waiting("big", "A", instances=2, seq=1),
            waiting("short", "A", max_runtime=300, seq=2),
        ],
        active=[running("a1", "A", ends_at=NOW + 1500), *B_FULL],
        policy=Policy(backfill=False),
    ),
    Scenario(
        "the reservation starts when the instances are there, another share's too (the held "
        "job may borrow them then): a job that would end later does not backfill",
        waiting=[
            waiting("big", "A", instances=2, seq=1),
            waiting("medium", "A", max_runtime=400, seq=2),  # bound: NOW + 1000
            waiting("short", "A", max_runtime=200, seq=3),  # bound: NOW + 800
        ],
        active=[
            running("a1", "A", ends_at=NOW + 1500),
            running("b1", "B", ends_at=NOW + 900),
            running("b2", "B"),
        ],
        starts=["short"],
    ),
    Scenario(
        "behind a reservation a job only backfills: it does not borrow another share's idle "
        "instance; the other share's own job starts on it",
        waiting=[
            waiting("big", "A", instances=2, seq=1),
            waiting("short", "A", max_runtime=300, seq=2),
            waiting("b-job", "B", seq=3),
        ],
        active=[
            running("a1", "A", ends_at=NOW + 1500),
            running("a2", "A", ends_at=NOW + 2500),
            running("b1", "B"),
        ],
        starts=["b-job"],
    ),
    Scenario(
        "a held job of one share does not reserve another share's instances: its jobs start "
        "whatever their run time",
        waiting=[
            waiting("big", "A", instances=3, seq=1),
            waiting("b-long", "B", max_runtime=90_000, seq=2),
        ],
        active=[running("a1", "A", ends_at=NOW + 1500), running("b1", "B")],
        starts=["b-long"],
    ),
]

AFFINITY = Policy(warm_affinity_s=3600)

WARM_AFFINITY = [
    Scenario(
        "within a share, a later job of the same priority that matches the share's pool "
        "starts on it first",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a0", "A"), *B_FULL],
        pools=[pool("a-done", "A", "a")],
        starts=["matching"],
        warm={"matching": "a-done"},
        policy=AFFINITY,
    ),
    Scenario(
        "strict order by default: the share's first job gets the pool released for it",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a0", "A"), *B_FULL],
        pools=[pool("a-done", "A", "a")],
        starts=["first"],
        released=["a-done"],
    ),
    Scenario(
        "another share's job in between does not end the wait: a later match of the share "
        "still starts on the share's pool first",
        waiting=[
            waiting("first", "A", key="b", seq=1),
            waiting("b-job", "B", key="c", seq=2),
            waiting("matching", "A", key="a", seq=3),
        ],
        active=[running("a0", "A"), *B_FULL],
        pools=[pool("a-done", "A", "a")],
        starts=["matching"],
        warm={"matching": "a-done"},
        policy=AFFINITY,
    ),
    Scenario(
        "a share over its limit: the later job that matches its pool starts on it, and the "
        "first in line does not release it to borrow (the share borrows no more either way)",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a1", "A"), running("a2", "A"), running("b1", "B")],
        pools=[pool("a-done", "A", "a")],  # A's third instance, borrowed from B
        starts=["matching"],
        warm={"matching": "a-done"},
        policy=AFFINITY,
    ),
    Scenario(
        "a share over its limit, in strict order: the first in line borrows by releasing "
        "the share's pool",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a1", "A"), running("a2", "A"), running("b1", "B")],
        pools=[pool("a-done", "A", "a")],
        starts=["first"],
        released=["a-done"],
    ),
    Scenario(
        "a share over its limit: a later match of a lower priority does not take the pool",
        waiting=[
            waiting("first", "A", priority=1, key="b", seq=1),
            waiting("matching", "A", key="a", seq=2),
        ],
        active=[running("a1", "A"), running("a2", "A"), running("b1", "B")],
        pools=[pool("a-done", "A", "a")],
        starts=["first"],
        released=["a-done"],
        policy=AFFINITY,
    ),
    Scenario(
        "a job that borrows another share's idle pool it matches starts on it warm, rather "
        "than releasing it and starting cold",
        waiting=[waiting("a-match", "A", key="a")],
        active=[running("a1", "A"), running("a2", "A"), running("b1", "B")],
        pools=[pool("b-done", "B", "a")],
        starts=["a-match"],
        warm={"a-match": "b-done"},
    ),
    Scenario(
        "a later job of the share that matches another share's idle pool starts on it ahead "
        "of the first in line, who then has another pool released for it",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a0", "A"), running("b1", "B")],
        pools=[pool("b-done", "B", "a"), pool("b-old", "B", "z")],  # B held over its limit
        starts=["matching", "first"],
        warm={"matching": "b-done"},
        released=["b-old"],
        policy=AFFINITY,
    ),
    Scenario(
        "in strict order, the first in line has the other share's pool released for it, and "
        "the later match starts cold",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a0", "A"), running("b1", "B")],
        pools=[pool("b-done", "B", "a"), pool("b-old", "B", "z")],
        starts=["first", "matching"],
        released=["b-done", "b-old"],
    ),
    Scenario(
        "a borrower that would release another share's pool a later job of its share and "
        "priority matches lets that job start on it, and waits",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("matching", "A", key="a", seq=2)],
        active=[running("a1", "A"), running("a2", "A"), running("b1", "B")],
        pools=[pool("b-done", "B", "a")],
        starts=["matching"],
        warm={"matching": "b-done"},
        policy=AFFINITY,
    ),
    Scenario(
        "warm affinity works within a share: another share's job that matches the pool does "
        "not jump ahead of the first in line",
        waiting=[waiting("first", "A", key="b", seq=1), waiting("b-match", "B", key="a", seq=2)],
        active=[running("a0", "A"), *B_FULL],
        pools=[pool("a-done", "A", "a")],
        starts=["first"],
        released=["a-done"],
        policy=AFFINITY,
    ),
]

VICTIMS = [
    Scenario(
        "in-share preemption stops the job whose stop loses least work",
        waiting=[waiting("urgent", "A", priority=5)],
        active=[
            running("a-saves", "A", started=NOW - 3000, checkpoint=ON_STOP),
            running("a-recent", "A", started=NOW - 100),
            *B_FULL,
        ],
        preempted=["a-saves"],
    ),
    Scenario(
        "without least lost work, in-share preemption stops the most recently started",
        waiting=[waiting("urgent", "A", priority=5)],
        active=[
            running("a-saves", "A", started=NOW - 3000, checkpoint=ON_STOP),
            running("a-recent", "A", started=NOW - 100),
            *B_FULL,
        ],
        preempted=["a-recent"],
        policy=Policy(least_lost_work=False),
    ),
    Scenario(
        "a reclaim stops the borrower whose stop loses least work",
        waiting=[waiting("b-back", "B")],
        active=[
            running("a1", "A", started=NOW - 4000),
            running("a2", "A", started=NOW - 3000),
            running("a-saves", "A", started=NOW - 2000, checkpoint=ON_STOP),
            running("a-recent", "A", started=NOW - 100),
        ],
        preempted=["a-saves"],
    ),
]

MIN_RUN = Policy(min_run_s=600)

MIN_RUNTIME = [
    Scenario(
        "a job of the share that has run less than the minimum run time is not preempted: an "
        "older one is",
        waiting=[waiting("urgent", "A", priority=5)],
        active=[
            running("a-fresh", "A", started=NOW - 100),
            running("a-old", "A", priority=1, started=NOW - 5000),
            *B_FULL,
        ],
        preempted=["a-old"],
        policy=MIN_RUN,
    ),
    Scenario(
        "nobody of the share has run long enough: the urgent job waits",
        waiting=[waiting("urgent", "A", priority=5)],
        active=[
            running("a-fresh", "A", started=NOW - 100),
            running("a-fresh2", "A", started=NOW - 200),
            *B_FULL,
        ],
        policy=MIN_RUN,
    ),
    Scenario(
        "a borrower that has run less than the minimum run time is not reclaimed yet",
        waiting=[waiting("b-back", "B")],
        active=[
            running("a1", "A", started=NOW - 150),
            running("a2", "A", started=NOW - 100),
            running("a3", "A", started=NOW - 200),
            running("b1", "B"),
        ],
        policy=MIN_RUN,
    ),
]


def check(s: Scenario) -> None:
    before = copy.deepcopy((s.waiting, s.active, s.pools))
    result = plan(Snapshot(NOW, {P5: 4}, s.active, s.pools, shares=TEAMS), s.waiting, s.policy)
    assert [j.name for j in result.starts] == s.starts
    assert {name: p.job for name, p in result.warm.items()} == s.warm
    assert [r.pool.job for r in result.releases] == s.released
    assert [p.victim.name for p in result.preemptions] == s.preempted
    assert (s.waiting, s.active, s.pools) == before, "input was mutated"


@pytest.mark.parametrize("s", BACKFILL, ids=[s.title for s in BACKFILL])
def test_backfill_with_shares(s: Scenario):
    check(s)


@pytest.mark.parametrize("s", WARM_AFFINITY, ids=[s.title for s in WARM_AFFINITY])
def test_warm_affinity_with_shares(s: Scenario):
    check(s)


@pytest.mark.parametrize("s", VICTIMS, ids=[s.title for s in VICTIMS])
def test_victims_by_lost_work_with_shares(s: Scenario):
    check(s)


@pytest.mark.parametrize("s", MIN_RUNTIME, ids=[s.title for s in MIN_RUNTIME])
def test_minimum_run_time_with_shares(s: Scenario):
    check(s)


# -- training plans -------------------------------------------------------------------------

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
