"""The fast engine and its metrics on small workloads worked out by hand."""

import io
import re

import pytest
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import percentile, report
from tjq.simulate.workload import WorkloadError, parse_workload

from job_queue.scheduler import Policy, Share, Strategy

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
HEADER = "name,submit_s,duration_s,priority,instance_type,instance_count"


def run(rows: str, capacity=None, header=HEADER, **settings) -> dict:
    capacity = capacity or {P5: 2}
    jobs = parse_workload(io.StringIO(f"{header}\n{rows}"), capacity)
    return report(simulate(jobs, SimSettings(capacity, **settings)))


def by_name(answer: dict) -> dict:
    return {job["name"]: job for job in answer["jobs"]}


BLOG = """job1,0,600,1,ml.p5.48xlarge,1
job2,0,600,2,ml.p5.48xlarge,1
job3,0,600,1,ml.p5.48xlarge,1
job4,300,600,3,ml.p5.48xlarge,1"""


def test_blog_scenario_with_a_one_minute_stop():
    answer = run(BLOG, stop_latency=60)
    jobs = by_name(answer)
    assert {n: (j["first_start_s"], j["end_s"]) for n, j in jobs.items()} == {
        "job1": (0, 1200),  # preempted at 300, resumed at 600 when job2 ended
        "job2": (0, 600),
        "job3": (960, 1560),  # after job4 (360 to 960)
        "job4": (360, 960),  # waited for job1's stop
    }
    assert jobs["job1"]["preemptions"] == 1
    assert jobs["job1"]["lost_instance_s"] == 300 + 60  # its work so far, and the stop
    m = answer["metrics"]
    assert m["makespan_s"] == 1560
    assert m["utilization"] == round((360 + 600 + 600 + 600 + 600) / (2 * 1560), 6)
    assert m["goodput"] == round(4 * 600 / (2 * 1560), 6)
    assert m["wait_s"] == {"mean": 255.0, "p50": 30.0, "p95": 825.0, "max": 960.0}
    assert m["wait_s_by_priority"]["3"] == {"mean": 60.0, "p95": 60.0, "max": 60.0}
    assert m["jct_s"]["max"] == 1560
    assert m["idle_while_waiting_instance_s"] == 0


def test_a_checkpointed_job_resumes_from_its_last_checkpoint():
    rows = "low,0,1000,0,ml.p5.48xlarge,1,100\nhigh,250,100,1,ml.p5.48xlarge,1,"
    answer = run(rows, {P5: 1}, header=HEADER + ",checkpoint_s", stop_latency=10)
    jobs = by_name(answer)
    assert jobs["high"]["first_start_s"] == 260 and jobs["high"]["end_s"] == 360
    # 250 s of work, 200 s of it checkpointed: 800 s remain after the restart at 360.
    assert jobs["low"]["end_s"] == 1160
    assert jobs["low"]["lost_instance_s"] == 50 + 10


def test_a_job_that_saves_on_stop_keeps_all_its_progress():
    rows = "low,0,1000,0,ml.p5.48xlarge,1,stop\nhigh,250,100,1,ml.p5.48xlarge,1,"
    jobs = by_name(run(rows, {P5: 1}, header=HEADER + ",checkpoint_s", stop_latency=10))
    # 250 s done when stopped, all of it saved: 750 s remain after the restart at 360.
    assert jobs["low"]["end_s"] == 360 + 750
    assert jobs["low"]["lost_instance_s"] == 10  # only the stop itself


CHECKPOINT_MIX = """none,0,5000,0,ml.p5.48xlarge,1,
on-stop,0,5000,0,ml.p5.48xlarge,1,stop
hourly,0,5000,0,ml.p5.48xlarge,1,3600
urgent,{at},100,5,ml.p5.48xlarge,1,"""


@pytest.mark.parametrize(
    ("at", "policy", "victim"),
    [
        (1000, Policy(), "on-stop"),
        (4000, Policy(), "on-stop"),
        (1000, Policy(least_lost_work=False), "hourly"),  # the last submitted of equals
    ],
    ids=[
        "the job that saves on stop goes first",
        "still first after the hourly job saved",
        "without the rule, the most recently started",
    ],
)
def test_the_simulated_queue_preempts_the_job_that_loses_least(at, policy, victim):
    rows = CHECKPOINT_MIX.format(at=at)
    answer = run(rows, {P5: 3}, header=HEADER + ",checkpoint_s", stop_latency=10, policy=policy)
    preempted = {name for name, job in by_name(answer).items() if job["preemptions"]}
    assert preempted == {victim}


def test_between_an_interval_job_and_one_that_saves_nothing_the_fresher_save_goes_first():
    rows = """hourly,0,5000,0,ml.p5.48xlarge,1,3600
none,100,5000,0,ml.p5.48xlarge,1,
urgent,3700,100,5,ml.p5.48xlarge,1,"""
    # At 3700 s, "hourly" saved 100 s ago (at 3600: one hour of work), "none" would lose
    # 3600 s: "hourly" goes, though "none" started later.
    answer = run(rows, {P5: 2}, header=HEADER + ",checkpoint_s", stop_latency=10)
    jobs = by_name(answer)
    assert (jobs["hourly"]["preemptions"], jobs["none"]["preemptions"]) == (1, 0)
    assert jobs["hourly"]["lost_instance_s"] == 100 + 10


def test_without_checkpoints_a_preempted_job_starts_over():
    rows = "low,0,1000,0,ml.p5.48xlarge,1\nhigh,250,100,1,ml.p5.48xlarge,1"
    jobs = by_name(run(rows, {P5: 1}, stop_latency=10))
    assert jobs["low"]["end_s"] == 360 + 1000
    assert jobs["low"]["lost_instance_s"] == 250 + 10


def test_start_latency_holds_instances_without_progress():
    answer = run(
        "a,0,100,0,ml.p5.48xlarge,1\nb,0,100,0,ml.p5.48xlarge,1", {P5: 1}, start_latency=20
    )
    jobs = by_name(answer)
    assert (jobs["a"]["end_s"], jobs["b"]["first_start_s"], jobs["b"]["end_s"]) == (120, 120, 240)
    assert answer["metrics"]["utilization"] == 1.0
    assert answer["metrics"]["goodput"] == round(200 / 240, 6)


def test_an_attempt_that_reaches_its_max_runtime_fails():
    answer = run("long,0,500,0,ml.p5.48xlarge,1,300", {P5: 1}, header=HEADER + ",max_runtime_s")
    job = by_name(answer)["long"]
    assert (job["state"], job["end_s"]) == ("failed", 300)
    assert answer["metrics"]["goodput"] == 0


def test_idle_while_a_waiting_job_would_fit():
    rows = (
        "one,0,100,1,ml.p5.48xlarge,1\n"
        "gang,0,100,1,ml.p5.48xlarge,2\n"
        "small,0,100,1,ml.p5.48xlarge,1"
    )
    answer = run(rows)
    jobs = by_name(answer)
    # The gang job holds its place: small waits although one instance is free for 100 s.
    assert jobs["gang"]["first_start_s"] == 100
    assert jobs["small"]["first_start_s"] == 200
    assert answer["metrics"]["idle_while_waiting_instance_s"] == 100


def test_without_preemption_the_urgent_job_waits():
    jobs = by_name(run(BLOG, stop_latency=60, policy=Policy(preemption=False)))
    assert jobs["job4"]["first_start_s"] == 600 and jobs["job1"]["preemptions"] == 0


def test_a_minimum_run_time_delays_the_preemption_until_it_is_over():
    rows = "low,0,1000,0,ml.p5.48xlarge,1\nhigh,100,100,1,ml.p5.48xlarge,1"
    jobs = by_name(run(rows, {P5: 1}, stop_latency=10, policy=Policy(min_run_s=300)))
    # Nothing else happens at 300: the engine wakes up when low's protection ends.
    assert jobs["high"]["first_start_s"] == 310 and jobs["high"]["wait_s"] == 210
    assert jobs["low"]["lost_instance_s"] == 300 + 10


def test_a_job_that_ends_within_its_minimum_run_time_is_never_preempted():
    rows = "low,0,200,0,ml.p5.48xlarge,1\nhigh,100,100,1,ml.p5.48xlarge,1"
    jobs = by_name(run(rows, {P5: 1}, policy=Policy(min_run_s=300)))
    assert jobs["low"]["preemptions"] == 0 and jobs["high"]["first_start_s"] == 200


def test_instance_types_are_scheduled_separately():
    rows = "p,0,100,0,ml.p5.48xlarge,1\ng,0,50,0,ml.g5.xlarge,1\ng2,0,50,0,ml.g5.xlarge,1"
    jobs = by_name(run(rows, {P5: 1, G5: 1}))
    assert (jobs["g2"]["first_start_s"], jobs["p"]["end_s"]) == (50, 100)


def test_percentile_interpolates_between_ranks():
    assert percentile([0, 0, 60, 960], 50) == 30
    assert percentile([10], 95) == 10
    assert percentile([1, 2, 3, 4, 5], 100) == 5


BAD = [
    ("name,submit_s\n", "missing column(s) duration_s"),
    (HEADER + ",colour\n", "unknown column(s) colour"),
    ("", "header line is required"),
    (HEADER + "\n", "no jobs"),
    (HEADER + "\na,zero,1,0,ml.p5.48xlarge,1", "line 2, column submit_s: 'zero' is not a number"),
    (HEADER + "\na,-5,1,0,ml.p5.48xlarge,1", "line 2, column submit_s: -5 is negative"),
    (HEADER + "\na,0,-1,0,ml.p5.48xlarge,1", "line 2, column duration_s: -1 is negative"),
    (HEADER + "\na,0,nan,0,ml.p5.48xlarge,1", "column duration_s: 'nan' is not a finite"),
    (HEADER + "\na,0,1,high,ml.p5.48xlarge,1", "line 2, column priority: 'high'"),
    (HEADER + "\na,0,1,0,ml.p5.48xlarge,1.5", "column instance_count: '1.5'"),
    (HEADER + "\na,0,1,0,ml.p5.48xlarge,0", "column instance_count: 0 is not a positive"),
    (HEADER + "\na,0,1,0,ml.p5.48xlarge,3", "line 2, column instance_count: 3 x ml.p5.48xlarge"),
    (HEADER + "\na,0,1,0,ml.m5.large,1", "line 2, column instance_type: 'ml.m5.large' has no"),
    (
        HEADER + "\na,0,1,0,ml.p5.48xlarge,1\na,5,1,0,ml.p5.48xlarge,1",
        "line 3, column name: 'a' is already used on line 2",
    ),
    (HEADER + "\n,0,1,0,ml.p5.48xlarge,1", "line 2, column name: a job needs a name"),
    (HEADER + ",checkpoint_s\na,0,1,0,ml.p5.48xlarge,1,often", "column checkpoint_s: 'often'"),
    (
        HEADER + ",max_preemptions\na,0,1,0,ml.p5.48xlarge,1,two",
        "line 2, column max_preemptions: must be a whole number from 0, got 'two'",
    ),
    (
        HEADER + ",max_total_runtime_s\na,0,1,0,ml.p5.48xlarge,1,0",
        "line 2, column max_total_runtime_s: must be a whole number of seconds above 0",
    ),
    (
        HEADER + ",after\na,0,1,0,ml.p5.48xlarge,1,afterok:b\nb,0,1,0,ml.p5.48xlarge,1,",
        "line 2, column after: 'b' is not a job above it submitted no later than it",
    ),
    (
        HEADER + ",after\na,5,1,0,ml.p5.48xlarge,1,\nb,0,1,0,ml.p5.48xlarge,1,after:a",
        "line 3, column after: 'a' is not a job above it submitted no later than it",
    ),
    (
        HEADER + ",after\na,0,1,0,ml.p5.48xlarge,1,afterany:x",
        "line 2, column after: must have a dependency type among after, afterok, afternotok",
    ),
    (
        HEADER + ",after\na,0,1,0,ml.p5.48xlarge,1,afterok:a",
        "line 2, column after: must name other jobs than a itself",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_workload_names_the_line_and_column(text, message):
    with pytest.raises(WorkloadError, match=re.escape(message)):
        parse_workload(io.StringIO(text), {P5: 2})


SHARES = (
    Share("QS1", {G5: 1}, Strategy.LEND_AND_BORROW, 200, in_share_preemption=True),
    Share("QS2", {G5: 1}, Strategy.LEND),
    Share("QS3", {G5: 1}, Strategy.RESERVE),
)
SHARED = """high,0,600,3,ml.g5.xlarge,1,QS1
med,0,600,2,ml.g5.xlarge,1,QS1
low,0,600,1,ml.g5.xlarge,1,QS1
qs2,100,600,1,ml.g5.xlarge,1,QS2"""


def test_shares_borrow_reclaim_and_report_per_share():
    jobs = parse_workload(io.StringIO(f"{HEADER},share\n{SHARED}"), {G5: 3}, SHARES)
    answer = report(simulate(jobs, SimSettings({G5: 3}, stop_latency=30, shares=SHARES)))
    got = by_name(answer)
    # med borrows QS2's instance at 0 and is reclaimed at 100 (stop until 130); it resumes
    # when high ends at 600, from zero: 600 to 1200. low waits for QS1 or lent capacity.
    assert (got["med"]["first_start_s"], got["med"]["end_s"]) == (0, 1200)
    assert got["med"]["lost_instance_s"] == 100 + 30
    assert (got["qs2"]["first_start_s"], got["qs2"]["end_s"]) == (130, 730)
    assert got["low"]["first_start_s"] == 730  # QS2's instance, lent again once qs2 ends
    by_share = answer["metrics"]["by_share"]
    assert by_share["QS3"] == {
        "jobs": 0,
        "wait_s": {"mean": 0.0, "p95": 0.0, "max": 0.0},
        "utilization": 0.0,
    }
    assert by_share["QS2"]["wait_s"]["max"] == 30
    # QS1 held 600 + 130 + 600 + 600 instance-seconds on its own limit of 1 over 1330 s.
    assert by_share["QS1"]["utilization"] == round(1930 / 1330, 6)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,0,10,1,ml.g5.xlarge,1,", "line 2, column share: the replay has shares"),
        ("a,0,10,1,ml.g5.xlarge,1,QS9", "line 2, column share: 'QS9' is not one of QS1"),
        ("a,0,10,1,ml.g5.xlarge,2,QS3", "line 2, column instance_count: 2 x ml.g5.xlarge is more"),
    ],
)
def test_bad_share_column_names_the_line(row, message):
    with pytest.raises(WorkloadError, match=re.escape(message)):
        parse_workload(io.StringIO(f"{HEADER},share\n{row}"), {G5: 3}, SHARES)


C5 = "ml.c5.18xlarge"


def test_a_row_on_an_uncapped_type_starts_at_its_submission_and_counts_against_nothing():
    rows = "\n".join(
        [
            "gpu,0,600,1,ml.p5.48xlarge,1",
            "gpu-waits,0,600,1,ml.p5.48xlarge,1",
            "cpu,100,300,0,ml.c5.18xlarge,40",
        ]
    )
    jobs = parse_workload(io.StringIO(f"{HEADER}\n{rows}"), {P5: 1}, uncapped=frozenset({C5}))
    answer = report(simulate(jobs, SimSettings({P5: 1}, uncapped=frozenset({C5}))))
    starts = {n: (j["first_start_s"], j["end_s"]) for n, j in by_name(answer).items()}
    # Behind a GPU job that waits, and at a lower priority, the CPU job starts at once.
    assert starts == {"gpu": (0, 600), "gpu-waits": (600, 1200), "cpu": (100, 400)}
    # Its 40 instances are counted nowhere: utilization is the p5's alone.
    assert answer["metrics"]["utilization"] == 1.0


LIMIT_COLUMNS = HEADER + ",checkpoint_s,failure_reason,max_preemptions,max_total_runtime_s"
INTERNAL = "InternalServerError: We encountered an internal error."


def test_an_infrastructure_failure_is_retried_in_place_and_resumes_from_its_checkpoint():
    # flaky fails when it would finish at 1000 s; it kept its checkpoint at 900 s, so its
    # retry runs 100 s more, ahead of next, which was submitted after it.
    rows = f"flaky,0,1000,0,{P5},1,300,{INTERNAL},,\nnext,10,100,0,{P5},1,,,,"
    answer = run(rows, {P5: 1}, header=LIMIT_COLUMNS)
    flaky, after = by_name(answer)["flaky"], by_name(answer)["next"]
    assert (flaky["state"], flaky["end_s"], flaky["retried"]) == ("completed", 1100, 1)
    assert after["first_start_s"] == 1100
    assert (answer["metrics"]["failed"], answer["metrics"]["retried"]) == (0, 1)


def test_a_failure_no_rule_retries_fails_the_job_as_the_trace_did():
    rows = f"buggy,0,600,0,{P5},1,,AlgorithmError: exit 1,,"
    answer = run(rows, {P5: 1}, header=LIMIT_COLUMNS)
    buggy = by_name(answer)["buggy"]
    assert (buggy["state"], buggy["failure_reason"]) == ("failed", "AlgorithmError: exit 1")
    assert answer["metrics"]["failed"] == 1


def test_a_job_preempted_past_its_cap_fails_in_the_replay_too():
    rows = f"low,0,1000,0,{P5},1,,,0,\nurgent,100,100,5,{P5},1,,,,"
    low = by_name(run(rows, {P5: 1}, header=LIMIT_COLUMNS))["low"]
    assert (low["state"], low["end_s"]) == ("failed", 100)
    assert low["failure_reason"] == "preempted once, more than its max-preemptions (0) allows"


def test_the_replays_max_preemptions_caps_jobs_without_the_column():
    from job_queue.limits import Limits

    rows = f"low,0,1000,0,{P5},1\nurgent,100,100,5,{P5},1"
    low = by_name(run(rows, {P5: 1}, limits=Limits(max_preemptions=0)))["low"]
    assert low["state"] == "failed"


def test_a_job_is_stopped_once_its_attempts_ran_past_its_max_total_runtime():
    # 300 s before its preemption, then 200 s more: at 501 s in all it is stopped for good.
    rows = f"capped,0,1000,0,{P5},1,stop,,,500\nurgent,300,100,5,{P5},1,,,,"
    answer = run(rows, {P5: 1}, header=LIMIT_COLUMNS)
    capped = by_name(answer)["capped"]
    assert capped["state"] == "failed"
    assert capped["failure_reason"] == (
        "ran 501 s in all, more than its max-total-runtime (500 s) allows"
    )
    assert capped["end_s"] == 601


def test_a_chain_runs_link_after_link_and_a_failure_cancels_what_waits_on_it():
    rows = (
        "train,0,100,0,ml.p5.48xlarge,1,,\n"
        "evaluate,0,50,0,ml.p5.48xlarge,1,,afterok:train\n"
        "export,0,10,0,ml.p5.48xlarge,1,,afterok:evaluate\n"
        "buggy,0,30,0,ml.p5.48xlarge,1,AlgorithmError: exit 1,\n"
        "child,0,30,0,ml.p5.48xlarge,1,,afterok:buggy"
    )
    jobs = parse_workload(io.StringIO(f"{HEADER},failure_reason,after\n{rows}"), {P5: 2})
    answer = report(simulate(jobs, SimSettings({P5: 2})))
    got = by_name(answer)
    assert got["evaluate"]["first_start_s"] == got["train"]["end_s"] == 100
    assert got["export"]["first_start_s"] == 150
    assert (got["child"]["state"], got["child"]["end_s"]) == ("cancelled", 30)
    assert answer["metrics"]["cancelled"] == 1
