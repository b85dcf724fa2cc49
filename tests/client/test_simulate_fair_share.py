"""`smq simulate` with fair share: sweeps that no longer hold back the next submitter, weights,
the summary's fairness, and bad flags or weights refused."""

import json

import pytest

from tests.client.cli_runs import smq

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
