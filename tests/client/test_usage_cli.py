"""`smq usage`: fair share's view from the shell, against a local API with fair share on."""

import csv
import io
import json

import pytest
from tjq.api import QueueClient
from tjq.cli import main
from tjq.local.calls import training_request

from job_queue import tags
from job_queue.scheduler import Policy
from job_queue.scheduler.budgets import Budget, Holder, Unit
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


def test_usage_reports_who_held_the_instances_as_a_table_csv_and_a_plot(
    fair_api, monkeypatch, capsys, tmp_path
):
    for name, value in fair_api.environment().items():
        monkeypatch.setenv(name, value)
    client = QueueClient.from_environment()
    client.submit(training_request("ledger-run", 1))
    holder = next(j["name"] for j in client.jobs()["jobs"] if j["state"] == "running")

    assert main(["usage", "--by", "job", "--since", "1d"]) == 0
    out = capsys.readouterr().out
    assert "usage from " in out and ", by job (instance-hours;" in out
    header = out.splitlines()[2]
    assert "billable (instance-h)" in header and "cost ($)" in header and "preempted" in header
    assert any(line.startswith(f"{holder} ") for line in out.splitlines())
    assert any(line.startswith("total ") for line in out.splitlines())
    assert "fair share by recent use" in out  # fair share's section follows

    assert main(["usage", "--by", "job", "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    row = next(r for r in rows if r["job"] == holder)
    assert int(row["attempts"]) == 1 and int(row["preemptions"]) == 0
    assert float(row["running_instance_hours"]) >= 0.0
    assert "total" not in {r["job"] for r in rows}

    picture = tmp_path / "usage.png"
    assert main(["usage", "--by", "submitter", "--plot", str(picture)]) == 0
    assert f"wrote {picture}" in capsys.readouterr().out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_usage_asked_for_a_window_it_cannot_read_says_which_option(fair_api, monkeypatch, capsys):
    for name, value in fair_api.environment().items():
        monkeypatch.setenv(name, value)
    assert main(["usage", "--since", "yesterday"]) == 1
    assert "since must be an ISO 8601 time" in capsys.readouterr().err
    assert main(["usage", "--since", "2026-11-02", "--until", "2026-11-01"]) == 1
    assert "since must be before until" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["usage", "--by", "team"])
    assert "invalid choice: 'team'" in capsys.readouterr().err


def test_usage_shows_where_each_budget_stands(monkeypatch, capsys):
    frozen = {Holder("submitter", "alice"): Budget(0, Unit.DOLLARS)}
    with quiet_local_api(capacity={"ml.p5.48xlarge": 1}, budgets=frozen) as local:
        for name, value in local.environment().items():
            monkeypatch.setenv(name, value)
        client = QueueClient.from_environment()
        request = training_request("alice-frozen", 1)
        request["Tags"].append({"Key": tags.FAIR_SHARE_ID, "Value": "alice"})
        client.submit(request)
        why = client.job("alice-frozen")["waiting_for"]
        assert why["code"] == "budget" and "submitter alice spent its budget" in why["message"]

        assert main(["usage"]) == 0
        out = capsys.readouterr().out
        row = next(line for line in out.splitlines() if line.startswith("submitter alice"))
        assert "0.0 of $0" in row and "wait" in row and "spent; frees never" in row
        assert main(["usage", "--json"]) == 0
        (standing,) = json.loads(capsys.readouterr().out)["budgets"]
        assert standing["is_spent"] and standing["budget"] == {
            "dollars": 0.0,
            "window_days": 30,
            "when_spent": "wait",
        }
