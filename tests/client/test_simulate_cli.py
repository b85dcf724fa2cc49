"""`smq simulate`: the JSON report, the summary, the chart, and clear errors."""

import json

import pytest
from tjq.cli import main

WORKLOAD = """name,submit_s,duration_s,priority,instance_type,instance_count
job1,0,600,1,ml.p5.48xlarge,1
job2,0,600,2,ml.p5.48xlarge,1
job3,0,600,1,ml.p5.48xlarge,1
job4,300,600,3,ml.p5.48xlarge,1
"""


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "workload.csv"
    path.write_text(WORKLOAD)
    return str(path)


def smq(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_is_exactly_one_object_with_jobs_and_metrics(capsys, workload):
    code, out, _ = smq(
        capsys,
        "simulate",
        workload,
        "--capacity",
        "ml.p5.48xlarge=2",
        "--stop-latency",
        "60",
        "--json",
    )
    assert code == 0
    answer = json.loads(out)
    assert set(answer) == {"jobs", "metrics", "usage"}
    assert set(answer["jobs"][0]) == {
        "name",
        "state",
        "submit_s",
        "first_start_s",
        "end_s",
        "wait_s",
        "jct_s",
        "preemptions",
        "lost_instance_s",
        "warm_starts",
    }
    assert set(answer["metrics"]) == {
        "jobs",
        "makespan_s",
        "utilization",
        "goodput",
        "idle_while_waiting_instance_s",
        "preemptions",
        "lost_instance_s",
        "wait_s",
        "jct_s",
        "wait_s_by_priority",
    }
    assert set(answer["metrics"]["wait_s"]) == {"mean", "p50", "p95", "max"}
    assert answer["metrics"]["wait_s_by_priority"]["3"]["max"] == 60


def test_policy_settings_change_the_replay(capsys, workload):
    _, out, _ = smq(
        capsys,
        "simulate",
        workload,
        "--capacity",
        "ml.p5.48xlarge=2",
        "--json",
        "--no-preemption",
        "--start-latency",
        "30",
    )
    answer = json.loads(out)
    assert answer["metrics"]["preemptions"] == 0
    assert {j["name"]: j["first_start_s"] for j in answer["jobs"]}["job4"] == 630


def test_min_run_protects_a_running_job_from_preemption_for_a_while(capsys, workload):
    _, out, _ = smq(
        capsys, "simulate", workload, "--capacity", "ml.p5.48xlarge=2", "--json", "--min-run", "400"
    )
    jobs = {j["name"]: j for j in json.loads(out)["jobs"]}
    assert jobs["job4"]["first_start_s"] == 400  # job1, started at 0, is protected until 400
    assert jobs["job1"]["preemptions"] == 1


def test_summary_for_people(capsys, workload):
    code, out, _ = smq(capsys, "simulate", workload, "--capacity", "ml.p5.48xlarge=2")
    assert code == 0
    assert out.startswith("4 jobs on 2 x ml.p5.48xlarge")
    assert "Mean wait" in out and "p95 wait" in out


def test_a_replay_reports_usage_and_cost_as_the_queue_would(capsys, workload, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text('{"ml.p5.48xlarge": 10}')
    argv = ["simulate", workload, "--capacity", "ml.p5.48xlarge=2", "--stop-latency", "60"]
    code, out, _ = smq(capsys, *argv, "--prices", str(prices), "--usage-by", "job", "--json")
    assert code == 0
    usage = json.loads(out)["usage"]
    rows = {row["job"]: row for row in usage["rows"]}
    # job4 (priority 3) preempts job1 at 300 s; job1 stops for 60 s, then starts over at 600 s.
    assert rows["job1"]["instance_seconds"] == {
        "provisioning": 0,
        "running": 300 + 600,
        "stopping": 60,
        "pool_idle": 0,
    }
    assert (rows["job1"]["attempts"], rows["job1"]["preemptions"]) == (2, 1)
    assert rows["job1"]["work_lost_instance_hours"] == round(300 / 3600, 4)
    assert rows["job1"]["cost_usd"] == round(960 / 3600 * 10, 2)
    assert [rows[n]["instance_seconds"]["running"] for n in ("job2", "job3", "job4")] == [600] * 3
    assert usage["total"]["cost_usd"] == round((960 + 3 * 600) / 3600 * 10, 2)

    code, out, _ = smq(capsys, *argv, "--prices", str(prices))
    assert "usage over the replay, by submitter" in out
    assert any(line.startswith("total ") for line in out.splitlines())

    prices.write_text('{"ml.p5.48xlarge": "cheap"}')
    code, _, err = smq(capsys, *argv, "--prices", str(prices))
    assert code == 1
    assert f"--prices {prices}: ml.p5.48xlarge must be a number >= 0" in err
    code, _, err = smq(capsys, *argv, "--prices", str(tmp_path / "missing.json"))
    assert code == 1 and "No such file or directory" in err


@pytest.mark.parametrize(
    ("kind", "drawn"), [("auto", "gantt"), ("gantt", "gantt"), ("load", "load")]
)
def test_plot_writes_a_chart_and_says_which(capsys, workload, tmp_path, kind, drawn):
    chart = tmp_path / "chart.png"
    argv = ["simulate", workload, "--capacity", "ml.p5.48xlarge=2", "--plot", str(chart)]
    code, _, err = smq(capsys, *argv, "--plot-kind", kind)
    assert code == 0 and f"wrote {chart} ({drawn} chart)" in err
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_the_load_chart_counts_each_prioritys_instances_and_never_more_than_the_capacity(
    tmp_path,
):
    from tjq.simulate.engine import SimSettings, simulate
    from tjq.simulate.plot import in_use_by_priority
    from tjq.simulate.workload import read_workload

    path = tmp_path / "workload.csv"
    path.write_text(WORKLOAD)
    capacity = {"ml.p5.48xlarge": 2}
    result = simulate(read_workload(path, capacity), SimSettings(capacity))
    times, series = in_use_by_priority(result)
    assert set(series) == {1, 2, 3}
    totals = [sum(held[i] for held in series.values()) for i in range(len(times))]
    assert max(totals) == 2 and totals[-1] == 0  # the two instances full, then all free
    # job2 (priority 2) and job1 start at 0; job4 (priority 3) preempts job1 at 300.
    assert (series[2][0], series[1][0], series[3][0]) == (1, 1, 0)
    at_300 = times.index(300.0)
    assert series[3][at_300] == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--capacity", "ml.g5.xlarge=1"], "line 2, column instance_type"),
        (["--capacity", "ml.p5.48xlarge=0"], "line 2, column instance_count"),
        ([], "--capacity TYPE=N or --plan is required"),
    ],
)
def test_errors_exit_1_naming_the_problem(capsys, workload, argv, message):
    code, out, err = smq(capsys, "simulate", workload, *argv)
    assert code == 1 and out == "" and message in err


def test_the_queues_limits_are_flags_of_the_replay(capsys, tmp_path):
    path = tmp_path / "failing.csv"
    path.write_text(
        "name,submit_s,duration_s,priority,instance_type,instance_count,failure_reason\n"
        "flaky,0,600,1,ml.p5.48xlarge,1,InternalServerError: oops\n"
    )
    _, out, _ = smq(capsys, "simulate", str(path), "--capacity", "ml.p5.48xlarge=1", "--json")
    assert json.loads(out)["jobs"][0]["state"] == "completed"  # the default rules retry it
    rules = '[{"failure_reason_pattern": "Nothing*", "attempts": 3}]'
    argv = ("simulate", str(path), "--capacity", "ml.p5.48xlarge=1", "--retry-on-failure")
    _, out, _ = smq(capsys, *argv, rules)
    assert "1 jobs failed; 0 failed attempts retried in place" in out
    code, _, err = smq(capsys, *argv, "[{}]")
    assert code == 1 and "--retry-on-failure[0].failure_reason_pattern" in err
    code, _, err = smq(capsys, *argv[:-1], "--max-preemptions", "-1")
    assert code == 1 and "--max-preemptions: must be a whole number from 0" in err


def test_missing_workload_file(capsys, tmp_path):
    code, _, err = smq(
        capsys, "simulate", str(tmp_path / "none.csv"), "--capacity", "ml.p5.48xlarge=1"
    )
    assert code == 1 and "cannot read" in err


SPENDERS = """name,submit_s,duration_s,priority,instance_type,instance_count,submitter
alice-1,0,3600,1,ml.p5.48xlarge,1,alice
alice-2,100,600,1,ml.p5.48xlarge,1,alice
bob-1,200,600,0,ml.p5.48xlarge,1,bob
"""


def test_a_replay_tries_how_big_a_budget_should_be(capsys, tmp_path):
    trace, budgets = tmp_path / "spenders.csv", tmp_path / "budgets.json"
    trace.write_text(SPENDERS)
    argv = ["simulate", str(trace), "--capacity", "ml.p5.48xlarge=1", "--json"]

    def first_starts(budget: str) -> dict:
        budgets.write_text(budget)
        code, out, err = smq(capsys, *argv, "--budgets", str(budgets))
        assert code == 0, err
        return {job["name"]: job["first_start_s"] for job in json.loads(out)["jobs"]}

    # Enough for alice's two jobs: hers go first, by priority.
    assert first_starts('{"alice": {"instance_hours": 2}}') == {
        "alice-1": 0.0, "alice-2": 3600.0, "bob-1": 4200.0,
    }  # fmt: skip
    # One instance-hour: alice's second job waits a day for her window to free; bob's goes.
    assert first_starts('{"alice": {"instance_hours": 1, "window_days": 1}}') == {
        "alice-1": 0.0, "bob-1": 3600.0, "alice-2": 86400.0,
    }  # fmt: skip

    budgets.write_text('{"alice": {"instance_hours": 1, "when_spent": "later"}}')
    code, _, err = smq(capsys, *argv, "--budgets", str(budgets))
    assert code == 1
    assert f"--budgets {budgets}: alice: budget: when_spent must be wait or lowest-priority" in err


def test_negative_latency_is_a_usage_error(capsys, workload):
    with pytest.raises(SystemExit) as exited:
        main(["simulate", workload, "--capacity", "ml.p5.48xlarge=2", "--stop-latency", "-1"])
    assert exited.value.code == 2


SHARES_FILE = [
    {
        "name": "QS1",
        "capacity": {"ml.g5.xlarge": 1},
        "strategy": "LEND_AND_BORROW",
        "borrow_limit": 200,
        "in_share_preemption": True,
    },
    {
        "name": "QS2",
        "capacity": {"ml.g5.xlarge": 1},
        "strategy": "LEND",
        "in_share_preemption": False,
    },
]
SHARED_WORKLOAD = """name,submit_s,duration_s,priority,instance_type,instance_count,share
a,0,100,1,ml.g5.xlarge,1,QS1
b,0,100,1,ml.g5.xlarge,1,QS1
c,50,100,1,ml.g5.xlarge,1,QS2
"""


def test_shares_file_replaces_capacity_and_reports_per_share(capsys, tmp_path):
    shares, workload = tmp_path / "shares.json", tmp_path / "w.csv"
    shares.write_text(json.dumps(SHARES_FILE))
    workload.write_text(SHARED_WORKLOAD)
    code, out, _ = smq(capsys, "simulate", str(workload), "--shares", str(shares), "--json")
    assert code == 0
    answer = json.loads(out)
    jobs = {j["name"]: j for j in answer["jobs"]}
    assert jobs["b"]["preemptions"] == 1  # borrowed QS2's instance, reclaimed by c
    assert set(answer["metrics"]["by_share"]) == {"QS1", "QS2"}
    code, out, _ = smq(capsys, "simulate", str(workload), "--shares", str(shares))
    assert code == 0 and "Use of own limit" in out and out.startswith("3 jobs on 2 x ml.g5")


def test_shares_and_capacity_together_or_a_bad_shares_file_are_refused(capsys, tmp_path):
    shares, workload = tmp_path / "shares.json", tmp_path / "w.csv"
    workload.write_text(SHARED_WORKLOAD)
    shares.write_text(json.dumps(SHARES_FILE))
    code, _, err = smq(
        capsys, "simulate", str(workload), "--shares", str(shares), "--capacity", "ml.g5.xlarge=2"
    )
    assert code == 1 and "not both" in err
    shares.write_text(json.dumps([{**SHARES_FILE[1], "borrow_limit": 10}]))
    code, _, err = smq(capsys, "simulate", str(workload), "--shares", str(shares))
    assert code == 1 and "borrow_limit applies only to LEND_AND_BORROW shares" in err


def test_a_row_on_an_uncapped_type_starts_at_its_submission_as_in_the_queue(capsys, tmp_path):
    workload = tmp_path / "w.csv"
    workload.write_text(
        "name,submit_s,duration_s,priority,instance_type,instance_count\n"
        "gpu,0,60,0,ml.p5.48xlarge,1\n"
        "gpu-2,0,60,0,ml.p5.48xlarge,1\n"
        "cpu,10,60,0,ml.c5.18xlarge,4\n"
    )
    argv = ["simulate", str(workload), "--capacity", "ml.p5.48xlarge=1", "--json"]
    code, out, _ = smq(capsys, *argv, "--capacity", "ml.c5.18xlarge=unlimited")
    assert code == 0
    jobs = {job["name"]: job for job in json.loads(out)["jobs"]}
    assert (jobs["cpu"]["first_start_s"], jobs["gpu-2"]["first_start_s"]) == (10, 60)


def test_a_misspelt_unlimited_is_a_usage_error(capsys, workload):
    with pytest.raises(SystemExit) as exited:
        main(["simulate", workload, "--capacity", "ml.c5.18xlarge=unlimted"])
    assert exited.value.code == 2
    assert "TYPE=unlimited" in capsys.readouterr().err


def test_plans_beside_or_instead_of_capacity(capsys, tmp_path):
    workload = tmp_path / "w.csv"
    workload.write_text(
        "name,submit_s,duration_s,priority,instance_type,instance_count,share,max_runtime_s\n"
        "a,0,600,0,ml.p5.48xlarge,2,,1000\n"
        "b,0,600,0,ml.p5.48xlarge,1,,1000\n"
    )
    argv = ["simulate", str(workload), "--plan", "ml.p5.48xlarge=2@3600-86400", "--json"]
    code, out, _ = smq(capsys, *argv)
    assert code == 0
    starts = {job["name"]: job["first_start_s"] for job in json.loads(out)["jobs"]}
    assert starts == {"a": 3600, "b": 4200}  # the reservation opens at 3600, and has 2
    code, out, _ = smq(capsys, *argv, "--capacity", "ml.p5.48xlarge=1")
    starts = {job["name"]: job["first_start_s"] for job in json.loads(out)["jobs"]}
    assert starts == {"a": 3600, "b": 0}  # b fits the on-demand instance at once


def test_bad_plans_are_usage_errors_or_name_the_problem(capsys, workload):
    with pytest.raises(SystemExit) as exited:
        main(["simulate", workload, "--plan", "ml.p5.48xlarge=2@50-10"])
    assert exited.value.code == 2
    assert "needs COUNT >= 1 and START_S < END_S" in capsys.readouterr().err
    for option, problem in [
        ("ml.p5.48xlarge=2@0-1800", "a reservation of 1800s would never be used"),
        ("ml.p5.48xlarg=2@0-7200", "'ml.p5.48xlarg' is not a SageMaker instance type"),
    ]:
        with pytest.raises(SystemExit) as exited:
            main(["simulate", workload, "--plan", option])
        assert exited.value.code == 2 and problem in capsys.readouterr().err
    overlapping = ["--plan", "ml.p5.48xlarge=2@0-7200", "--plan", "ml.p5.48xlarge=2@3600-9000"]
    code, _, err = smq(capsys, "simulate", workload, *overlapping)
    assert code == 1 and "two reservations of ml.p5.48xlarge overlap" in err


SIM_PLAN = "arn:aws:sagemaker:sim:000000000000:training-plan/sim-p5-48xlarge"


def test_a_shares_plan_is_simulated_with_its_plan_option(capsys, tmp_path):
    shares, workload = tmp_path / "shares.json", tmp_path / "w.csv"
    shares.write_text(
        json.dumps(
            [
                {
                    "name": "research",
                    "capacity": {"ml.p5.48xlarge": {"training_plan": SIM_PLAN}},
                    "strategy": "LEND",
                    "in_share_preemption": False,
                },
                {
                    "name": "product",
                    "capacity": {"ml.p5.48xlarge": 1},
                    "strategy": "LEND_AND_BORROW",
                    "in_share_preemption": False,
                },
            ]
        )
    )
    workload.write_text(
        "name,submit_s,duration_s,priority,instance_type,instance_count,share,max_runtime_s\n"
        "p1,0,600,0,ml.p5.48xlarge,1,product,1000\n"
        "p2,0,600,0,ml.p5.48xlarge,1,product,1000\n"
    )
    argv = ["simulate", str(workload), "--shares", str(shares), "--json"]
    code, out, _ = smq(capsys, *argv, "--plan", "ml.p5.48xlarge=1@0-86400")
    assert code == 0
    starts = {job["name"]: job["first_start_s"] for job in json.loads(out)["jobs"]}
    assert starts == {"p1": 0, "p2": 0}  # p2 borrows research's idle reserved instance
    code, _, err = smq(capsys, *argv)
    assert code == 1
    assert f"share research names training plan {SIM_PLAN}, which no --plan gives" in err


def test_a_large_workload_is_drawn_as_load_rather_than_one_row_per_job(capsys, tmp_path):
    rows = [f"job{i},{i * 10},60,{i % 3},ml.p5.48xlarge,1" for i in range(301)]
    path = tmp_path / "large.csv"
    path.write_text("name,submit_s,duration_s,priority,instance_type,instance_count\n")
    path.write_text(path.read_text() + "\n".join(rows) + "\n")
    chart = tmp_path / "large.png"
    argv = ["simulate", str(path), "--capacity", "ml.p5.48xlarge=2", "--plot", str(chart)]
    code, _, err = smq(capsys, *argv)
    assert code == 0 and "(load chart)" in err


SWEEP = (
    "name,submit_s,duration_s,priority,instance_type,instance_count,submitter\n"
    + "".join(f"sweep{i},0,3600,1,ml.p5.48xlarge,1,alice\n" for i in range(5))
    + "bobs-job,1,3600,1,ml.p5.48xlarge,1,bob\n"
)


def _starts(capsys, path, *flags):
    code, out, err = smq(
        capsys, "simulate", path, "--capacity", "ml.p5.48xlarge=1", "--json", *flags
    )
    assert code == 0, err
    answer = json.loads(out)
    return {job["name"]: job["first_start_s"] for job in answer["jobs"]}, answer


def test_with_fair_share_a_sweep_no_longer_holds_back_the_next_submitter(capsys, tmp_path):
    path = tmp_path / "sweep.csv"
    path.write_text(SWEEP)
    fifo, answer = _starts(capsys, str(path))
    assert fifo["bobs-job"] > max(fifo[f"sweep{i}"] for i in range(5))
    assert {row["submitter"] for row in answer["jobs"]} == {"alice", "bob"}
    assert set(answer["metrics"]["by_submitter"]) == {"alice", "bob"}
    fair, answer = _starts(capsys, str(path), "--fair-share-half-life", "3600")
    # Bob goes second: alice has held the instance for an hour, he nothing.
    assert sorted(fair, key=fair.get)[1] == "bobs-job"
    assert fair["bobs-job"] < fair["sweep1"]
    assert answer["metrics"]["fairness"]["submitters"] == 2


TWO_SWEEPS = "name,submit_s,duration_s,priority,instance_type,instance_count,submitter\n" + "".join(
    f"{who}{i},0,600,1,ml.p5.48xlarge,1,{who}\n" for i in range(6) for who in ("alice", "bob")
)


def test_a_weight_of_two_gives_a_submitter_more_of_the_instances(capsys, tmp_path):
    path = tmp_path / "sweeps.csv"
    path.write_text(TWO_SWEEPS)
    weights = tmp_path / "weights.json"
    weights.write_text('{"alice": 2}')

    def alices_mean_start(*flags):
        starts, _ = _starts(capsys, str(path), "--fair-share-half-life", "3600", *flags)
        return sum(starts[f"alice{i}"] for i in range(6)) / 6

    assert alices_mean_start("--fair-share-weights", str(weights)) < alices_mean_start()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--fair-share-half-life", "-1"], "--fair-share-half-life must be 0 or more"),
        (["--fair-share-half-life", "soon"], "--fair-share-half-life must be a number"),
        (
            ["--fair-share-half-life", "60", "--fair-share-lookahead", "0"],
            "--fair-share-lookahead must be more than 0",
        ),
        (["--fair-share-half-life", "60", "--fair-share-weights", "nowhere.json"], "nowhere.json"),
    ],
)
def test_bad_fair_share_flags_exit_1_naming_the_flag(capsys, workload, flags, message):
    code, out, err = smq(capsys, "simulate", workload, "--capacity", "ml.p5.48xlarge=1", *flags)
    assert code == 1 and out == "" and message in err


def test_a_weight_that_is_not_positive_is_refused_naming_the_file(capsys, workload, tmp_path):
    weights = tmp_path / "weights.json"
    weights.write_text('{"alice": 0}')
    code, out, err = smq(
        capsys,
        "simulate",
        workload,
        "--capacity",
        "ml.p5.48xlarge=1",
        "--fair-share-half-life",
        "60",
        "--fair-share-weights",
        str(weights),
    )
    assert code == 1 and out == ""
    assert f"--fair-share-weights {weights}: the weight of alice must be more than 0" in err


def test_the_summary_shows_each_submitters_waits_and_how_fairly_all_were_served(capsys, tmp_path):
    path = tmp_path / "sweep.csv"
    path.write_text(SWEEP)
    code, out, _ = smq(
        capsys,
        "simulate",
        str(path),
        "--capacity",
        "ml.p5.48xlarge=1",
        "--fair-share-half-life",
        "3600",
    )
    assert code == 0
    waits = out[: out.index("usage over the replay")]  # the waits' table, then the usage
    rows = {
        line.split()[0]: line.split()
        for line in waits.splitlines()
        if line[:5] in ("alice", "bob  ")
    }
    assert rows["alice"][1:3] == ["5", "5.0"] and rows["bob"][1:3] == ["1", "1.0"]
    assert "fairness over 2 submitters: Jain's index of mean slowdown" in out


def test_fair_share_orders_the_jobs_that_run_on_a_training_plan_too(capsys, tmp_path):
    rows = [line + ",7200" for line in SWEEP.strip().splitlines()]
    rows[0] = rows[0].removesuffix(",7200") + ",max_runtime_s"
    path = tmp_path / "sweep.csv"
    path.write_text("\n".join(rows) + "\n")
    code, out, err = smq(
        capsys,
        "simulate",
        str(path),
        "--plan",
        "ml.p5.48xlarge=1@0-86400",
        "--json",
        "--fair-share-half-life",
        "3600",
    )
    assert code == 0, err
    starts = {job["name"]: job["first_start_s"] for job in json.loads(out)["jobs"]}
    assert sorted(starts, key=starts.get)[1] == "bobs-job"  # on the plan's instance, as on-demand
