"""Quota shares with every other rule of the pass, as scenarios: backfill, warm affinity,
victims chosen by the work they lose and the minimum run time work within shares exactly as
they do in the single queue (one pass for every layout); training plans with shares:
:mod:`tests.unit.test_shares_with_plans`."""

import copy
from dataclasses import dataclass, field

import pytest

from job_queue.models import Checkpointing
from job_queue.scheduler import Policy, plan
from job_queue.scheduler.snapshot import Snapshot
from tests.unit.share_jobs import NOW, P5, TEAMS, pool, running, waiting


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
