"""Budgets: what a share or a submitter has spent in its rolling window, and what the pass does
with the jobs of one that is spent (they wait, or run only on what nobody else wants, first
to be preempted)."""

import pytest

from job_queue.models import JobState
from job_queue.scheduler import Policy, Snapshot, WaitingJob, plan
from job_queue.scheduler.budgets import (
    DAY,
    LOWEST,
    Budget,
    Holder,
    Standing,
    Unit,
    WhenSpent,
    by_day,
    lowered,
    standing,
    standings,
    warnings,
)
from job_queue.scheduler.shares import Share, Strategy
from job_queue.scheduler.snapshot import ActiveJob, WarmPool
from job_queue.scheduler.waiting_for import Reason

P5 = "ml.p5.48xlarge"
TODAY = 20_000  # days since the epoch
NOW = TODAY * DAY + 12 * 3600.0  # noon
ALICE, BOB = Holder("submitter", "alice"), Holder("submitter", "bob")


def hours(h: float) -> float:
    return h * 3600.0


def flat(_key: str) -> float:
    return 10.0  # dollars per instance-hour


@pytest.mark.parametrize(
    ("title", "start", "end", "expected"),
    [
        ("within one day", NOW, NOW + 60, {TODAY: 60.0}),
        (
            "across midnight: each day gets its part",
            TODAY * DAY - 600,
            TODAY * DAY + 900,
            {TODAY - 1: 600.0, TODAY: 900.0},
        ),
        ("nothing held, nothing counted", NOW, NOW, {}),
    ],
)
def test_time_is_split_by_utc_day(title, start, end, expected):
    assert by_day(start, end) == expected


@pytest.mark.parametrize(
    ("title", "budget", "spending", "spent", "frees_at"),
    [
        (
            "under budget: nothing frees because nothing is spent",
            Budget(100),
            {TODAY: {P5: hours(40)}},
            40.0,
            None,
        ),
        (
            "spent: frees when the oldest day that leaves it under budget leaves the window",
            Budget(100, window_days=30),
            {TODAY - 20: {P5: hours(30)}, TODAY - 10: {P5: hours(50)}, TODAY: {P5: hours(30)}},
            110.0,
            (TODAY - 20 + 30) * DAY,
        ),
        (
            "days older than the window count for nothing",
            Budget(100, window_days=7),
            {TODAY - 7: {P5: hours(500)}, TODAY - 6: {P5: hours(20)}},
            20.0,
            None,
        ),
        (
            "reaching the budget exactly spends it",
            Budget(50, window_days=7),
            {TODAY - 2: {P5: hours(50)}},
            50.0,
            (TODAY - 2 + 7) * DAY,
        ),
        (
            "today alone over budget: it frees when today leaves the window",
            Budget(10, window_days=2),
            {TODAY: {P5: hours(11)}},
            11.0,
            (TODAY + 2) * DAY,
        ),
        (
            "a budget in dollars prices each instance-hour",
            Budget(500, Unit.DOLLARS),
            {TODAY: {P5: hours(60)}},
            600.0,
            (TODAY + 30) * DAY,
        ),
    ],
)
def test_where_a_holder_stands(title, budget, spending, spent, frees_at):
    found = standing(ALICE, budget, [spending], NOW, flat)
    assert found.spent == pytest.approx(spent)
    assert found.frees_at == frees_at
    assert found.is_spent == (spent >= budget.amount)


def test_work_in_progress_and_idle_pools_count_toward_their_holders():
    running = ActiveJob("a-1", 0, 1, {P5: 2}, JobState.RUNNING, NOW - hours(3), submitter="alice")
    pool = WarmPool("b-0", "b", {P5: 1}, "cfg", NOW - hours(1), NOW + 600, submitter="bob")
    seen = Snapshot(NOW, {P5: 4}, (running,), (pool,))
    found = standings({ALICE: Budget(10), BOB: Budget(10)}, {}, seen, flat)
    assert [(s.holder, s.spent) for s in found] == [(ALICE, 6.0), (BOB, 1.0)]


def job(name, priority=0, seq=1, submitter="alice", count=1, share=None) -> WaitingJob:
    return WaitingJob(name, priority, seq, {P5: count}, submitter=submitter, share=share)


def running(name, priority=0, seq=0, submitter="bob", count=1, share=None) -> ActiveJob:
    return ActiveJob(
        name, priority, seq, {P5: count}, JobState.RUNNING, NOW - hours(1), share=share,
        submitter=submitter,
    )  # fmt: skip


def spent_standing(holder=ALICE, when=WhenSpent.WAIT, amount=100.0) -> Standing:
    return Standing(holder, Budget(amount, when_spent=when), 120.0, NOW + DAY)


def test_a_spent_budget_that_waits_holds_its_jobs_and_nobody_else():
    seen = Snapshot(NOW, {P5: 2}, budgets=(spent_standing(),))
    decided = plan(seen, [job("alice-1", priority=5, count=2), job("bob-1", 0, 2, "bob")])
    assert [j.name for j in decided.starts] == ["bob-1"]
    why = decided.waiting["alice-1"]
    assert why.code is Reason.BUDGET and why.until == NOW + DAY
    assert "submitter alice spent its budget: 120.0 of 100 instance-hours" in why.message


def test_a_budget_not_yet_spent_changes_nothing():
    under = Standing(ALICE, Budget(100), 99.0)
    seen = Snapshot(NOW, {P5: 1}, budgets=(under,))
    assert [j.name for j in plan(seen, [job("alice-1")]).starts] == ["alice-1"]


def test_jobs_on_uncapped_types_only_are_not_held_by_a_budget():
    cpu = WaitingJob("alice-cpu", 0, 1, {}, submitter="alice", helpers={"ml.m5.xlarge": 1})
    seen = Snapshot(NOW, {P5: 1}, budgets=(spent_standing(),))
    assert [j.name for j in plan(seen, [cpu]).starts] == ["alice-cpu"]


LOW = WhenSpent.LOWEST_PRIORITY


@pytest.mark.parametrize(
    ("title", "capacity", "active", "waiting", "starts", "preempted"),
    [
        (
            "it goes after every other job, even one of lower priority",
            {P5: 1},
            (),
            [job("alice-1", priority=9), job("bob-1", 0, 2, "bob")],
            ["bob-1"],
            [],
        ),
        (
            "it runs on what nobody else wants",
            {P5: 2},
            (),
            [job("alice-1", priority=9), job("bob-1", 0, 2, "bob")],
            ["bob-1", "alice-1"],
            [],
        ),
        (
            "it never preempts, whatever its priority",
            {P5: 1},
            (running("bob-run", priority=0),),
            [job("alice-1", priority=9)],
            [],
            [],
        ),
        (
            "its running job is preempted by a job of any priority",
            {P5: 1},
            (running("alice-run", priority=9, submitter="alice"),),
            [job("bob-1", priority=0, submitter="bob")],
            [],
            ["alice-run"],
        ),
        (
            "its later jobs wait behind its first, first come, first served",
            {P5: 2},
            (running("bob-run"),),
            [job("alice-big", 0, 1, count=2), job("alice-small", 0, 2)],
            [],
            [],
        ),
    ],
)
def test_a_spent_budget_at_the_lowest_priority(title, capacity, active, waiting, starts, preempted):
    seen = Snapshot(NOW, capacity, active, budgets=(spent_standing(when=LOW),))
    decided = plan(seen, waiting, Policy(backfill=False))
    assert [j.name for j in decided.starts] == starts
    assert [p.victim.name for p in decided.preemptions] == preempted
    for name in {j.name for j in waiting} - set(starts):
        if name.startswith("alice"):
            assert decided.waiting[name].code is Reason.BUDGET
            assert "nobody else wants" in decided.waiting[name].message


def test_running_jobs_of_a_spent_holder_count_as_the_lowest_priority():
    seen = Snapshot(
        NOW, {P5: 2}, (running("alice-run", 9, submitter="alice"), running("bob-run", 1)),
        budgets=(spent_standing(when=LOW),),
    )  # fmt: skip
    assert [(j.name, j.priority) for j in lowered(seen).active] == [
        ("alice-run", LOWEST),
        ("bob-run", 1),
    ]


SHARES = (
    Share("A", {P5: 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
    Share("B", {P5: 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
)
A_SPENT = Standing(Holder("share", "A"), Budget(10, when_spent=LOW), 12.0, NOW + DAY)


def test_a_spent_share_borrows_only_after_every_other_borrower():
    seen = Snapshot(NOW, {P5: 2}, shares=SHARES, budgets=(A_SPENT,))
    waiting = [
        job("a-1", 0, 1, "alice", share="A"),
        job("a-2", 0, 2, "alice", share="A"),
        job("b-1", 0, 3, "bob", share="B"),
        job("b-2", 0, 4, "bob", share="B"),
    ]
    decided = plan(seen, waiting)
    assert sorted(j.name for j in decided.starts) == ["b-1", "b-2"]
    assert decided.waiting["a-1"].code is Reason.BUDGET


def test_a_spent_share_does_not_reclaim_what_it_lent():
    borrower = running("b-borrow", 0, submitter="bob", share="B")
    seen = Snapshot(
        NOW, {P5: 2}, (running("b-own", 0, share="B"), borrower),
        shares=SHARES, budgets=(A_SPENT,),
    )  # fmt: skip
    decided = plan(seen, [job("a-1", 5, 1, "alice", share="A")])
    assert decided.starts == () and decided.preemptions == ()
    assert decided.waiting["a-1"].code is Reason.BUDGET


A = "submitter alice"


@pytest.mark.parametrize(
    ("title", "fractions", "warned", "levels", "sent"),
    [
        ("under 80%: nothing", [0.5], {}, {}, []),
        ("reaching 80% warns", [0.85], {}, {A: 0.8}, [0.8]),
        ("still at 80%: warned already", [0.9], {A: 0.8}, {A: 0.8}, []),
        ("spent warns again", [1.2], {A: 0.8}, {A: 1.0}, [1.0]),
        ("spent at once: one warning, that it is spent", [1.0], {}, {A: 1.0}, [1.0]),
        ("back under 80%: forgotten, to warn again", [0.3], {A: 1.0}, {}, []),
    ],
)  # fmt: skip
def test_warnings_once_per_level_reached(title, fractions, warned, levels, sent):
    now = [Standing(ALICE, Budget(100), 100 * f) for f in fractions]
    found, send = warnings(now, warned)
    assert found == levels
    assert [level for _, level in send] == sent
