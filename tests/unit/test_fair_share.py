"""Fair share by recent use, as scenarios through the one pass: within a priority, the next
job comes from the submitter who used the instances least lately."""

import math
import random
from dataclasses import dataclass, field, replace

import pytest
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.workload import WorkloadJob

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, Share, Strategy, WaitingJob, plan
from job_queue.scheduler.fair_share import (
    FairShare,
    Usage,
    ended,
    fair_order,
    idle_after,
    share_account,
    standings,
)
from job_queue.scheduler.snapshot import Snapshot, WarmPool

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
NOW = 1_000_000.0
HOUR = 3600.0
FAIR = FairShare(half_life_s=HOUR)  # look-ahead: 10 minutes


def waiting(name, submitter, seq, priority=1, instances=1, itype=P5, share=None):
    return WaitingJob(name, priority, seq, {itype: instances}, submitter=submitter, share=share)


def sweep(submitter, count, first_seq=1, **kwargs):
    return [waiting(f"{submitter}-{i}", submitter, first_seq + i, **kwargs) for i in range(count)]


def running(name, submitter, since, instances=1, share=None, priority=1):
    return ActiveJob(
        name,
        priority,
        0,
        {P5: instances},
        JobState.RUNNING,
        since,
        submitter=submitter,
        share=share,
    )


def used(**instance_hours):
    """Usage of work that ended just now, in instance-hours per submitter."""
    return Usage({who: {int(NOW): hours * HOUR} for who, hours in instance_hours.items()})


@dataclass
class Scenario:
    title: str
    waiting: list
    starts: list
    active: list = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    capacity: dict = field(default_factory=lambda: {P5: 2})
    fair: FairShare = FAIR
    fifo_starts: list | None = None  # what first come, first served starts instead


SCENARIOS = [
    Scenario(
        "the 50-job sweep: the next free instance goes to the one job of someone else",
        waiting=[*sweep("alice", 50), waiting("bob-1", "bob", 51)],
        active=[running("alice-first", "alice", NOW - 2 * HOUR)],
        starts=["bob-1"],
        fifo_starts=["alice-0"],
    ),
    Scenario(
        "two heavy users: the light one goes first, then the less heavy",
        waiting=sweep("alice", 3) + sweep("carol", 3, 4) + [waiting("bob-1", "bob", 7)],
        usage=used(alice=10, carol=5),
        starts=["bob-1", "carol-0"],
        fifo_starts=["alice-0", "alice-1"],
    ),
    Scenario(
        "a weight of 2: twice the use counts as the same standing",
        waiting=sweep("carol", 2) + sweep("alice", 2, 3),
        usage=used(alice=4, carol=3),
        fair=replace(FAIR, weights=(("alice", 2.0),)),
        capacity={P5: 1},
        starts=["alice-0"],
        fifo_starts=["carol-0"],
    ),
    Scenario(
        "a weight matched by an ARN pattern",
        waiting=[
            waiting("carol-1", "arn:aws:iam::123456789012:role/carol", 1),
            waiting("team-1", "arn:aws:iam::123456789012:role/ml-team", 2),
        ],
        usage=Usage(
            {
                "arn:aws:iam::123456789012:role/carol": {int(NOW): 3 * HOUR},
                "arn:aws:iam::123456789012:role/ml-team": {int(NOW): 4 * HOUR},
            }
        ),
        fair=replace(FAIR, weights=(("arn:aws:iam::*:role/ml-*", 2.0),)),
        capacity={P5: 1},
        starts=["team-1"],
        fifo_starts=["carol-1"],
    ),
    Scenario(
        "decay after a quiet day: yesterday's heavy user is first come, first served again",
        waiting=[*sweep("alice", 2), waiting("bob-1", "bob", 3)],
        usage=Usage({"alice": {int(NOW - 86400): 40 * HOUR}}),
        capacity={P5: 1},
        starts=["alice-0"],
    ),
    Scenario(
        "the entry penalty in one pass: two idle users' bursts alternate",
        waiting=sweep("alice", 3) + sweep("bob", 3, 4),
        capacity={P5: 4},
        starts=["alice-0", "bob-0", "alice-1", "bob-1"],
        fifo_starts=["alice-0", "alice-1", "alice-2", "bob-0"],
    ),
    Scenario(
        "a bigger job's penalty is bigger: after a 4-instance job, two 1-instance ones",
        waiting=[
            waiting("alice-big", "alice", 1, instances=4),
            *sweep("alice", 1, 2),
            *sweep("bob", 3, 3),
        ],
        capacity={P5: 7},
        starts=["alice-big", "bob-0", "bob-1", "bob-2"],
        fifo_starts=["alice-big", "alice-0", "bob-0", "bob-1"],
    ),
    Scenario(
        "priority comes first: a heavy user's urgent job before a light user's",
        waiting=[waiting("alice-urgent", "alice", 1, priority=5), waiting("bob-1", "bob", 2)],
        usage=used(alice=50),
        capacity={P5: 1},
        starts=["alice-urgent"],
    ),
    Scenario(
        "a warm pool an attempt left counts as its submitter's use",
        waiting=sweep("alice", 1) + sweep("bob", 1, 2),
        capacity={P5: 1},
        starts=["bob-0"],
        fifo_starts=["alice-0"],
    ),
    Scenario(
        "instance types are separate lines: a heavy user's job on a free type starts",
        waiting=[
            *sweep("alice", 1),
            waiting("alice-g5", "alice", 2, itype=G5),
            *sweep("bob", 1, 3),
        ],
        usage=used(alice=10),
        capacity={P5: 1, G5: 1},
        starts=["bob-0", "alice-g5"],
    ),
]
# The warm-pool scenario's pool: the instance alice's last attempt left an hour ago.
ALICES_POOL = WarmPool(
    "alice-old#1", "alice-old", {P5: 1}, None, NOW - HOUR, NOW + HOUR, submitter="alice"
)


def _seen(case: Scenario) -> Snapshot:
    pools = (ALICES_POOL,) if "warm pool" in case.title else ()
    return Snapshot(NOW, case.capacity, tuple(case.active), pools, usage=case.usage)


@pytest.mark.parametrize("case", SCENARIOS, ids=lambda c: c.title)
def test_fair_share(case):
    decided = plan(_seen(case), case.waiting, Policy(fair_share=case.fair))
    assert [job.name for job in decided.starts] == case.starts
    if case.fifo_starts is not None:
        fifo = plan(_seen(case), case.waiting, Policy())
        assert [job.name for job in fifo.starts] == case.fifo_starts


def test_each_submitters_jobs_stay_first_come_first_served():
    rng = random.Random(4)
    jobs = [waiting(f"j{i}", rng.choice("abcd"), i, priority=rng.randint(0, 2)) for i in range(80)]
    jobs.sort(key=lambda j: (-j.priority, j.seq))
    usage = used(a=3, b=0.5, c=9)
    order = list(fair_order(jobs, Snapshot(NOW, {P5: 2}, usage=usage), FAIR))
    assert sorted(order, key=lambda j: j.seq) == sorted(jobs, key=lambda j: j.seq)
    assert [j.priority for j in order] == sorted((j.priority for j in order), reverse=True)
    for who in "abcd":
        mine = [(-j.priority, j.seq) for j in order if j.submitter == who]
        assert mine == sorted(mine)


def test_with_fair_share_off_submitters_change_nothing():
    """Property: with the half-life off, the pass decides as it did before fair share."""
    rng = random.Random(11)
    for _ in range(200):
        jobs = [
            waiting(f"j{i}", rng.choice(["a", "b", None]), i, rng.randint(0, 3), rng.randint(1, 2))
            for i in range(rng.randint(1, 12))
        ]
        jobs.sort(key=lambda j: (-j.priority, j.seq))
        active = [
            running(f"r{i}", rng.choice("ab"), NOW - rng.uniform(0, 9 * HOUR), priority=0)
            for i in range(rng.randint(0, 2))
        ]
        seen = Snapshot(NOW, {P5: rng.randint(2, 4)}, tuple(active), usage=used(a=5))
        anonymous = [replace(j, submitter=None) for j in jobs]
        stripped = replace(seen, active=tuple(replace(a, submitter=None) for a in active))
        assert _decisions(plan(seen, jobs, Policy())) == _decisions(
            plan(stripped, anonymous, Policy())
        )


def _decisions(decided):
    return (
        [j.name for j in decided.starts],
        [(p.victim.name, p.reason, p.lost_work_s) for p in decided.preemptions],
        [r.reason for r in decided.releases],
    )


def test_usage_decays_by_half_each_half_life():
    job = running("a", "alice", NOW - HOUR, instances=2)
    entries = ended(job, NOW - HOUR, NOW, FAIR)
    usage = Usage().added(entries)
    held = usage.of("alice", NOW, FAIR)
    assert held == pytest.approx(2 * HOUR / math.log(2) / 2)  # an hour held, decayed
    assert usage.of("alice", NOW + HOUR, FAIR) == pytest.approx(held / 2)
    assert usage.of("alice", NOW + 10 * HOUR, FAIR) == pytest.approx(held / 1024)


def test_usage_of_two_attempts_adds_up_in_any_order():
    first = ended(running("a", "alice", 0), NOW - 3 * HOUR, NOW - 2 * HOUR, FAIR)
    second = ended(running("b", "alice", 0), NOW - HOUR, NOW, FAIR)
    one_way = Usage().added(first).added(second)
    other_way = Usage().added(second).added(first)
    assert one_way.of("alice", NOW, FAIR) == pytest.approx(other_way.of("alice", NOW, FAIR))
    alone = Usage().added(second).of("alice", NOW, FAIR)
    assert one_way.of("alice", NOW, FAIR) == pytest.approx(alone * (1 + 1 / 4))


def test_a_running_job_counts_its_entry_penalty_at_once_then_what_it_held():
    just_started = Snapshot(NOW, {P5: 2}, (running("a", "alice", NOW, instances=2),))
    assert standings(just_started, FAIR).of("alice") == 2 * 600
    long_running = just_started.at(NOW + 2 * HOUR)
    assert standings(long_running, FAIR).of("alice") == pytest.approx(
        2 * HOUR / math.log(2) * (1 - 1 / 4)
    )


def test_a_share_is_charged_too():
    job = running("a", "alice", NOW - HOUR, share="research")
    usage = Usage().added(ended(job, NOW - HOUR, NOW, FAIR))
    assert usage.of(share_account("research"), NOW, FAIR) == usage.of("alice", NOW, FAIR)


def test_old_usage_is_forgotten():
    usage = Usage().added(ended(running("a", "alice", 0), 0, HOUR, FAIR))
    assert usage.forgetting(HOUR, FAIR).windows
    assert usage.forgetting(30 * HOUR, FAIR).windows == {}


def test_shares_borrow_in_order_of_their_recent_use_per_instance_of_their_limit():
    lender = Share("idle", {P5: 2}, Strategy.LEND)
    busy = Share("busy", {P5: 1}, Strategy.LEND_AND_BORROW)
    quiet = Share("quiet", {P5: 2}, Strategy.LEND_AND_BORROW)
    shares = (lender, busy, quiet)
    active = (running("b", "bob", NOW, share="busy"), running("q", "carol", NOW, share="quiet"))
    active += (running("q2", "carol", NOW, share="quiet"),)
    # busy used 3 instance-hours over a limit of 1; quiet 4 over a limit of 2.
    usage = Usage(
        {share_account("busy"): {int(NOW): 3 * HOUR}, share_account("quiet"): {int(NOW): 4 * HOUR}}
    )
    seen = Snapshot(NOW, {P5: 5}, active, shares=shares, usage=usage)
    jobs = [
        waiting("busy-1", "bob", 1, share="busy"),
        waiting("quiet-1", "carol", 2, share="quiet"),
    ]
    lent_one = replace(seen, active=(*active, running("i", "dan", NOW, share="idle")))
    decided = plan(lent_one, jobs, Policy(fair_share=FAIR))
    assert [j.name for j in decided.starts] == ["quiet-1"]
    assert [j.name for j in plan(lent_one, jobs, Policy()).starts] == ["busy-1"]


# -- the bound: nobody waits forever ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_a_heavy_users_job_starts_within_the_stated_bound_while_newcomers_keep_arriving(seed):
    """Alice's long job holds the one instance while she queues another; newcomers who have
    used nothing arrive faster than the instance can serve them. First come, first served
    starts her job when her long one ends; fair share lets newcomers go first, but once her
    standing has decayed below one instance for the look-ahead (idle_after) her job is
    next at the first free instance: it starts at most idle_after + one job's run later."""
    rng = random.Random(seed)
    fair = FairShare(half_life_s=rng.choice([600.0, 1800.0, HOUR]))
    long_run = rng.uniform(3, 12) * HOUR
    run = rng.uniform(0.3, 1.5) * HOUR
    jobs = [
        WorkloadJob("alice-long", 0, long_run, 1, P5, 1, submitter="alice"),
        WorkloadJob("alice-next", 60, run, 1, P5, 1, submitter="alice"),
    ]
    arrivals = int((long_run + 40 * fair.half_life_s) / (run / 2))
    jobs += [
        WorkloadJob(f"new-{i}", 120 + i * run / 2, run, 1, P5, 1, submitter=f"newcomer-{i}")
        for i in range(arrivals)
    ]
    result = simulate(jobs, SimSettings({P5: 1}, policy=Policy(fair_share=fair)))
    started = {r.spec.name: r.first_start_s for r in result.jobs}
    alice_used = fair.held(1, long_run)  # when her long job ends
    bound = long_run + idle_after(alice_used, fair) + run
    assert long_run < started["alice-next"] <= bound
    fifo = simulate(jobs, SimSettings({P5: 1}))
    assert {r.spec.name: r.first_start_s for r in fifo.jobs}["alice-next"] == long_run
