"""Quota shares, as scenarios: own capacity, borrowing, reclaim, in-share preemption."""

import copy
from dataclasses import dataclass, field, replace

import pytest

from job_queue.models import JobState
from job_queue.scheduler import (
    ActiveJob,
    Planner,
    Policy,
    Share,
    ShareLedger,
    Strategy,
    WaitingJob,
    plan,
)
from job_queue.scheduler.snapshot import Snapshot

G5 = "ml.g5.xlarge"
P5 = "ml.p5.48xlarge"
NOW = 10_000.0
LEND, BORROW, RESERVE = Strategy.LEND, Strategy.LEND_AND_BORROW, Strategy.RESERVE


def share(name, strategy, instances=1, borrow_limit=-1, in_share=False, itype=G5):
    return Share(name, {itype: instances}, strategy, borrow_limit, in_share)


# The layout: three shares of one ml.g5.xlarge each.
QS = [
    share("QS1", BORROW, borrow_limit=200, in_share=True),
    share("QS2", LEND),
    share("QS3", RESERVE),
]


def waiting(name, share, priority=0, instances=1, seq=None, itype=G5):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq if seq is not None else len(name) * 100 + sum(map(ord, name)),
        demand={itype: instances},
        share=share,
    )


def running(name, share, priority=0, instances=1, started=0.0, state=JobState.RUNNING):
    return ActiveJob(
        name=name,
        priority=priority,
        seq=sum(map(ord, name)),
        demand={G5: instances},
        state=state,
        started_at=started,
        share=share,
    )


@dataclass
class Scenario:
    title: str
    waiting: list
    active: list = field(default_factory=list)
    shares: list = field(default_factory=lambda: QS)
    starts: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)


SCENARIOS = [
    Scenario(
        "issue step 1: high runs on its own share, med borrows QS2's idle instance, low waits",
        waiting=[
            waiting("qs1_job_high", "QS1", 3, seq=1),
            waiting("qs1_job_med", "QS1", 2, seq=2),
            waiting("qs1_job_low", "QS1", 1, seq=3),
        ],
        starts=["qs1_job_high", "qs1_job_med"],
    ),
    Scenario(
        "issue step 2: QS2's own job reclaims its instance from the borrower, whatever the "
        "priorities",
        waiting=[waiting("qs1_job_low", "QS1", 1, seq=3), waiting("qs2_job_1", "QS2", 1, seq=4)],
        active=[
            running("qs1_job_high", "QS1", 3, started=100),
            running("qs1_job_med", "QS1", 2, started=100),
        ],
        preempted=["qs1_job_med"],
    ),
    Scenario(
        "issue step 3: in-share preemption lets a job raised to priority 4 stop its share's "
        "priority-3 job",
        waiting=[
            waiting("qs1_job_low", "QS1", 4, seq=3),
            waiting("qs1_job_med", "QS1", 2, seq=2),
        ],
        active=[
            running("qs1_job_high", "QS1", 3, started=100),
            running("qs2_job_1", "QS2", 1, started=200),
        ],
        preempted=["qs1_job_high"],
    ),
    Scenario(
        "no loop: the displaced borrower does not preempt the job that reclaimed from it",
        waiting=[waiting("qs1_job_med", "QS1", 2, seq=2)],
        active=[
            running("qs1_job_high", "QS1", 3, started=100),
            running("qs2_job_1", "QS2", 1, started=200),
        ],
        preempted=[],
    ),
    Scenario(
        "the reclaimed instance goes to the lender's job even while the borrower waits first",
        waiting=[waiting("qs1_job_med", "QS1", 2, seq=2), waiting("qs2_job_1", "QS2", 1, seq=4)],
        active=[
            running("qs1_job_high", "QS1", 3, started=100),
            running("qs1_job_med_old", "QS1", 2, started=100, state=JobState.PREEMPTING),
        ],
        starts=[],  # qs2_job_1 takes the instance being freed and starts once the stop ends
    ),
    Scenario(
        "in-share preemption off: a higher-priority job waits for its share's capacity",
        waiting=[waiting("urgent", "QS2", 5)],
        active=[running("steady", "QS2", 1)],
    ),
    Scenario(
        "in-share preemption never reaches into another share",
        waiting=[waiting("urgent", "QS1", 9)],
        active=[
            running("mine", "QS1", 9),
            running("theirs", "QS2", 0),
            running("reserved", "QS3", 0),
        ],
    ),
    Scenario(
        "RESERVE capacity is never lent, even when idle",
        waiting=[waiting("a", "QS1", 1, seq=1), waiting("b", "QS1", 1, seq=2)],
        active=[running("lend-user", "QS2", 0)],
        starts=["a"],
    ),
    Scenario(
        "a RESERVE share uses its own idle instance at once",
        waiting=[waiting("r", "QS3", 0)],
        active=[running("x", "QS1", 5), running("y", "QS1", 5)],
        starts=["r"],
    ),
    Scenario(
        "a LEND share never borrows",
        waiting=[waiting("two", "QS2", 1, seq=1), waiting("three", "QS2", 1, seq=2)],
        shares=[share("QS1", LEND), share("QS2", LEND)],
        starts=["two"],
    ),
    Scenario(
        "the borrow limit caps borrowing: 100% of one instance is one more",
        waiting=[waiting(f"j{i}", "B", 1, seq=i) for i in range(4)],
        shares=[share("B", BORROW, borrow_limit=100), share("L", LEND, instances=3)],
        starts=["j0", "j1"],
    ),
    Scenario(
        "borrow limit 0: a LEND_AND_BORROW share borrows nothing",
        waiting=[waiting("j0", "B", seq=0), waiting("j1", "B", seq=1)],
        shares=[share("B", BORROW, borrow_limit=0), share("L", LEND, instances=3)],
        starts=["j0"],
    ),
    Scenario(
        "borrow limit -1: unlimited, up to all idle lent capacity",
        waiting=[waiting(f"j{i}", "B", seq=i) for i in range(5)],
        shares=[share("B", BORROW), share("L", LEND, instances=3)],
        starts=["j0", "j1", "j2", "j3"],
    ),
    Scenario(
        "lenders' own jobs come before borrowers in the same pass, whatever the priorities",
        waiting=[waiting("borrower", "B", 9, seq=1), waiting("owner", "L", 0, seq=2)],
        shares=[share("B", BORROW), share("L", LEND)],
        active=[running("own", "B", 1)],
        starts=["owner"],
    ),
    Scenario(
        "a borrower that finds nothing to borrow falls back on in-share preemption",
        waiting=[waiting("borrower", "QS1", 9, seq=1), waiting("owner", "QS2", 0, seq=2)],
        active=[running("own", "QS1", 1)],
        starts=["owner"],
        preempted=["own"],
    ),
    Scenario(
        "borrowing idle capacity comes before in-share preemption",
        waiting=[waiting("borrower", "QS1", 9)],
        active=[running("own", "QS1", 1)],
        starts=["borrower"],
    ),
    Scenario(
        "reclaim stops only as many borrowed jobs as needed: lowest priority, then newest",
        waiting=[waiting("owner", "L", 0)],
        shares=[share("B", BORROW), share("L", LEND, instances=2)],
        active=[
            running("b-first", "B", 3, started=10),
            running("b-new", "B", 5, started=300),
            running("b-low", "B", 2, started=100),
        ],
        preempted=["b-low"],
    ),
    Scenario(
        "reclaim among equal priorities: the most recently started",
        waiting=[waiting("owner", "L", 0)],
        shares=[share("B", BORROW), share("L", LEND)],
        active=[running("b-old", "B", 1, started=10), running("b-new", "B", 1, started=300)],
        preempted=["b-new"],
    ),
    Scenario(
        "no reclaim for a job bigger than its share's idle limit",
        waiting=[waiting("big", "L", 0, instances=2)],
        shares=[share("B", BORROW), share("L", LEND, instances=2)],
        active=[running("b-own", "B", 1), running("b-2", "B", 1), running("l-1", "L", 1)],
    ),
    Scenario(
        "a lowered limit makes the share's jobs over it reclaimable",
        waiting=[waiting("owner", "L", 0)],
        shares=[share("B", BORROW, instances=1), share("L", LEND, instances=1)],
        active=[running("b-1", "B", 1, started=10), running("b-2", "B", 1, started=20)],
        preempted=["b-2"],
    ),
    Scenario(
        "a job of a removed share never starts; its running jobs are reclaimable",
        waiting=[waiting("orphan", "gone", 9, seq=1), waiting("owner", "L", 0, seq=2)],
        shares=[share("L", LEND)],
        active=[running("old", "gone", 9)],
        preempted=["old"],
    ),
    Scenario(
        "Preemption=false turns off reclaim and in-share preemption",
        waiting=[waiting("owner", "QS2", 0), waiting("urgent", "QS1", 9)],
        active=[running("b-own", "QS1", 1), running("b-borrowed", "QS1", 1)],
        policy=Policy(preemption=False),
    ),
    Scenario(
        "FIFO within a share: a later small job does not pass a held one",
        waiting=[waiting("big", "S", 0, instances=2, seq=1), waiting("small", "S", 0, seq=2)],
        shares=[share("S", RESERVE, instances=2), share("T", RESERVE, instances=1)],
        active=[running("s-1", "S", 1)],
    ),
    Scenario(
        "a held job of one share does not hold back another share",
        waiting=[waiting("big", "S", 0, instances=2, seq=1), waiting("t", "T", 0, seq=2)],
        shares=[share("S", RESERVE, instances=2), share("T", RESERVE, instances=1)],
        active=[running("s-1", "S", 1)],
        starts=["t"],
    ),
]


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.title for s in SCENARIOS])
def test_scenario(s: Scenario):
    waiting_before, active_before = copy.deepcopy(s.waiting), copy.deepcopy(s.active)
    capacity = {G5: sum(x.capacity.get(G5, 0) for x in s.shares)}

    result = plan(Snapshot(NOW, capacity, s.active, shares=s.shares), s.waiting, s.policy)

    assert [j.name for j in result.starts] == s.starts
    assert [p.victim.name for p in result.preemptions] == s.preempted
    assert s.waiting == waiting_before and s.active == active_before, "input was mutated"


def test_reclaim_names_the_share():
    active = [running("qs1_job_high", "QS1", 3), running("qs1_job_med", "QS1", 2)]
    result = plan(Snapshot(NOW, {G5: 3}, active, shares=QS), [waiting("qs2_job_1", "QS2", 1)])
    assert result.preemptions[0].reason == "reclaimed for qs2_job_1 of share QS2"


def test_usage_shows_what_each_share_lends_and_borrows():
    ledger = ShareLedger(QS, [running("h", "QS1", 3), running("m", "QS1", 2)])
    rows = {(u.share, u.in_use, u.borrowed, u.lent) for u in ledger.usage()}
    assert rows == {("QS1", 2, 1, 0), ("QS2", 0, 0, 1), ("QS3", 0, 0, 0)}


def test_without_shares_the_single_queue_decides():
    jobs = [replace(waiting("a", None), share=None)]
    assert [j.name for j in plan(Snapshot(NOW, {G5: 1}), jobs).starts] == ["a"]


def test_a_shares_queue_is_read_only_while_one_of_its_jobs_could_start():
    layout = [share("B", BORROW), share("L", LEND), share("R", RESERVE)]
    planner = Planner(Snapshot(NOW, {}, [running("b-own", "B", 1)], shares=layout))
    assert planner.is_open(G5, "B")  # may borrow L's idle instance
    assert planner.is_open(G5, "L") and planner.is_open(G5, "R")  # their own idle instances
    assert not planner.is_open(G5, None) and not planner.is_open(G5, "gone")
    planner.offer(waiting("l-1", "L", seq=1))  # L's own job takes L's instance
    assert not planner.is_open(G5, "L")  # nothing left it could take
    assert not planner.is_open(G5, "B")  # nothing to borrow, no in-share preemption
    assert planner.is_open(G5, "R") and planner.is_open("*", "R")
    assert planner.open_types == {G5}
    planner.offer(waiting("r-1", "R", seq=2))
    assert planner.open_types == frozenset()


def test_a_share_that_may_not_borrow_stays_open_while_it_may_preempt_within_itself():
    # S0 may not borrow (limit 0 %) but preempts within itself; S1's big job is held first.
    shares = [
        Share("S0", {G5: 1}, BORROW, borrow_limit=0, in_share_preemption=True),
        Share("S1", {G5: 1}, BORROW),
    ]
    active = [running("low", "S0", 0, started=NOW)]
    planner = Planner(Snapshot(NOW, {}, active, shares=shares))
    planner.offer(waiting("big", "S1", 1, instances=2, seq=1))
    assert planner.is_open(G5, "S0"), "an urgent S0 job could still preempt low"
    planner.offer(waiting("urgent", "S0", 1, seq=2))
    assert [p.victim.name for p in planner.plan().preemptions] == ["low"]
