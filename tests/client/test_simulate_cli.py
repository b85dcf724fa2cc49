"""`smq simulate`: the JSON report, the summary, the chart, budgets, and clear errors."""

import json

import pytest
from tjq.cli import main

from tests.client.cli_runs import smq
from tests.client.conftest import WORKLOAD


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


def test_a_large_workload_is_drawn_as_load_rather_than_one_row_per_job(capsys, tmp_path):
    rows = [f"job{i},{i * 10},60,{i % 3},ml.p5.48xlarge,1" for i in range(301)]
    path = tmp_path / "large.csv"
    path.write_text("name,submit_s,duration_s,priority,instance_type,instance_count\n")
    path.write_text(path.read_text() + "\n".join(rows) + "\n")
    chart = tmp_path / "large.png"
    argv = ["simulate", str(path), "--capacity", "ml.p5.48xlarge=2", "--plot", str(chart)]
    code, _, err = smq(capsys, *argv)
    assert code == 0 and "(load chart)" in err
