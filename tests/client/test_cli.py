"""`smq`, run in-process against the local API (and a scripted one for failures)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from tjq.cli import main
from tjq.local.calls import training_request

from tests.client.cli_runs import smq
from tests.client.conftest import smq_process, wait_until
from tests.client.stub_api import ScriptedApi


@pytest.fixture
def queued(local_env, unique, capsys):
    """A job waiting behind a running one on the single ml.g5.xlarge."""
    from tjq.api import QueueClient

    client = QueueClient.from_environment()
    running, waiting = unique("running"), unique("waiting")
    for name, priority in ((running, 9), (waiting, 1)):
        request = training_request(name, priority, instance_type="ml.g5.xlarge", run_seconds=120)
        client.submit(request)
    # The previous test's jobs may still be stopping (real time) and holding the instance.
    deadline = time.monotonic() + 60
    while client.job(running)["state"] != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    yield running, waiting
    for name in (running, waiting):
        main(["cancel", name])
    capsys.readouterr()


def test_status_prints_the_queue_as_a_table(capsys, queued):
    running, waiting = queued
    code, out, _ = smq(capsys, "status")
    assert code == 0
    assert "Job Name" in out and "State" in out and "Priority" in out and "Position" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()}
    assert "running" in lines[running] and "1 x ml.g5.xlarge" in lines[running]
    assert "pending" in lines[waiting] and "waiting" in lines[waiting]
    assert "capacity:" in out


def test_status_json_is_the_apis_answer(capsys, queued):
    code, out, _ = smq(capsys, "status", "--json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)["jobs"]}
    assert rows[queued[1]]["position"] >= 1


def test_show_prints_a_job_and_its_attempts(capsys, queued):
    running, _ = queued
    code, out, _ = smq(capsys, "show", running)
    assert code == 0
    assert running in out and "running" in out
    assert "Attempt" in out and "SageMaker job" in out
    assert "total_runtime_seconds" in out  # how long its attempts ran in all
    code, out, _ = smq(capsys, "show", running, "--json")
    assert json.loads(out)["attempts"][0]["sagemaker_job_name"] == running


def test_priority_and_cancel(capsys, queued):
    _, waiting = queued
    code, out, _ = smq(capsys, "priority", waiting, "4")
    assert (code, out.strip()) == (0, f"{waiting}: priority 4 (pending)")
    code, out, _ = smq(capsys, "cancel", waiting)
    assert (code, out.strip()) == (0, f"{waiting}: cancelled")


def test_submit_a_request_file_with_a_priority(capsys, local_env, unique, tmp_path):
    name = unique()
    path = tmp_path / "request.json"
    path.write_text(json.dumps(training_request(name, 1, instance_type="ml.g4dn.xlarge")))
    code, out, _ = smq(capsys, "submit", str(path), "--priority", "7")
    assert code == 0 and out.startswith(f"{name}: ")
    code, out, _ = smq(capsys, "show", name, "--json")
    assert json.loads(out)["priority"] == 7
    main(["cancel", name])


def test_submit_says_where_a_waiting_job_is_and_when_it_is_expected_to_start(
    capsys, queued, unique, tmp_path
):
    name = unique("behind")
    path = tmp_path / "request.json"
    path.write_text(json.dumps(training_request(name, 1, instance_type="ml.g5.xlarge")))
    try:
        code, out, _ = smq(capsys, "submit", str(path))
        assert code == 0
        assert out.startswith(f"{name}: queued at position 2 (priority 1), expected to start ")
    finally:
        main(["cancel", name])


def test_submit_says_how_the_job_checkpoints_and_show_what_a_preemption_lost(
    capsys, local_env, unique, tmp_path
):
    name, urgent = unique("hourly"), unique("urgent")
    path = tmp_path / "request.json"
    request = training_request(name, 1, instance_type="ml.g4dn.xlarge", run_seconds=3600)

    def state(job: str) -> str:
        status, body = local_env.cloud.api("GET", f"/jobs/{job}")
        return body["job"]["state"] if status == 200 else "never queued"

    try:
        path.write_text(json.dumps(request))
        code, _, _ = smq(capsys, "submit", str(path), "--checkpoint", "3600")
        assert code == 0
        code, out, _ = smq(capsys, "show", name, "--json")
        assert json.loads(out)["checkpoint"] == "3600"
        wait_until(lambda: state(name) == "running", f"{name} to run")
        path.write_text(json.dumps({**request, "TrainingJobName": urgent}))
        smq(capsys, "submit", str(path), "--priority", "9")
        wait_until(lambda: state(name) in ("preempting", "preempted"), f"{name} preempted")
        code, out, _ = smq(capsys, "show", name)
        assert code == 0 and "checkpoint" in out
        (line,) = [line for line in out.splitlines() if "preempted" in line and urgent in line]
        assert f"for {urgent}, losing " in line and line.endswith("s of work")
    finally:  # the single ml.g4dn.xlarge is left free for the next test
        for job in (name, urgent):
            main(["cancel", job])
        ended = {"cancelled", "never queued"}
        wait_until(lambda: {state(name), state(urgent)} <= ended, "the cancels")
    code, _, err = smq(capsys, "submit", str(path), "--checkpoint", "sometimes")
    assert code == 1
    assert "Tags.checkpoint must be 'on-stop' or a positive number of seconds" in err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("bucket/checkpoints/", "'bucket/checkpoints/' is not an s3:// URI"),
        ("https://bucket.s3.amazonaws.com/", "is not an s3:// URI"),
    ],
)
def test_local_api_refuses_a_checkpoint_location_outside_s3(capsys, value, message):
    with pytest.raises(SystemExit) as exited:
        main(["local-api", "--checkpoint-s3-uri", value])
    assert exited.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("command", [["show"], ["cancel"], ["priority", "--", "3"]])
def test_unknown_job_exits_1_with_the_servers_message(capsys, local_env, command):
    argv = [command[0], "no-such-job", *command[1:]]
    if command[0] == "priority":
        argv = ["priority", "no-such-job", "3"]
    code, out, err = smq(capsys, *argv)
    assert code == 1 and out == ""
    assert err.strip() == "smq: error: no job named no-such-job in the queue (HTTP 404)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "is not a CreateTrainingJob request"),
        ('{"JobName": "x"}', "is not a CreateTrainingJob request"),
    ],
    ids=["not JSON", "not an object", "another API's request"],
)
def test_submit_refuses_a_file_that_is_not_a_request(capsys, local_env, tmp_path, content, message):
    path = tmp_path / "request.json"
    path.write_text(content)
    code, _, err = smq(capsys, "submit", str(path))
    assert code == 1 and message in err and "Traceback" not in err


def test_submit_of_a_missing_file(capsys, local_env, tmp_path):
    code, _, err = smq(capsys, "submit", str(tmp_path / "absent.json"))
    assert code == 1 and "cannot read" in err


def test_submit_shows_the_servers_refusal(capsys, local_env, unique, tmp_path):
    request = training_request(unique(), 1, instance_type="ml.m5.large")
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    code, _, err = smq(capsys, "submit", str(path))
    assert code == 1 and "ml.m5.large has no capacity" in err and "(HTTP 400)" in err


def test_missing_url_is_a_clear_error(capsys, monkeypatch):
    monkeypatch.delenv("SMQ_API_URL", raising=False)
    code, _, err = smq(capsys, "status")
    assert code == 1 and "SMQ_API_URL" in err


def test_unreachable_endpoint_is_a_clear_error_without_traceback(capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    code, _, err = smq(capsys, "status", "--url", "http://127.0.0.1:9/prod")
    assert code == 1
    assert err.strip().startswith(
        "smq: error: cannot reach the queue API at http://127.0.0.1:9/prod"
    )
    assert "Traceback" not in err


def test_denied_credentials_show_the_servers_message(capsys, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    message = "The security token included in the request is invalid."
    api = ScriptedApi([(403, {"message": message})])
    try:
        code, _, err = smq(capsys, "status", "--url", api.url)
    finally:
        api.close()
    assert code == 1 and message in err and "(HTTP 403)" in err


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["priority", "job", "high"])
    assert exited.value.code == 2
    with pytest.raises(SystemExit) as exited:
        main(["local-api", "--capacity", "p5=two"])
    assert exited.value.code == 2
    assert "TYPE=N" in capsys.readouterr().err


def test_status_does_not_import_the_sagemaker_sdk(local_env):
    probe = (
        "import sys; from tjq.cli import main; code = main(['status']); "
        "assert 'sagemaker' not in sys.modules, 'sagemaker was imported'; sys.exit(code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_local_api_prints_what_to_export_and_stops_on_ctrl_c(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SMQ_", "AWS_ENDPOINT"))}
    process = smq_process(
        "local-api",
        "--port",
        "0",
        "--capacity",
        "ml.g5.xlarge=1",
        "--capacity",
        "ml.c5.18xlarge=unlimited",
        "--training-plan",
        "g5-plan=ml.g5.xlarge:1:0:3600",
        env=env,
    )
    try:
        exports, line, printed = {}, "", []
        deadline = time.monotonic() + 60
        while "training plan" not in line:
            line = process.stdout.readline()
            assert line or time.monotonic() < deadline, process.stderr.read()
            printed.append(line)
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").strip().partition("=")
                exports[name] = value
        assert {
            "SMQ_API_URL",
            "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_SAGEMAKER",
            "AWS_DEFAULT_REGION",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
        } <= set(exports)
        status = subprocess.run(
            [sys.executable, "-m", "tjq.cli", "status"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**env, **exports},
        )
        assert status.returncode == 0, status.stderr
        assert "on-demand capacity: 1 x ml.g5.xlarge, ml.c5.18xlarge uncapped" in status.stdout
        # The emulated account's plan is the queue's too.
        assert "training plan g5-plan (ml.g5.xlarge, Active): 0 of 1 reserved in use" in (
            status.stdout
        )
        plan_arn = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/g5-plan"
        assert f"training plan g5-plan: {plan_arn}\n" in printed
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert "stopping" in out


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        (
            "--head-of-line-limits",
            '[{"reason": "soon", "seconds": 60, "action": "alarm"}]',
            "--head-of-line-limits[0].reason: must be one of",
        ),
        ("--retry-on-failure", "[1]", "--retry-on-failure[0]: must be an object"),
        ("--max-preemptions", "many", "--max-preemptions: must be a whole number from 0"),
    ],
)
def test_local_api_refuses_a_bad_limit_naming_its_flag(capsys, flag, value, message):
    assert main(["local-api", flag, value]) == 1
    assert message in capsys.readouterr().err


def test_local_api_refuses_bad_prices_naming_the_flag_and_the_entry(capsys, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text('{"ml.p5.48xlarge": -3}')
    assert main(["local-api", "--prices", str(prices)]) == 1
    assert "--prices: ml.p5.48xlarge must be a number >= 0" in capsys.readouterr().err
    assert main(["local-api", "--prices", str(tmp_path / "none.json")]) == 1
    assert f"--prices {tmp_path / 'none.json'}: No such file" in capsys.readouterr().err


def test_an_admin_holds_and_resumes_the_queue(capsys, local_env):
    code, out, _ = smq(capsys, "queue", "hold")
    try:
        assert code == 0 and out.startswith("the queue is held by arn:")
        _, status, _ = smq(capsys, "status")
        assert status.startswith("the queue is held by arn:")
    finally:
        code, out, _ = smq(capsys, "queue", "resume")
    assert (code, out.strip()) == (0, "nothing is held: jobs start as usual")
    code, _, err = smq(capsys, "queue", "hold", "--share", "nope")
    assert code == 1 and "share nope is not one of the queue's shares" in err


def test_submit_after_other_jobs_and_show_the_chain(capsys, queued, unique, tmp_path):
    running, waiting = queued
    evaluate, export = unique("evaluate"), unique("export")
    try:
        for name, after in ((evaluate, f"{running},{waiting}"), (export, evaluate)):
            path = tmp_path / f"{name}.json"
            path.write_text(json.dumps(training_request(name, 1, instance_type="ml.g5.xlarge")))
            code, out, _ = smq(capsys, "submit", str(path), "--after", after)
            assert code == 0, out
            assert out.startswith(f"{name}: queued until its dependency holds (priority 1)")
            assert "dependency: waits for " in out
        code, out, _ = smq(capsys, "show", export)
        assert code == 0
        chain = out[out.index("Waits for") :].splitlines()[1:4]
        assert [line.split() for line in chain] == [
            [evaluate, "pending", "[afterok]"],
            [running, "running", "[afterok]"],
            [waiting, "pending", "[afterok]"],
        ]
        code, out, _ = smq(capsys, "status")
        why = next(line for line in out.splitlines() if line.startswith(export))
        assert "dependency: waits for" in why
    finally:
        for name in (export, evaluate):
            main(["cancel", name])


def test_submit_after_with_an_unknown_dependency_type_is_an_error(capsys, local_env, tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(training_request("x", 1)))
    with pytest.raises(SystemExit):
        smq(capsys, "submit", str(path), "--after", "a", "--dependency", "afterany")
    assert "invalid choice: 'afterany'" in capsys.readouterr().err
