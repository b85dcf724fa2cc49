"""Why a job waits, as the pass itself decides it: one scenario per reason code (and the
jobs each one names), in the single queue and with quota shares, training plans, backfill,
the minimum run time and fair share."""

from dataclasses import dataclass, field, replace

import pytest

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, Share, Strategy, WaitingJob, plan
from job_queue.scheduler.fair_share import FairShare, Usage
from job_queue.scheduler.holds import DRAIN, QueueHold
from job_queue.scheduler.planner import explain
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.scheduler.snapshot import Snapshot, WarmPool
from job_queue.scheduler.waiting_for import Reason

P5 = "ml.p5.48xlarge"
NOW = 100_000.0
HOUR = 3600.0
ALLOWANCE = Policy().start_allowance_s
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/nightly"


def waiting(name, priority=0, seq=1, instances=1, max_runtime=None, share=None, **kw):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq,
        demand={P5: instances},
        max_runtime=max_runtime,
        share=share,
        submitted_at=NOW - 60,
        **kw,
    )


def running(name, priority=0, started=NOW - 5000, ends_at=None, share=None, submitter=None):
    max_runtime = None if ends_at is None else ends_at - started - ALLOWANCE
    return ActiveJob(
        name=name,
        priority=priority,
        seq=0,
        demand={P5: 1},
        state=JobState.RUNNING,
        started_at=started,
        max_runtime=max_runtime,
        share=share,
        submitter=submitter,
    )


def reserved(start, end):
    return TrainingPlan(PLAN, P5, "Scheduled", (Reservation(1, start, end),))


@dataclass
class Scenario:
    title: str
    waiting: list
    expected: dict  # job -> (code, the jobs it names)
    capacity: int = 1
    active: list = field(default_factory=list)
    pools: list = field(default_factory=list)
    shares: tuple = ()
    plans: tuple = ()
    usage: Usage = field(default_factory=Usage)
    policy: Policy = field(default_factory=Policy)
    holds: tuple = ()


A = Share("A", {P5: 1}, Strategy.LEND_AND_BORROW, borrow_limit=100, in_share_preemption=True)
B = Share("B", {P5: 3}, Strategy.LEND)
LENDER = Share("L", {P5: 1}, Strategy.LEND)
KEEPER = Share("R", {P5: 1}, Strategy.RESERVE)
FAIR = Policy(fair_share=FairShare(half_life_s=HOUR))

SCENARIOS = [
    Scenario(
        "a job waits for the higher-priority job that holds the instances",
        waiting=[waiting("low", priority=1)],
        active=[running("urgent", priority=5)],
        expected={"low": (Reason.HIGHER_PRIORITY, ("urgent",))},
    ),
    Scenario(
        "a job of the same priority as the running one waits its turn",
        waiting=[waiting("second")],
        active=[running("first")],
        expected={"second": (Reason.QUEUE_ORDER, ("first",))},
    ),
    Scenario(
        "the jobs behind the first in line wait behind it",
        waiting=[waiting("a", seq=1), waiting("b", seq=2), waiting("c", seq=3)],
        active=[running("r")],
        expected={
            "a": (Reason.QUEUE_ORDER, ("r",)),
            "b": (Reason.QUEUE_ORDER, ("a",)),
            "c": (Reason.QUEUE_ORDER, ("a",)),
        },
    ),
    Scenario(
        "a lower-priority job behind a higher-priority one in line waits for it",
        waiting=[waiting("high", priority=3, seq=2), waiting("low", priority=1, seq=1)],
        active=[running("top", priority=5)],
        expected={
            "high": (Reason.HIGHER_PRIORITY, ("top",)),
            "low": (Reason.HIGHER_PRIORITY, ("high",)),
        },
    ),
    Scenario(
        "preemption off: an urgent job waits for a lower-priority one, in queue order",
        waiting=[waiting("urgent", priority=9)],
        active=[running("batch", priority=0)],
        policy=Policy(preemption=False),
        expected={"urgent": (Reason.QUEUE_ORDER, ("batch",))},
    ),
    Scenario(
        "backfill: a later job that could end after the held job may start is held for it",
        capacity=2,
        waiting=[
            waiting("big", instances=2, seq=1),
            waiting("long", max_runtime=5000, seq=2),
            waiting("unbounded", seq=3),
            waiting("short", max_runtime=300, seq=4),
        ],
        active=[running("r", ends_at=NOW + 1500)],
        expected={
            "big": (Reason.QUEUE_ORDER, ("r",)),
            "long": (Reason.HELD_FOR, ("big",)),
            "unbounded": (Reason.HELD_FOR, ("big",)),
        },
    ),
    Scenario(
        "a share that holds its limit and does not borrow waits at its share's limit",
        capacity=2,
        shares=(LENDER, Share("M", {P5: 1}, Strategy.LEND)),
        waiting=[waiting("l2", share="L")],
        active=[running("l1", share="L")],
        expected={"l2": (Reason.SHARE_LIMIT, ("l1",))},
    ),
    Scenario(
        "a borrowing share at its borrow limit waits although lent capacity is idle",
        capacity=4,
        shares=(A, B),
        waiting=[waiting("a3", share="A")],
        active=[running("a1", share="A"), running("a2", share="A")],
        expected={"a3": (Reason.BORROW_LIMIT, ())},
    ),
    Scenario(
        "a share that does not borrow waits at its limit, whoever's the idle instance is",
        capacity=2,
        shares=(Share("A", {P5: 1}, Strategy.LEND), KEEPER),
        waiting=[waiting("a2", share="A")],
        active=[running("a1", share="A")],
        expected={"a2": (Reason.SHARE_LIMIT, ("a1",))},
    ),
    Scenario(
        "the only idle instance is a RESERVE share's: a borrower waits for it",
        capacity=2,
        shares=(A, KEEPER),
        waiting=[waiting("a2", share="A")],
        active=[running("a1", share="A")],
        expected={"a2": (Reason.RESERVED_ELSEWHERE, ())},
    ),
    Scenario(
        "a job that would preempt one that has not run its minimum time waits for it",
        waiting=[waiting("urgent", priority=5)],
        active=[running("fresh", priority=0, started=NOW - 60)],
        policy=Policy(min_run_s=600),
        expected={"urgent": (Reason.MIN_RUNTIME, ("fresh",))},
    ),
    Scenario(
        "a job whose start SageMaker refused backs off until its retry",
        capacity=2,
        waiting=[waiting("refused", not_before=NOW + 30, last_error="ThrottlingException")],
        expected={"refused": (Reason.BACKING_OFF, ())},
    ),
    Scenario(
        "a job on a type with only a training plan waits for its reservation to open",
        capacity=0,
        plans=(reserved(NOW + HOUR, NOW + 10 * HOUR),),
        waiting=[waiting("planned", max_runtime=HOUR)],
        expected={"planned": (Reason.PLAN_WINDOW, ())},
    ),
    Scenario(
        "a job whose MaxRuntimeInSeconds outlasts the open reservation is bound too long",
        capacity=0,
        plans=(reserved(NOW - HOUR, NOW + 2 * HOUR),),
        waiting=[waiting("too-long", max_runtime=5 * HOUR)],
        expected={"too-long": (Reason.BOUND_TOO_LONG, ())},
    ),
    Scenario(
        "fair share: the earlier job of the heavy user waits behind the light user's",
        usage=Usage({"heavy": {int(NOW): 40 * HOUR}}),
        policy=FAIR,
        waiting=[
            waiting("heavy-job", seq=1, submitter="heavy"),
            waiting("light-job", seq=2, submitter="light"),
        ],
        active=[running("r", submitter="heavy")],
        expected={
            "light-job": (Reason.QUEUE_ORDER, ("r",)),
            "heavy-job": (Reason.FAIR_SHARE, ("light-job",)),
        },
    ),
    Scenario(
        "a job of a share that no longer exists has no capacity",
        shares=(LENDER,),
        waiting=[waiting("orphan", share="gone")],
        expected={"orphan": (Reason.NO_CAPACITY, ())},
    ),
    Scenario(
        "an idle warm pool of a RESERVE share is not released for a borrower",
        capacity=2,
        shares=(A, KEEPER),
        pools=[WarmPool("r1-1", "r1", {P5: 1}, "k", NOW - 10, NOW + 500, share="R")],
        waiting=[waiting("a2", share="A")],
        active=[running("a1", share="A")],
        expected={"a2": (Reason.RESERVED_ELSEWHERE, ())},
    ),
    Scenario(
        "while an admin holds the queue nothing starts, free instances or not",
        capacity=2,
        waiting=[waiting("next"), waiting("after", seq=2)],
        holds=(QueueHold(None, False, "admin", NOW - 60),),
        expected={"next": (Reason.HELD, ()), "after": (Reason.HELD, ())},
    ),
    Scenario(
        "a held share waits; another share's job starts on the instances",
        capacity=4,
        shares=(A, B),
        waiting=[waiting("a1", share="A"), waiting("b1", share="B", seq=2)],
        holds=(QueueHold("A", False, "admin", NOW - 60),),
        expected={"a1": (Reason.HELD, ())},
    ),
]


def seen_of(s: Scenario) -> Snapshot:
    return Snapshot(
        NOW,
        {P5: s.capacity},
        active=s.active,
        pools=s.pools,
        plans=s.plans,
        shares=s.shares,
        usage=s.usage,
        holds=s.holds,
    )


@pytest.mark.parametrize("s", SCENARIOS, ids=lambda s: s.title)
def test_why_a_job_waits(s: Scenario) -> None:
    decided = plan(seen_of(s), s.waiting, s.policy)
    explained = explain(seen_of(s), s.waiting, s.policy)
    said = {name: (why.code, why.jobs) for name, why in explained.items()}
    assert said == s.expected
    # The pass's own plan says the same of every job it read.
    assert {n: (w.code, w.jobs) for n, w in decided.waiting.items()}.items() <= said.items()
    assert all(why.message for why in explained.values())


def test_reasons_say_when_they_end() -> None:
    refused = waiting("refused", not_before=NOW + 30, last_error="ThrottlingException: slow")
    fresh = Scenario(
        "", [waiting("urgent", priority=5)], {}, active=[running("fresh", started=NOW - 60)]
    )
    windowed = Scenario("", [waiting("planned", max_runtime=HOUR)], {}, capacity=0)
    windowed.plans = (reserved(NOW + HOUR, NOW + 10 * HOUR),)

    backing = explain(seen_of(Scenario("", [refused], {})), [refused], Policy())["refused"]
    protected = explain(seen_of(fresh), fresh.waiting, Policy(min_run_s=600))["urgent"]
    opening = explain(seen_of(windowed), windowed.waiting, Policy())["planned"]

    assert (backing.until, backing.message) == (
        NOW + 30,
        "retry in 30 s: ThrottlingException: slow",
    )
    assert protected.until == NOW - 60 + 600
    assert opening.until == NOW + HOUR
    assert "has no reservation open until" in opening.message


def test_a_hold_says_who_and_since_when() -> None:
    hold = QueueHold("A", True, "arn:aws:iam::123456789012:user/admin", NOW - 60)
    why = explain(Snapshot(NOW, {P5: 4}, shares=(A, B), holds=(hold,)), [waiting("a1", share="A")])
    assert why["a1"].message == (
        "share A is drained by arn:aws:iam::123456789012:user/admin since 1970-01-02T03:45:40Z"
    )
    assert why["a1"].share == "A"


def test_a_drain_stops_the_running_jobs_it_holds_and_only_those() -> None:
    seen = Snapshot(
        NOW,
        {P5: 4},
        active=[running("a-run", share="A"), running("b-run", share="B")],
        shares=(A, B),
        holds=(QueueHold("A", True, "admin", NOW - 60),),
    )
    decided = plan(seen, [waiting("a-next", share="A"), waiting("b-next", share="B", seq=2)])
    assert [(p.victim.name, p.preemptor) for p in decided.preemptions] == [("a-run", DRAIN)]
    assert [job.name for job in decided.starts] == ["b-next"]
    held_only = plan(replace(seen, holds=(QueueHold("A", False, "admin", NOW - 60),)), [])
    assert held_only.preemptions == ()  # held, its running jobs go on


def test_a_started_job_has_no_reason() -> None:
    decided = plan(Snapshot(NOW, {P5: 2}, active=[running("r")]), [waiting("next")])
    assert [job.name for job in decided.starts] == ["next"]
    assert decided.waiting == {}


def test_the_pass_says_which_waiting_job_is_first_in_line_for_its_instances() -> None:
    seen = Snapshot(NOW, {P5: 2}, active=[running("holder", priority=5)])
    refused = waiting("refused", priority=9, seq=0, not_before=NOW + 30, last_error="Throttling")
    line = [refused, waiting("big", seq=1, instances=2), waiting("small", seq=2)]
    first = {name: why.first for name, why in explain(seen, line, Policy()).items()}
    # A job that backs off holds nobody back, so big is first for the instances; small
    # waits behind big.
    assert first == {"refused": True, "big": True, "small": False}
