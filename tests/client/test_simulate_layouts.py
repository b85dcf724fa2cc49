"""`smq simulate` of other layouts than one capacity: quota shares, uncapped types, training
plans (beside or instead of capacity, and a share's)."""

import json

import pytest
from tjq.cli import main

from tests.client.cli_runs import smq

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
