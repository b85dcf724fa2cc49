"""Deciding with warm pools, as scenarios: start on a matching pool, else on free instances,
else release pools the job does not match (oldest first, only as many as needed) before
preempting anyone; in the single queue and with quota shares (warm affinity:
:mod:`tests.unit.test_warm_affinity`)."""

import pytest

from job_queue.models import JobState
from job_queue.scheduler import Policy, Share, Strategy
from tests.unit.pool_scenarios import NOW, P5, Scenario, check, pool, running, waiting

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


@pytest.mark.parametrize("s", SINGLE_QUEUE, ids=[s.title for s in SINGLE_QUEUE])
def test_single_queue_with_pools(s: Scenario):
    check(s)


@pytest.mark.parametrize("s", WITH_SHARES, ids=[s.title for s in WITH_SHARES])
def test_quota_shares_with_pools(s: Scenario):
    check(s)
