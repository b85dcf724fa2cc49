"""Quota shares from the user's side: `smq shares`, `smq status --share`, `smq submit --share`,
`smq shares apply`, and `QueueTrainingJobSession(share=...)`, against a local API with shares."""

import contextlib
import json
import time

import pytest
from tjq.api import QueueClient
from tjq.errors import JobConflict
from tjq.local.calls import training_request

from job_queue.scheduler import Share, Strategy
from job_queue.share_config import share_to_dict
from tests.client.cli_runs import smq
from tests.client.conftest import quiet_local_api

G5 = "ml.g5.xlarge"
SHARES = (
    Share("QS1", {G5: 1}, Strategy.LEND_AND_BORROW, borrow_limit=200, in_share_preemption=True),
    Share("QS2", {G5: 1}, Strategy.LEND),
    Share("QS3", {G5: 1}, Strategy.RESERVE),
)


@pytest.fixture(scope="module")
def shared_api():
    with quiet_local_api(shares=SHARES, run_seconds=600, stop_seconds=0.2) as local:
        yield local


@pytest.fixture
def env(shared_api, monkeypatch):
    for name, value in shared_api.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    yield QueueClient.from_environment()
    # Leave an empty queue: cancel what is left and wait for the stops (real time).
    client = QueueClient.from_environment()
    deadline = time.monotonic() + 60
    while (listed := client.jobs()["jobs"]) and time.monotonic() < deadline:
        for job in listed:
            if job["state"] != "cancelling":
                with contextlib.suppress(JobConflict):  # it ended meanwhile
                    client.cancel(job["name"])
        time.sleep(0.1)
    client.set_shares([share_to_dict(s) for s in SHARES])


def test_shares_shows_limit_use_borrowing_and_lending(capsys, env):
    env.submit(training_request("team-a-1", 2, instance_type=G5, share="QS1"))
    env.submit(training_request("team-a-2", 1, instance_type=G5, share="QS1"))
    code, out, _ = smq(capsys, "shares")
    assert code == 0
    lines = {line.split()[0]: line.split() for line in out.splitlines()[2:5]}
    # Share, strategy (borrow limit), type, limit, in use, borrowed, lent
    assert lines["QS1"][-4:] == ["1", "2", "1", "0"]
    assert lines["QS2"][-4:] == ["1", "0", "0", "1"]
    assert lines["QS3"][-4:] == ["1", "0", "0", "0"]
    assert "LEND_AND_BORROW (200%)" in out
    code, out, _ = smq(capsys, "shares", "--json")
    assert {s["name"]: s["waiting"] for s in json.loads(out)["shares"]} == {
        "QS1": 0,
        "QS2": 0,
        "QS3": 0,
    }


def test_submit_with_a_share_and_status_by_share(capsys, env, tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(training_request("team-c-1", 1, instance_type=G5)))
    code, out, _ = smq(capsys, "submit", str(path), "--share", "QS3")
    assert code == 0, out
    env.submit(training_request("team-b-1", 1, instance_type=G5, share="QS2"))
    code, out, _ = smq(capsys, "status", "--share", "QS3")
    assert code == 0
    assert "team-c-1" in out and "team-b-1" not in out
    assert out.splitlines()[0].split()[:5] == ["Job", "Name", "State", "Priority", "Share"]
    code, out, _ = smq(capsys, "show", "team-c-1")
    assert "share" in out and "QS3" in out


def test_a_job_without_a_share_is_refused_naming_the_shares(capsys, env, tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(training_request("nameless", 1, instance_type=G5)))
    code, out, err = smq(capsys, "submit", str(path))
    assert code == 1 and out == ""
    assert "QS1, QS2, QS3" in err and "(HTTP 400)" in err


def test_shares_apply_changes_the_layout_and_refuses_a_bad_file(capsys, env, tmp_path):
    layout = [share_to_dict(s) for s in SHARES]
    layout[2]["capacity"] = {G5: 2}
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(layout))
    layout[0]["strategy"] = "BORROW"
    bad.write_text(json.dumps(layout))
    code, out, _ = smq(capsys, "shares", "apply", str(good))
    assert code == 0 and "QS3" in out
    assert "replaced by arn:aws:iam::123456789012:user/testing at " in out  # who, and when
    assert env.jobs()["capacity"] == {G5: 4}
    code, out, err = smq(capsys, "shares", "apply", str(bad))
    assert code == 1 and "strategy 'BORROW' is not one of" in err
    assert env.jobs()["capacity"] == {G5: 4}


def test_local_api_refuses_a_bad_shares_file(capsys, tmp_path):
    path = tmp_path / "shares.json"
    path.write_text(json.dumps([{"name": "X", "capacity": {G5: 1}, "strategy": "LEND"}]))
    code, _, err = smq(capsys, "local-api", "--shares", str(path))
    assert code == 1 and "share X: in_share_preemption is required" in err


def test_shares_check_validates_a_file_without_a_queue(capsys, tmp_path):
    path = tmp_path / "shares.json"
    path.write_text(json.dumps([share_to_dict(s) for s in SHARES]))
    code, out, _ = smq(capsys, "shares", "check", str(path))
    assert (code, out.strip()) == (0, f"{path}: 3 shares, capacity 3 x ml.g5.xlarge")
    path.write_text(json.dumps([{**share_to_dict(SHARES[2]), "borrow_limit": 50}]))
    code, _, err = smq(capsys, "shares", "check", str(path))
    assert code == 1 and "share QS3: borrow_limit applies only to LEND_AND_BORROW" in err


PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/research-week"
WITH_PLAN = [
    {
        "name": "research",
        "capacity": {"ml.p5.48xlarge": [1, {"training_plan": PLAN}]},
        "strategy": "LEND",
        "in_share_preemption": False,
    }
]


def test_a_share_that_names_a_training_plan_is_checked_and_needs_that_plan_locally(
    capsys, tmp_path
):
    path = tmp_path / "shares.json"
    path.write_text(json.dumps(WITH_PLAN))
    code, out, _ = smq(capsys, "shares", "check", str(path))
    assert (code, out.strip()) == (
        0,
        f"{path}: 1 shares, capacity 1 x ml.p5.48xlarge, training plan research-week "
        "(ml.p5.48xlarge) for research",
    )
    code, _, err = smq(capsys, "local-api", "--shares", str(path))
    assert code == 1
    assert f"share research names training plan {PLAN}, which no --training-plan gives" in err
