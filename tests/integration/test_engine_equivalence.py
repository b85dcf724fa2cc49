"""The fast engine decides exactly as the real handler, store and SageMaker emulation do."""

import io

import pytest
from tjq.simulate.engine import Decision, SimSettings, simulate
from tjq.simulate.handler_engine import (
    decisions_through_handler,
    replay_through_handler,
    sorted_decisions,
)
from tjq.simulate.usage import sim_usage
from tjq.simulate.workload import parse_workload

from job_queue.costs import Prices
from job_queue.scheduler import Policy, Share, Strategy, total_capacity
from job_queue.scheduler.budgets import Budget, Holder, WhenSpent
from job_queue.scheduler.fair_share import FairShare
from job_queue.usage_report import Window, usage_report

G5 = "ml.g5.xlarge"
P5 = "ml.p5.48xlarge"
LOWEST = WhenSpent.LOWEST_PRIORITY

BLOG = """name,submit_s,duration_s,priority,instance_type,instance_count
job1,0,600,1,ml.p5.48xlarge,1
job2,0,600,2,ml.p5.48xlarge,1
job3,0,600,1,ml.p5.48xlarge,1
job4,300,600,3,ml.p5.48xlarge,1
"""

MIXED = """name,submit_s,duration_s,priority,instance_type,instance_count,checkpoint_s,max_runtime_s
train-a,0,900,1,ml.p5.48xlarge,2,,
eval-b,10,300,0,ml.g5.xlarge,1,,
eval-c,20,400,0,ml.g5.xlarge,2,100,
urgent-d,120,200,5,ml.p5.48xlarge,1,,
sweep-e,130,500,2,ml.g5.xlarge,2,,
big-f,200,300,3,ml.p5.48xlarge,3,,
low-g,210,700,0,ml.p5.48xlarge,1,60,
capped-h,220,900,4,ml.g5.xlarge,1,,250
late-i,700,100,5,ml.g5.xlarge,3,,
"""

CHECKPOINTS = """name,submit_s,duration_s,priority,instance_type,instance_count,checkpoint_s
none-a,0,2000,1,ml.p5.48xlarge,1,
stop-b,10,2000,1,ml.p5.48xlarge,1,stop
hourly-c,20,5000,1,ml.p5.48xlarge,1,600
urgent-d,700,300,5,ml.p5.48xlarge,1,
urgent-e,1300,300,5,ml.p5.48xlarge,2,
none-f,1400,500,1,ml.p5.48xlarge,1,
"""


@pytest.mark.parametrize(
    ("workload", "capacity", "stop", "start"),
    [
        (BLOG, {"ml.p5.48xlarge": 2}, 60.0, 0.0),
        (MIXED, {"ml.p5.48xlarge": 3, "ml.g5.xlarge": 3}, 45.0, 15.0),
        (CHECKPOINTS, {"ml.p5.48xlarge": 3}, 30.0, 20.0),
    ],
    ids=[
        "the blog's scenario",
        "preemptions, two types, multi-instance jobs",
        "victims by the work they would lose: on stop, at an interval, none",
    ],
)
def test_both_engines_make_identical_decisions(workload, capacity, stop, start):
    jobs = parse_workload(io.StringIO(workload), capacity)
    settings = SimSettings(capacity, stop_latency=stop, start_latency=start)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    assert any(d.action == "preempt" for d in real)


BACKFILL = """name,submit_s,duration_s,priority,instance_type,instance_count,max_runtime_s
long-a,0,1000,1,ml.p5.48xlarge,2,1200
gang-b,10,500,1,ml.p5.48xlarge,3,600
short-c,20,200,0,ml.p5.48xlarge,1,300
too-long-d,30,900,0,ml.p5.48xlarge,1,2000
short-e,40,100,0,ml.p5.48xlarge,1,100
"""


def test_both_engines_backfill_alike():
    capacity = {"ml.p5.48xlarge": 3}
    jobs = parse_workload(io.StringIO(BACKFILL), capacity)
    settings = SimSettings(
        capacity, stop_latency=30.0, policy=Policy(backfill=True, start_allowance_s=60.0)
    )
    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    started = {d.job: d.time for d in real if d.action == "start"}
    # short-c fits in the free instance and ends before gang-b could start; too-long-d
    # would not, so it waits for its turn after gang-b.
    assert started["short-c"] == 20 and started["too-long-d"] > started["gang-b"]
    assert set(states.values()) == {"completed"}


SHARED = """name,submit_s,duration_s,priority,instance_type,instance_count,share
qs1-high,0,600,3,ml.g5.xlarge,1,QS1
qs1-med,0,600,2,ml.g5.xlarge,1,QS1
qs1-low,0,600,1,ml.g5.xlarge,1,QS1
qs2-one,100,300,1,ml.g5.xlarge,1,QS2
qs1-urgent,150,200,4,ml.g5.xlarge,1,QS1
qs3-gang,200,400,0,ml.g5.xlarge,2,QS3
qs2-two,250,100,2,ml.g5.xlarge,1,QS2
"""


def test_both_engines_share_lend_reclaim_and_preempt_alike():
    shares = (
        Share("QS1", {G5: 1}, Strategy.LEND_AND_BORROW, 200, in_share_preemption=True),
        Share("QS2", {G5: 1}, Strategy.LEND),
        Share("QS3", {G5: 2}, Strategy.RESERVE),
    )
    capacity = total_capacity(shares)
    jobs = parse_workload(io.StringIO(SHARED), capacity, shares)
    settings = SimSettings(capacity, stop_latency=40.0, start_latency=10.0, shares=shares)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    preempted = {d.job for d in real if d.action == "preempt"}
    assert {"qs1-med", "qs1-high"} <= preempted  # a reclaim, then in-share preemption


WARM = """name,submit_s,duration_s,priority,instance_type,instance_count,keep_alive_s,warm_key
first-a,0,300,1,ml.p5.48xlarge,1,120,team-a
first-b,0,500,1,ml.p5.48xlarge,1,120,team-b
again-a,350,300,1,ml.p5.48xlarge,1,120,team-a
other-c,360,200,1,ml.p5.48xlarge,1,,team-c
urgent-a,400,100,5,ml.p5.48xlarge,1,120,team-a
late-b,1500,100,1,ml.p5.48xlarge,1,0,team-b
pair-a,1600,200,2,ml.p5.48xlarge,2,60,team-a
"""


@pytest.mark.parametrize(
    "policy",
    [Policy(), Policy(warm_affinity_s=3600)],
    ids=["strict order", "warm affinity"],
)
def test_both_engines_keep_reuse_and_release_warm_pools_alike(policy):
    capacity = {"ml.p5.48xlarge": 2}
    jobs = parse_workload(io.StringIO(WARM), capacity)
    settings = SimSettings(
        capacity,
        stop_latency=30.0,
        start_latency=120.0,
        warm_start_latency=20.0,
        keep_alive_s=90,
        policy=policy,
    )
    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    warm = {j.spec.name for j in fast.jobs if any(a.warm for a in j.attempts)}
    assert {"again-a", "urgent-a"} <= warm  # on first-a's pool, then on a preempted one's
    assert any(p.ended_by == "released" for p in fast.pools)


AFFINITY = """name,submit_s,duration_s,priority,instance_type,instance_count,keep_alive_s,warm_key
first-a,0,300,1,ml.p5.48xlarge,1,300,team-a
other-x,100,200,1,ml.p5.48xlarge,1,300,team-x
again-a,110,200,1,ml.p5.48xlarge,1,300,team-a
"""


def test_both_engines_let_a_warm_match_go_first_alike_with_warm_affinity():
    capacity = {"ml.p5.48xlarge": 1}
    jobs = parse_workload(io.StringIO(AFFINITY), capacity)
    settings = SimSettings(
        capacity, start_latency=120.0, warm_start_latency=20.0, policy=Policy(warm_affinity_s=600)
    )
    fast = simulate(jobs, settings)
    real, _ = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    started = {d.job: d.time for d in real if d.action == "start"}
    # first-a ends at 420 (120 s cold start, 300 s of work): again-a starts on its pool,
    # ahead of other-x, which has waited 320 s of the 600 s it may be passed over.
    assert started["again-a"] == 420 and started["other-x"] > started["again-a"]


SUBMITTERS = """name,submit_s,duration_s,priority,instance_type,instance_count,submitter
sweep-1,0,1800,1,ml.p5.48xlarge,1,alice
sweep-2,0,1800,1,ml.p5.48xlarge,1,alice
sweep-3,0,1800,1,ml.p5.48xlarge,1,alice
sweep-4,0,1800,1,ml.p5.48xlarge,1,alice
sweep-5,0,1800,1,ml.p5.48xlarge,1,alice
bob-1,60,1200,1,ml.p5.48xlarge,1,bob
carol-gang,120,900,1,ml.p5.48xlarge,2,carol
bob-2,300,600,1,ml.p5.48xlarge,1,bob
urgent,2000,300,5,ml.p5.48xlarge,1,carol
late-alice,2100,600,1,ml.p5.48xlarge,1,alice
"""


def test_both_engines_order_by_fair_share_alike():
    capacity = {"ml.p5.48xlarge": 2}
    jobs = parse_workload(io.StringIO(SUBMITTERS), capacity)
    fair = Policy(fair_share=FairShare(half_life_s=3600.0, weights=(("carol", 2.0),)))
    settings = SimSettings(capacity, stop_latency=30.0, start_latency=20.0, policy=fair)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    started = {d.job: d.time for d in real if d.action == "start"}
    # Bob's first job and carol's gang go before the rest of alice's sweep.
    assert started["bob-1"] < started["sweep-3"] and started["carol-gang"] < started["sweep-4"]


LIMITS = (
    (
        "name,submit_s,duration_s,priority,instance_type,instance_count,checkpoint_s,"
        "failure_reason,max_preemptions\n"
    )
    + """fragile-c,0,2000,0,ml.p5.48xlarge,1,,,0
flaky-a,5,900,1,ml.p5.48xlarge,1,300,InternalServerError: internal error,
buggy-b,10,400,1,ml.p5.48xlarge,1,,AlgorithmError: exit 1,
urgent-d,400,300,5,ml.p5.48xlarge,1,,,
"""
)


def test_both_engines_retry_failures_and_cap_preemptions_alike():
    capacity = {"ml.p5.48xlarge": 2}
    jobs = parse_workload(io.StringIO(LIMITS), capacity)
    settings = SimSettings(capacity, stop_latency=30.0, start_latency=10.0)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    # The internal error is retried (and the job finishes); the job's own error fails it;
    # a job that may not be preempted fails at its first preemption.
    assert states == {
        "flaky-a": "completed",
        "buggy-b": "failed",
        "fragile-c": "failed",
        "urgent-d": "completed",
    }
    assert any(d.action == "preempt" and d.job == "fragile-c" for d in real)
    flaky = next(j for j in fast.jobs if j.spec.name == "flaky-a")
    outcomes = [a.outcome.value for a in flaky.attempts]
    assert (flaky.retried, outcomes.count("failed"), outcomes[-1]) == (1, 1, "completed")
    fragile = next(j for j in fast.jobs if j.spec.name == "fragile-c")
    assert fragile.failure_reason == "preempted once, more than its max-preemptions (0) allows"


CHAINS = """name,submit_s,duration_s,priority,instance_type,instance_count,failure_reason,after
train-a,0,600,1,ml.p5.48xlarge,1,,
prep-b,0,300,1,ml.p5.48xlarge,1,,
eval-a,10,200,3,ml.p5.48xlarge,1,,afterok:train-a
merge-ab,20,100,2,ml.p5.48xlarge,1,,afterok:eval-a;prep-b
other-c,30,500,2,ml.p5.48xlarge,1,,
buggy-d,40,100,1,ml.p5.48xlarge,1,AlgorithmError: exit 1,
child-d,50,100,5,ml.p5.48xlarge,1,,afterok:buggy-d
grandchild-d,60,100,5,ml.p5.48xlarge,1,,after:child-d
cleanup-d,70,50,0,ml.p5.48xlarge,1,,afternotok:buggy-d
"""


def test_both_engines_settle_dependencies_alike():
    """A chain, a fan-in, and a failure that cancels a child and releases what waits for
    the child to end at all and the clean-up job."""
    capacity = {"ml.p5.48xlarge": 2}
    jobs = parse_workload(io.StringIO(CHAINS), capacity)
    settings = SimSettings(capacity, stop_latency=30.0, start_latency=10.0)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    assert states["child-d"] == "cancelled"
    assert states["grandchild-d"] == states["cleanup-d"] == "completed"
    started = {d.job: d.time for d in real if d.action == "start"}
    ended = {j.spec.name: j.end_s for j in fast.jobs}
    assert started["eval-a"] >= ended["train-a"]
    assert started["merge-ab"] >= max(ended["eval-a"], ended["prep-b"])


@pytest.mark.parametrize(
    ("workload", "capacity", "keep_alive"),
    [(BLOG, {"ml.p5.48xlarge": 2}, 0), (WARM, {"ml.p5.48xlarge": 2}, 90)],
    ids=["the blog's scenario", "warm pools kept, reused and released"],
)
def test_both_engines_report_the_same_usage_and_cost(workload, capacity, keep_alive):
    jobs = parse_workload(io.StringIO(workload), capacity)
    settings = SimSettings(capacity, stop_latency=60.0, keep_alive_s=keep_alive)
    prices = Prices({"ml.p5.48xlarge": 98.32})

    fast = sim_usage(simulate(jobs, settings), prices, "job")
    real = replay_through_handler(jobs, settings).ledger
    window = Window(0.0, max(r.ended_at for r in real) + 1.0, "job")

    assert fast["rows"] == usage_report(real, window, prices)["rows"]
    assert fast["total"]["preemptions"] >= 1 and fast["total"]["cost_usd"] > 0


SPENDING = """name,submit_s,duration_s,priority,instance_type,instance_count,submitter
alice-1,0,3600,1,ml.p5.48xlarge,1,alice
alice-2,60,3600,5,ml.p5.48xlarge,1,alice
bob-1,100,3600,0,ml.p5.48xlarge,1,bob
bob-2,200,1800,0,ml.p5.48xlarge,1,bob
alice-3,4000,3600,5,ml.p5.48xlarge,1,alice
bob-3,4100,600,0,ml.p5.48xlarge,2,bob
"""


def test_both_engines_demote_a_budget_spent_mid_stream_alike():
    capacity = {P5: 2}
    jobs = parse_workload(io.StringIO(SPENDING), capacity)
    alice = {Holder("submitter", "alice"): Budget(1.5, window_days=1, when_spent=LOWEST)}
    settings = SimSettings(capacity, stop_latency=30.0, budgets=alice)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    # Once alice-1 ended, alice had spent her 1.5 instance-hours: bob's priority-0 job
    # preempted her priority-5 one, and her jobs ran only once bob's wanted nothing more.
    assert Decision(3600.0, "preempt", "alice-2") in real
    started = {d.job: d.time for d in real if d.action == "start"}
    assert started["alice-3"] >= started["bob-3"] + 600 and started["alice-2"] > 3600


WINDOW = """name,submit_s,duration_s,priority,instance_type,instance_count,submitter
alice-1,0,3600,1,ml.p5.48xlarge,1,alice
alice-2,100,600,1,ml.p5.48xlarge,1,alice
bob-1,200,600,0,ml.p5.48xlarge,1,bob
"""


def test_both_engines_hold_a_spent_budget_until_its_window_frees_alike():
    capacity = {P5: 1}
    jobs = parse_workload(io.StringIO(WINDOW), capacity)
    alice = {Holder("submitter", "alice"): Budget(1, window_days=1)}
    settings = SimSettings(capacity, budgets=alice)

    fast = simulate(jobs, settings)
    real, states = decisions_through_handler(jobs, settings)

    assert sorted_decisions(fast.decisions) == real
    assert {j.spec.name: j.state for j in fast.jobs} == states
    started = {d.job: d.time for d in real if d.action == "start"}
    # bob's later, lower-priority job goes first; alice's waits for the next UTC day.
    assert started == {"alice-1": 0.0, "bob-1": 3600.0, "alice-2": 86400.0}
