"""`smq local-api` names each caller after the access key that signed the request, and takes
admins and a priority ceiling: the rules can be tried on a laptop."""

import json

import pytest
from tjq.cli import main
from tjq.local.calls import training_request

from tests.client.conftest import G5, quiet_local_api
from tests.client.test_cli import smq

OPS = "arn:aws:iam::123456789012:user/ops"


@pytest.fixture(scope="module")
def guarded_api():
    with quiet_local_api(capacity={G5: 1}, run_seconds=600, admins=(OPS,), max_priority=10) as api:
        yield api


@pytest.fixture
def signed_as(guarded_api, monkeypatch):
    """Sign the next smq commands with this access key id."""
    for name, value in guarded_api.environment().items():
        monkeypatch.setenv(name, value)
    return lambda key: monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)


def test_the_caller_is_named_after_the_access_key_and_only_they_or_an_admin_may_cancel(
    capsys, signed_as, unique, tmp_path
):
    name = unique("alices")
    request = tmp_path / "request.json"
    request.write_text(json.dumps(training_request(name, instance_type=G5)))
    signed_as("alice")
    assert smq(capsys, "submit", str(request))[0] == 0
    code, out, _ = smq(capsys, "show", name)
    assert code == 0
    assert "arn:aws:iam::123456789012:user/alice" in out  # submitted_by, and the trail's "By"
    assert "submitted" in out

    signed_as("bob")
    code, _, err = smq(capsys, "cancel", name)
    assert code == 1 and "only the job's submitter" in err and "(HTTP 403)" in err

    signed_as("ops")
    assert smq(capsys, "cancel", name)[0] == 0
    code, out, _ = smq(capsys, "show", name, "--json")
    trail = json.loads(out)["history"]
    assert [(h["action"], h["by"]) for h in trail][-1] == ("cancelled", OPS)


def test_the_priority_ceiling_holds_for_users_and_not_for_admins(
    capsys, signed_as, unique, tmp_path
):
    request = tmp_path / "request.json"
    request.write_text(json.dumps(training_request(unique("urgent"), instance_type=G5)))
    signed_as("alice")
    code, _, err = smq(capsys, "submit", str(request), "--priority", "11")
    assert code == 1 and "the queue's MaxPriority of 10" in err
    signed_as("ops")
    assert smq(capsys, "submit", str(request), "--priority", "11")[0] == 0
    main(["cancel", json.loads(request.read_text())["TrainingJobName"]])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--admin", "alice"], "'alice' is not an IAM ARN pattern"),
        (["--max-priority", "10000"], "must be from -9999 to 9999"),
    ],
)
def test_bad_admins_and_ceilings_are_refused_at_start(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(["local-api", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_shares_check_refuses_a_share_above_the_queues_ceiling(capsys, tmp_path):
    shares = tmp_path / "shares.json"
    share = {"name": "vision", "capacity": {G5: 1}, "strategy": "LEND", "max_priority": 50}
    shares.write_text(json.dumps([{**share, "in_share_preemption": False}]))
    assert smq(capsys, "shares", "check", str(shares))[0] == 0
    code, _, err = smq(capsys, "shares", "check", str(shares), "--max-priority", "10")
    assert code == 1
    assert "share vision: max_priority 50 is above the queue's MaxPriority of 10" in err
