"""`smq usage`: fair share's view from the shell, against a local API with fair share on."""

import json

import pytest
from tjq.api import QueueClient
from tjq.cli import main
from tjq.local.cloud import training_request

from job_queue.scheduler import Policy
from job_queue.scheduler.fair_share import FairShare
from tests.client.conftest import quiet_local_api


@pytest.fixture(scope="module")
def fair_api():
    fair = FairShare(half_life_s=86400.0)
    with quiet_local_api(
        capacity={"ml.p5.48xlarge": 1}, run_seconds=3600, policy=Policy(fair_share=fair)
    ) as local:
        yield local


def test_usage_lists_each_submitter_and_says_who_is_next(fair_api, monkeypatch, capsys):
    for name, value in fair_api.environment().items():
        monkeypatch.setenv(name, value)
    client = QueueClient.from_environment()
    client.submit(training_request("usage-first", 1))
    tagged = training_request("usage-tagged", 1)
    tagged["Tags"].append({"Key": "fair-share-id", "Value": "project-x"})
    client.submit(tagged)

    assert main(["usage"]) == 0
    out = capsys.readouterr().out
    assert "fair share by recent use (half-life 24 h)" in out
    assert "project-x" in out and "user/testing" in out
    assert "\nfair share: project-x is next among jobs of the same priority" in out
    assert main(["status"]) == 0
    assert "fair share: project-x is next" in capsys.readouterr().out

    assert main(["usage", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["next"]["submitter"] == "project-x"
    assert {row["submitter"] for row in answer["submitters"]} == {
        "project-x",
        "arn:aws:iam::123456789012:user/testing",
    }


def test_an_admin_applies_weights_from_a_file(fair_api, monkeypatch, capsys, tmp_path):
    for name, value in fair_api.environment().items():
        monkeypatch.setenv(name, value)
    weights = tmp_path / "weights.json"
    weights.write_text('{"project-x": 3}')
    assert main(["usage", "apply", str(weights), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["fair_share"]["weights"] == {"project-x": 3}
    assert main(["usage"]) == 0
    assert "weights set by arn:aws:iam::123456789012:user/testing" in capsys.readouterr().out
    weights.write_text('{"project-x": -1}')
    assert main(["usage", "apply", str(weights)]) == 1
    assert "the weight of project-x must be more than 0" in capsys.readouterr().err
