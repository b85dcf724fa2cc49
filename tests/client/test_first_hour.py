"""A new user's first hour: nothing wrong is accepted without a word, every error is one
line, and the way to the first job is printed where it is needed."""

import json
import os
import shlex
import subprocess
import sys

import pytest
from tjq.cli import main
from tjq.errors import UnknownShare
from tjq.local.calls import training_request
from tjq.training_queue import TrainingQueue

from tests.client.cli_runs import smq

SHARES = [
    {
        "name": "vision",
        "capacity": {"ml.p5.48xlarge": 1},
        "strategy": "LEND",
        "in_share_preemption": False,
    }
]


@pytest.fixture
def shares_file(tmp_path):
    path = tmp_path / "shares.json"
    path.write_text(json.dumps(SHARES))
    return str(path)


def test_smq_alone_prints_its_commands(capsys):
    code, out, _ = smq(capsys)
    assert code == 2
    for command in ("status", "submit", "local-api", "config", "simulate"):
        assert command in out


def test_a_share_named_on_a_queue_without_shares_is_refused_and_nothing_is_queued(
    capsys, local_env, unique, tmp_path
):
    name = unique("vision-job")
    path = tmp_path / "request.json"
    path.write_text(json.dumps(training_request(name, 1)))
    code, _, err = smq(capsys, "submit", str(path), "--share", "vision")
    assert code == 1
    assert "Tags.share" in err and "'vision'" in err and "(HTTP 400)" in err
    code, _, err = smq(capsys, "show", name)
    assert code == 1 and "(HTTP 404)" in err


def test_status_of_a_share_the_queue_does_not_have_exits_1_naming_it(capsys, local_env):
    code, out, err = smq(capsys, "status", "--share", "nosuch")
    assert code == 1 and out == ""
    assert "share 'nosuch' is not a share of queue" in err and "it has no quota shares" in err


def test_listing_the_jobs_of_a_share_the_queue_does_not_have_names_it(local_env):
    queue = TrainingQueue(local_env.api_url)
    with pytest.raises(UnknownShare, match="'nosuch' is not a share of queue"):
        queue.list_jobs_by_share(quota_share_name="nosuch")


@pytest.mark.parametrize("command", [["status"], ["status", "--json"], ["events"]])
def test_a_closed_pipe_ends_smq_quietly(local_env, command):
    """`smq status | head -1`: the reader is gone before smq writes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tjq.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ.copy(),
    )
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert b"Traceback" not in err and b"BrokenPipe" not in err


def test_smq_status_piped_to_head_prints_the_first_line(local_env):
    result = subprocess.run(
        f"{sys.executable} -m tjq.cli status | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert result.returncode == 0 and result.stdout.strip()
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shares", "SHARES", "--capacity", "ml.p5.48xlarge=2"], "--capacity caps ml.p5.48xl"),
        (
            ["--shares", "SHARES", "--training-plan", "p=ml.p5.48xlarge:1:0:86400"],
            "--training-plan p: no share names it, so it would never be used",
        ),
        (["--allowed-role", "notanarn"], "--allowed-role: 'notanarn' is not an IAM role ARN"),
        (["--default-share", "vision"], "--default-share: 'vision' is not a share"),
        (["--fair-share-half-life", "-1"], "--fair-share-half-life must be 0 or more"),
        (["--fair-share-half-life", "a day"], "--fair-share-half-life must be a number"),
        (
            ["--fair-share-half-life", "60", "--fair-share-lookahead", "0"],
            "--fair-share-lookahead must be more than 0",
        ),
        (
            ["--fair-share-half-life", "60", "--fair-share-weights", "WEIGHTS"],
            "--fair-share-weights: the weight of alice must be more than 0, got 0",
        ),
        (["--fair-share-weights", "nowhere.json"], "--fair-share-weights nowhere.json"),
    ],
)
def test_local_api_refuses_flags_the_deployed_queue_would_refuse(
    capsys, shares_file, tmp_path, argv, message
):
    weights = tmp_path / "weights.json"
    weights.write_text('{"alice": 0}')
    named = {"SHARES": shares_file, "WEIGHTS": str(weights)}
    argv = [named.get(arg, arg) for arg in argv]
    code, out, err = smq(capsys, "local-api", "--port", "0", *argv)
    assert code == 1 and "local API is up" not in out
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run-seconds", "-5"], "argument --run-seconds: expected seconds >= 0, got -5"),
        (["--capacity", "ml.p5.48xlarg=2"], "'ml.p5.48xlarg' is not a SageMaker instance type"),
        (
            ["--training-plan", "p=ml.p5.48xlarg:1:0:86400"],
            "'ml.p5.48xlarg' is not a SageMaker instance type",
        ),
        (
            ["--training-plan", "p=ml.p5.48xlarge:1:0:1800"],
            "a reservation of 1800s would never be used",
        ),
    ],
)
def test_local_api_refuses_bad_values_before_it_starts(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(["local-api", *argv])
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_a_plot_that_cannot_be_written_is_refused_before_the_replay(capsys, tmp_path):
    workload = tmp_path / "w.csv"
    workload.write_text(
        "name,submit_s,duration_s,priority,instance_type,instance_count\n"
        "a,0,60,1,ml.p5.48xlarge,1\n"
    )
    argv = ["simulate", str(workload), "--capacity", "ml.p5.48xlarge=1"]
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--plot", "/nonexistent/x.png"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "no folder /nonexistent to write it in" in err
    assert "Traceback" not in err


TEMPLATE = os.path.join(os.path.dirname(__file__), "..", "..", "template.yaml")


def config_check(capsys, *argv):
    return smq(capsys, "config", "check", "--template", TEMPLATE, *argv)


def test_config_check_passes_parameters_that_agree(capsys):
    code, out, _ = config_check(capsys, "--capacity", '{"ml.p5.48xlarge": 2}')
    assert code == 0 and "the parameters are consistent: capacity 2 x ml.p5.48xlarge" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "Capacity is not set"),
        (
            ["--capacity", '{"ml.p5.48xlarge": 2, "ml.g5.xlarge": 1}'],
            "Capacity: ml.g5.xlarge not in CappedInstanceTypes (ml.p5.48xlarge)",
        ),
        (
            ["--capacity", '{"ml.g5.xlarge": 1}', "--capped", "ml.g5.xlarge"],
            None,
        ),
        (
            [
                "--capacity",
                '{"ml.p5.48xlarg": [{"training_plan": '
                '"arn:aws:sagemaker:us-east-1:123456789012:training-plan/week"}]}',
            ],
            "Capacity: 'ml.p5.48xlarg' is not a SageMaker instance type",
        ),
        (
            [
                "--capacity",
                '{"ml.p5.48xlarge": [{"training_plan": '
                '"arn:aws:sagemaker:us-east-1:123456789012:training-plan/week"}]}',
            ],
            "is not in TrainingPlanArns, so the queue may not describe it",
        ),
        (["--capacity", '{"ml.p5.48xlarge": 2}', "--shares", "SHARES"], "Capacity caps"),
        (["--shares", "SHARES", "--parameter", "DefaultShare=nlp"], "DefaultShare: 'nlp' is not"),
        (["--capacity", '{"ml.p5.48xlarge": 2}', "--parameter", "Nope=1"], "Nope: not a param"),
        (
            ["--capacity", '{"ml.p5.48xlarge": 2}', "--parameter", "FairShareHalfLifeSeconds=-5"],
            "FairShareHalfLifeSeconds must be 0 or more (0: off), got '-5'",
        ),
        (
            ["--capacity", '{"ml.p5.48xlarge": 2}', "--parameter", 'FairShareWeights={"a": 0}'],
            "FairShareWeights: the weight of a must be more than 0, got 0",
        ),
    ],
)
def test_config_check_refuses_what_the_function_would_refuse_at_cold_start(
    capsys, shares_file, argv, message
):
    argv = [shares_file if arg == "SHARES" else arg for arg in argv]
    code, out, err = config_check(capsys, *argv)
    if message is None:
        assert code == 0 and "consistent" in out
    else:
        assert code == 1 and message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("form", ["string", "list"])
def test_config_check_reads_the_parameters_sam_deploy_would_use(capsys, tmp_path, form):
    """samconfig.toml's parameter_overrides, as `sam deploy --guided` writes them (one
    shell-quoted string) or as a list."""
    capacity = json.dumps({"ml.g5.xlarge": 1})
    items = [f"Capacity={capacity}", "CappedInstanceTypes=ml.p5.48xlarge"]
    if form == "string":
        value = json.dumps(" ".join(shlex.quote(item) for item in items))
    else:
        value = json.dumps(items)
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text(
        f"version = 0.1\n[default.deploy.parameters]\nparameter_overrides = {value}\n"
    )
    code, _, err = smq(
        capsys, "config", "check", "--template", TEMPLATE, "--samconfig", str(samconfig)
    )
    assert code == 1 and "Capacity: ml.g5.xlarge not in CappedInstanceTypes" in err
