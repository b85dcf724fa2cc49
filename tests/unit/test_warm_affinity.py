"""Warm affinity, as scenarios: a job that would have idle pools released for it first lets
the later jobs of its priority that match them start on them, within its bounds."""

import pytest

from job_queue.scheduler import Policy
from tests.unit.pool_scenarios import NOW, Scenario, check, pool, running, waiting

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


@pytest.mark.parametrize("s", WARM_AFFINITY, ids=[s.title for s in WARM_AFFINITY])
def test_warm_affinity(s: Scenario):
    check(s)
