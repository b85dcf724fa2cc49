"""Deciding with warm pools, as scenarios: start on a matching pool, else on free instances,
else release pools the job does not match (oldest first, only as many as needed) before
preempting anyone; in the single queue and with quota shares."""

import copy
from dataclasses import dataclass, field

import pytest

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, Share, Strategy, WaitingJob, plan
from job_queue.scheduler.snapshot import Snapshot, WarmPool

P5 = "ml.p5.48xlarge"
NOW = 10_000.0


def waiting(
    name, priority=0, instances=1, key="a", seq=None, max_runtime=None, share=None, waited=60
):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq if seq is not None else sum(map(ord, name)),
        demand={P5: instances},
        max_runtime=max_runtime,
        share=share,
        warm_key=key,
        submitted_at=NOW - waited,
    )


def running(name, priority=0, instances=1, started=0.0, state=JobState.RUNNING, share=None):
    return ActiveJob(
        name=name,
        priority=priority,
        seq=len(name),
        demand={P5: instances},
        state=state,
        started_at=started,
        max_runtime=1000,
        share=share,
    )


def pool(name, key="a", instances=1, since=NOW - 100, expires=NOW + 500, share=None):
    return WarmPool(
        name=f"{name}-job",
        job=name,
        demand={P5: instances},
        key=key,
        since=since,
        expires_at=expires,
        share=share,
    )


@dataclass
class Scenario:
    title: str
    waiting: list
    pools: list
    active: list = field(default_factory=list)
    capacity: int = 2
    starts: list = field(default_factory=list)
    warm: dict = field(default_factory=dict)  # job -> the pool (by job that left it)
    released: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)
    shares: tuple = ()


SINGLE_QUEUE = [
    Scenario(
        "behind a reservation, a short job has an idle pool it does not match released for it",
        waiting=[
            waiting("gang", instances=2, key="g", seq=1),
            waiting("short", key="b", max_runtime=100, seq=2),
        ],
        pools=[pool("done", key="a")],
        active=[running("a", started=NOW)],
        starts=["short"],
        released=["done"],
    ),
    Scenario(
        "a job starts on the idle pool of its configuration",
        waiting=[waiting("next", key="a")],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["next"],
        warm={"next": "done"},
    ),
    Scenario(
        "of two matching pools, the oldest is taken",
        waiting=[waiting("next")],
        pools=[pool("newer", since=NOW - 10), pool("older", since=NOW - 90)],
        starts=["next"],
        warm={"next": "older"},
    ),
    Scenario(
        "a job prefers its pool to free instances",
        waiting=[waiting("next")],
        pools=[pool("done")],
        capacity=3,
        starts=["next"],
        warm={"next": "done"},
    ),
    Scenario(
        "a job that matches no pool starts on free instances; the pool stays",
        waiting=[waiting("next", key="b")],
        pools=[pool("done", key="a")],
        starts=["next"],
    ),
    Scenario(
        "no free instances: a pool the job does not match is released for it",
        waiting=[waiting("next", key="b")],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["next"],
        released=["done"],
    ),
    Scenario(
        "only as many pools as it needs, the oldest first",
        waiting=[waiting("next", key="c")],
        pools=[pool("newer", since=NOW - 10), pool("older", since=NOW - 90)],
        starts=["next"],
        released=["older"],
    ),
    Scenario(
        "a pool of another size does not match: it is released",
        waiting=[waiting("next", instances=1)],
        pools=[pool("pair", instances=2)],
        starts=["next"],
        released=["pair"],
    ),
    Scenario(
        "a pool that matches nothing (no configuration key) is released when needed",
        waiting=[waiting("next")],
        pools=[pool("unmatched", key=None)],
        active=[running("other")],
        starts=["next"],
        released=["unmatched"],
    ),
    Scenario(
        "pools are released before any running job is preempted",
        waiting=[waiting("urgent", 5, key="b")],
        pools=[pool("idle", key="a")],
        active=[running("low", 0)],
        starts=["urgent"],
        released=["idle"],
    ),
    Scenario(
        "a pool not enough alone is released with the preemption that makes up the rest",
        waiting=[waiting("urgent", 5, instances=2, key="b")],
        pools=[pool("idle", key="a")],
        active=[running("low", 0)],
        released=["idle"],
        preempted=["low"],
    ),
    Scenario(
        "a victim that frees enough alone is stopped, the pool that would not spare it kept",
        waiting=[waiting("urgent", 5, instances=2, key="b")],
        pools=[pool("idle", key="a")],
        active=[running("low", 0, instances=2)],
        capacity=3,
        preempted=["low"],
    ),
    Scenario(
        "no preemption possible: nothing is released either",
        waiting=[waiting("big", 0, instances=2, key="b")],
        pools=[pool("idle", key="a")],
        active=[running("vip", 9)],
    ),
    Scenario(
        "a later matching job does not jump ahead: the first in line takes the instances",
        waiting=[waiting("first", key="b", seq=1), waiting("matching", key="a", seq=2)],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["first"],
        released=["done"],
    ),
    Scenario(
        "an idle pool before a stop under way: released, it lets the job start now",
        waiting=[waiting("owed", 5, key="b", seq=1), waiting("matching", 0, key="a", seq=2)],
        pools=[pool("done", key="a")],
        active=[running("stopping", 0, state=JobState.PREEMPTING)],
        starts=["owed"],
        released=["done"],
    ),
    Scenario(
        "pools not enough alone are released with the stops they add up to",
        waiting=[waiting("pair", 5, instances=2, key="b")],
        pools=[pool("done", key="a")],
        active=[running("stopping", 0, state=JobState.PREEMPTING)],
        released=["done"],
    ),
    Scenario(
        "an expired pool is gone: its instances are free, nothing is released",
        waiting=[waiting("next", key="b")],
        pools=[pool("old", key="a", expires=NOW)],
        active=[running("other")],
        starts=["next"],
    ),
    Scenario(
        "nobody waiting: pools are kept",
        waiting=[],
        pools=[pool("done")],
    ),
    Scenario(
        "with preemption off, idle pools are still released for waiting work",
        waiting=[waiting("next", key="b")],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["next"],
        released=["done"],
        policy=Policy(preemption=False),
    ),
    Scenario(
        "backfill: a short job starts on its pool while a bigger job is held",
        waiting=[
            waiting("gang", 1, instances=3, key="g", seq=1),
            waiting("short", 0, key="a", seq=2, max_runtime=100),
        ],
        pools=[pool("done", key="a")],
        active=[running("vip", 9, started=NOW)],
        capacity=3,
        starts=["short"],
        warm={"short": "done"},
    ),
]


AFFINITY = Policy(warm_affinity_s=3600)

WARM_AFFINITY = [
    Scenario(
        "warm affinity looks for a match only so far behind the first in line",
        waiting=[
            waiting("first", key="b", seq=1),
            waiting("other-1", key="c", seq=2),
            waiting("other-2", key="c", seq=3),
            waiting("matching", key="a", seq=4),
        ],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["first"],
        released=["done"],
        policy=Policy(warm_affinity_s=3600, affinity_window=2),
    ),
    Scenario(
        "within the affinity window, the match further back gets the pool",
        waiting=[
            waiting("first", key="b", seq=1),
            waiting("other-1", key="c", seq=2),
            waiting("other-2", key="c", seq=3),
            waiting("matching", key="a", seq=4),
        ],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["matching"],
        warm={"matching": "done"},
        policy=Policy(warm_affinity_s=3600, affinity_window=3),
    ),
    Scenario(
        "strict order by default: the first in line gets the pool released for it",
        waiting=[waiting("first", key="b", seq=1), waiting("matching", key="a", seq=2)],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["first"],
        released=["done"],
    ),
    Scenario(
        "with warm affinity, a later job of its priority that matches starts on the pool first",
        waiting=[waiting("first", key="b", seq=1), waiting("matching", key="a", seq=2)],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["matching"],
        warm={"matching": "done"},
        policy=AFFINITY,
    ),
    Scenario(
        "warm affinity never starts a job ahead of a higher priority",
        waiting=[waiting("first", 2, key="b", seq=1), waiting("matching", 1, key="a", seq=2)],
        pools=[pool("done", key="a")],
        active=[running("other", 9)],
        starts=["first"],
        released=["done"],
        policy=AFFINITY,
    ),
    Scenario(
        "warm affinity ends for a job that has waited as long as the setting says",
        waiting=[
            waiting("first", key="b", seq=1, waited=3600),
            waiting("matching", key="a", seq=2),
        ],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["first"],
        released=["done"],
        policy=AFFINITY,
    ),
    Scenario(
        "with no later match, the first in line still gets the pool in the same pass",
        waiting=[waiting("first", key="b", seq=1), waiting("second", key="c", seq=2)],
        pools=[pool("done", key="a")],
        active=[running("other")],
        starts=["first"],
        released=["done"],
        policy=AFFINITY,
    ),
    Scenario(
        "a lower-priority job ends the wait: the earlier ones are decided before it",
        waiting=[
            waiting("first", 1, key="b", seq=1),
            waiting("same", 1, key="c", seq=2),
            waiting("lower", 0, key="a", seq=3),
        ],
        pools=[pool("done", key="a"), pool("done2", key="a", since=NOW - 50)],
        starts=["first", "same"],
        released=["done", "done2"],
        policy=AFFINITY,
    ),
]

TEAMS = (
    Share("vision", {P5: 2}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
    Share("prod", {P5: 1}, Strategy.RESERVE),
    Share("nlp", {P5: 1}, Strategy.LEND),
)

WITH_SHARES = [
    Scenario(
        "a job starts on its own share's pool",
        waiting=[waiting("v2", share="vision")],
        pools=[pool("v1", share="vision")],
        active=[
            running("p", share="prod"),
            running("n", share="nlp"),
            running("v0", share="vision"),
        ],
        capacity=4,
        starts=["v2"],
        warm={"v2": "v1"},
        shares=TEAMS,
    ),
    Scenario(
        "a job admitted to its own share's room starts on another share's matching pool, as "
        "SageMaker would start it there",
        waiting=[waiting("v2", share="vision")],
        pools=[pool("n1", share="nlp")],
        capacity=4,
        starts=["v2"],
        warm={"v2": "n1"},
        shares=TEAMS,
    ),
    Scenario(
        "another share's matching pool does not let in a job its share has no room for",
        waiting=[waiting("n2", share="nlp")],
        pools=[pool("v1", share="vision")],
        active=[running("n1", share="nlp"), running("p", share="prod")],
        capacity=4,
        shares=TEAMS,
    ),
    Scenario(
        "a share's own pool is released before it preempts within the share",
        waiting=[waiting("v-urgent", 5, key="b", share="vision")],
        pools=[pool("v1", key="a", share="vision")],
        active=[running("v-low", 0, share="vision"), running("p", share="prod")],
        capacity=4,
        starts=["v-urgent"],
        released=["v1"],
        shares=TEAMS,
    ),
    Scenario(
        "a lender's idle pool is released for a borrower",
        waiting=[waiting("v3", key="b", share="vision")],
        pools=[pool("n1", key="a", share="nlp")],
        active=[running("v1", share="vision"), running("v2", share="vision")],
        capacity=4,
        starts=["v3"],
        released=["n1"],
        shares=TEAMS,
    ),
    Scenario(
        "a RESERVE share's pool is never released for another share's job",
        waiting=[waiting("v3", key="b", share="vision")],
        pools=[pool("p1", key="a", share="prod")],
        active=[
            running("v1", share="vision"),
            running("v2", share="vision"),
            running("n", share="nlp"),
        ],
        capacity=4,
        shares=TEAMS,
    ),
    Scenario(
        "a pool on borrowed capacity is released before a borrowing job is reclaimed",
        waiting=[waiting("n2", key="b", share="nlp")],
        pools=[pool("v3", key="a", share="vision")],
        active=[
            running("v1", share="vision"),
            running("v2", share="vision"),
            running("p", share="prod"),
        ],
        capacity=4,
        starts=["n2"],
        released=["v3"],
        shares=TEAMS,
    ),
]


def check(s: Scenario) -> None:
    before = copy.deepcopy((s.waiting, s.active, s.pools))
    capacity = {P5: s.capacity}
    result = plan(Snapshot(NOW, capacity, s.active, s.pools, shares=s.shares), s.waiting, s.policy)
    assert [j.name for j in result.starts] == s.starts
    assert {name: p.job for name, p in result.warm.items()} == s.warm
    assert [r.pool.job for r in result.releases] == s.released
    assert [p.victim.name for p in result.preemptions] == s.preempted
    for release in result.releases:
        assert release.for_job in {j.name for j in s.waiting} and release.reason
    assert (s.waiting, s.active, s.pools) == before, "input was mutated"
    held = sum(a.demand[P5] for a in s.active) + sum(
        p.demand[P5] for p in s.pools if p.expires_at > NOW
    )
    cold = sum(j.demand[P5] for j in result.starts if j.name not in result.warm)
    released = sum(r.pool.demand[P5] for r in result.releases)
    stopping = sum(p.victim.demand[P5] for p in result.preemptions)
    assert held - released - stopping + cold <= s.capacity or not cold, "over capacity"


@pytest.mark.parametrize("s", SINGLE_QUEUE, ids=[s.title for s in SINGLE_QUEUE])
def test_single_queue_with_pools(s: Scenario):
    check(s)


@pytest.mark.parametrize("s", WARM_AFFINITY, ids=[s.title for s in WARM_AFFINITY])
def test_warm_affinity(s: Scenario):
    check(s)


@pytest.mark.parametrize("s", WITH_SHARES, ids=[s.title for s in WITH_SHARES])
def test_quota_shares_with_pools(s: Scenario):
    check(s)
