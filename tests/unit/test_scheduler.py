"""The scheduling rules, as scenarios. Each row: what runs, what waits, what should happen."""

import copy
from dataclasses import dataclass, field, replace

import pytest

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Planner, Policy, WaitingJob, plan, positions
from job_queue.scheduler.snapshot import Snapshot

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
NOW = 10_000.0


def waiting(
    name, priority=0, instances=1, itype=P5, seq=None, not_before=0.0, demand=None, max_runtime=None
):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq if seq is not None else _seq(name),
        demand=demand or {itype: instances},
        not_before=not_before,
        max_runtime=max_runtime,
    )


def running(
    name,
    priority=0,
    instances=1,
    itype=P5,
    started=0.0,
    state=JobState.RUNNING,
    demand=None,
    max_runtime=None,
):
    return ActiveJob(
        name=name,
        priority=priority,
        seq=_seq(name),
        demand=demand or {itype: instances},
        state=state,
        started_at=started,
        max_runtime=max_runtime,
    )


def _seq(name):
    return sum(ord(c) * 31**i for i, c in enumerate(name)) % 10_000


@dataclass
class Scenario:
    title: str
    waiting: list
    active: list = field(default_factory=list)
    capacity: dict = field(default_factory=lambda: {P5: 2})
    starts: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)


BACKFILL = Policy(backfill=True)

SCENARIOS = [
    Scenario(
        "jobs start while there is room",
        waiting=[waiting("a"), waiting("b"), waiting("c")],
        starts=["a", "b"],
    ),
    Scenario(
        "queue order is kept: the first job that fits is the first in line",
        waiting=[waiting("high", 3, seq=9), waiting("low", 1, seq=1)],
        capacity={P5: 1},
        starts=["high"],
    ),
    Scenario(
        "a full pool of equal priority: the newcomer waits",
        waiting=[waiting("new", 1)],
        active=[running("a", 1), running("b", 1)],
    ),
    Scenario(
        "higher priority preempts the lowest-priority running job",
        waiting=[waiting("urgent", 3)],
        active=[running("mid", 2, started=1), running("low", 1, started=2)],
        preempted=["low"],
    ),
    Scenario(
        "among equal victims, the most recently started is preempted",
        waiting=[waiting("urgent", 3)],
        active=[running("old", 1, started=1), running("recent", 1, started=5)],
        preempted=["recent"],
    ),
    Scenario(
        "equal priority never preempts",
        waiting=[waiting("same", 2)],
        active=[running("a", 2), running("b", 2)],
    ),
    Scenario(
        "only as many victims as needed",
        waiting=[waiting("urgent", 5, instances=2)],
        active=[running(n, 1, started=i) for i, n in enumerate("abcd")],
        capacity={P5: 4},
        preempted=["d", "c"],
    ),
    Scenario(
        "no preemption when the victims would not let the job start",
        waiting=[waiting("big", 5, instances=2)],
        active=[running("vip", 9), running("low", 1)],
        capacity={P5: 2},
    ),
    Scenario(
        "one large victim rather than a small one it does not need",
        waiting=[waiting("urgent", 5, instances=2)],
        active=[running("small", 1, 1, started=9), running("large", 2, 2, started=1)],
        capacity={P5: 3},
        preempted=["large"],
    ),
    Scenario(
        "a stopping job counts as capacity about to free: no second preemption",
        waiting=[waiting("urgent", 3)],
        active=[running("stopping", 1, state=JobState.PREEMPTING), running("low", 1)],
    ),
    Scenario(
        "capacity about to free goes to the first in line, the next one preempts",
        waiting=[waiting("u1", 3), waiting("u2", 3)],
        active=[running("stopping", 1, state=JobState.PREEMPTING), running("low", 1)],
        preempted=["low"],
    ),
    Scenario(
        "a cancelling job also frees capacity soon",
        waiting=[waiting("next", 1)],
        active=[running("going", 1, state=JobState.CANCELLING), running("b", 1)],
    ),
    Scenario(
        "a starting job is not preempted",
        waiting=[waiting("urgent", 3)],
        active=[running("new", 1, state=JobState.STARTING), running("vip", 5)],
    ),
    Scenario(
        "preemption only among jobs of the needed instance type",
        waiting=[waiting("urgent", 3, itype=G5)],
        active=[running("p5-low", 0, itype=P5), running("g5-mid", 1, itype=G5)],
        capacity={P5: 1, G5: 1},
        preempted=["g5-mid"],
    ),
    Scenario(
        "a job that cannot start holds back later jobs of its type (FIFO)",
        waiting=[waiting("gang", 1, instances=2), waiting("small", 1)],
        active=[running("a", 1)],
    ),
    Scenario(
        "a job held back on one type does not hold back another type",
        waiting=[waiting("gang", 1, instances=2), waiting("g5", 1, itype=G5)],
        active=[running("a", 1)],
        capacity={P5: 2, G5: 1},
        starts=["g5"],
    ),
    Scenario(
        "a job backing off after a refused start does not hold back the next",
        waiting=[waiting("refused", 5, not_before=NOW + 60), waiting("next", 1)],
        capacity={P5: 1},
        starts=["next"],
    ),
    Scenario(
        "a backoff that has passed lets the job start again",
        waiting=[waiting("refused", 5, not_before=NOW - 1)],
        starts=["refused"],
    ),
    Scenario(
        "a heterogeneous job needs every group's instances",
        waiting=[waiting("hetero", 2, demand={P5: 1, G5: 2})],
        active=[running("g5-low", 1, itype=G5)],
        capacity={P5: 1, G5: 2},
        preempted=["g5-low"],
    ),
    Scenario(
        "a job of a type without capacity never starts and holds back nobody",
        waiting=[waiting("orphan", 9, itype="ml.trn1.32xlarge"), waiting("ok", 1)],
        starts=["ok"],
    ),
    Scenario(
        "with preemption off the queue is a plain capped queue",
        waiting=[waiting("urgent", 9), waiting("later", 1)],
        active=[running("low", 0)],
        capacity={P5: 1},
        policy=Policy(preemption=False),
    ),
    Scenario(
        "backfill: a short job uses the instance a gang job cannot use yet",
        waiting=[waiting("gang", 1, instances=2), waiting("short", 1, max_runtime=100)],
        active=[running("a", 1, started=NOW - 100, max_runtime=1000)],
        starts=["short"],
        policy=BACKFILL,
    ),
    Scenario(
        "backfill never runs past the time the gang job could start",
        waiting=[waiting("gang", 1, instances=2), waiting("long", 1, max_runtime=2000)],
        active=[running("a", 1, started=NOW - 100, max_runtime=1000)],
        policy=BACKFILL,
    ),
    Scenario(
        "no backfill for a job without a max runtime",
        waiting=[waiting("gang", 1, instances=2), waiting("unbounded", 1)],
        active=[running("a", 1, started=NOW - 100, max_runtime=1000)],
        policy=BACKFILL,
    ),
    Scenario(
        "no backfill when the gang job waits for a job without a max runtime",
        waiting=[waiting("gang", 1, instances=2), waiting("short", 1, max_runtime=100)],
        active=[running("a", 1, started=NOW - 100)],
        policy=BACKFILL,
    ),
    Scenario(
        "backfill reaches past several waiting jobs when it ends before the reservation",
        waiting=[
            waiting("gang", 2, instances=3),
            waiting("mid", 1, instances=2, max_runtime=5000),
            waiting("short", 0, max_runtime=100),
        ],
        active=[running("a", 2, started=NOW - 100, max_runtime=1000)],
        capacity={P5: 3},
        starts=["short"],
        policy=BACKFILL,
    ),
    Scenario(
        "a job within its minimum run time is not preempted: the urgent job waits",
        waiting=[waiting("urgent", 3)],
        active=[running("young", 1, started=NOW - 599)],
        capacity={P5: 1},
        policy=Policy(min_run_s=600),
    ),
    Scenario(
        "once its minimum run time is over, it may be preempted",
        waiting=[waiting("urgent", 3)],
        active=[running("young", 1, started=NOW - 600)],
        capacity={P5: 1},
        preempted=["young"],
        policy=Policy(min_run_s=600),
    ),
    Scenario(
        "the minimum run time shields the newest job: an older one is preempted instead",
        waiting=[waiting("urgent", 3)],
        active=[running("old", 1, started=NOW - 5000), running("young", 1, started=NOW - 10)],
        preempted=["old"],
        policy=Policy(min_run_s=600),
    ),
    Scenario(
        "capacity lowered below what runs: nothing starts, nothing is preempted for it",
        waiting=[waiting("next", 0)],
        active=[running("a", 1), running("b", 1)],
        capacity={P5: 1},
    ),
]


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.title for s in SCENARIOS])
def test_scenario(s: Scenario):
    waiting_before = copy.deepcopy(s.waiting)
    active_before = copy.deepcopy(s.active)

    result = plan(Snapshot(NOW, s.capacity, s.active), s.waiting, s.policy)

    assert [j.name for j in result.starts] == s.starts
    assert [p.victim.name for p in result.preemptions] == s.preempted
    assert s.waiting == waiting_before and s.active == active_before, "input was mutated"


def test_preemption_names_its_reason():
    seen = Snapshot(NOW, {P5: 2}, [running("low", 1), running("b", 2)])
    result = plan(seen, [waiting("urgent", 3)])
    (preemption,) = result.preemptions
    assert preemption.preemptor == "urgent"
    assert "priority 3 > 1" in preemption.reason


def test_never_plans_beyond_capacity():
    # Many jobs of every size against a small pool: what starts fits in what is free.
    jobs = [waiting(f"j{i}", priority=i % 3, instances=1 + i % 3, seq=i) for i in range(30)]
    active = [running("r", 0, instances=1)]
    result = plan(Snapshot(NOW, {P5: 4}, active), jobs)
    assert sum(j.demand[P5] for j in result.starts) + 1 <= 4


def test_position_counts_only_jobs_that_compete_for_the_same_instances():
    queue = [
        waiting("p5-a", 5),
        waiting("g5-a", 4, itype=G5),
        waiting("hetero", 3, demand={P5: 1, G5: 1}),
        waiting("p5-b", 2),
        waiting("g5-b", 1, itype=G5),
        waiting("trn", 0, itype="ml.trn1.32xlarge"),
    ]
    assert positions(queue) == [1, 1, 3, 3, 3, 1]


def test_a_reserved_type_without_free_instances_is_read_no_further():
    active = [running("a", 5, instances=2, started=NOW, max_runtime=100)]
    planner = Planner(Snapshot(NOW, {P5: 2}, active))
    planner.offer(waiting("gang", 1, instances=2))  # held: it cannot preempt priority 5
    assert planner.open_types == frozenset()


def test_backfill_looks_only_so_far_behind_a_reservation():
    policy = Policy(backfill_window=3)
    active = [running("a", 5, instances=2, started=NOW, max_runtime=100)]
    planner = Planner(Snapshot(NOW, {P5: 3}, active), policy)
    planner.offer(waiting("gang", 1, instances=3))
    for i in range(3):
        assert P5 in planner.open_types
        planner.offer(waiting(f"long{i}", 0, max_runtime=10_000))
    assert planner.open_types == frozenset()


def test_a_job_that_needs_no_capped_instances_starts_at_once_whatever_waits():
    cpu = WaitingJob("cpu", 0, 50, {}, helpers={"ml.c5.18xlarge": 40}, share="gone")
    planner = Planner(Snapshot(NOW, {P5: 1}, [running("a", 9)]))
    planner.offer(waiting("held", 1))  # cannot preempt priority 9: P5 is closed behind it
    planner.offer(replace(cpu, not_before=NOW + 60))  # backing off: not yet
    planner.offer(cpu)
    assert [j.name for j in planner.plan().starts] == ["cpu"]


def test_a_job_read_waiting_that_the_snapshot_holds_as_running_is_not_started_twice():
    """An overlapping pass preempted it after this one read the holders: this pass counts it
    on the instances it held and leaves it to the next pass."""
    seen = Snapshot(NOW, {P5: 2}, [running("x", 0)])
    preempted = replace(waiting("x", 0), state=JobState.PREEMPTED)
    result = plan(seen, [preempted, waiting("y", 0)])
    assert [j.name for j in result.starts] == ["y"]
