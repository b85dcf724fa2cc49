"""The README's quick start runs as written: its notebook cell, against `smq local-api`, with
SDK v3 (the cell is v3's), then `smq status`."""

from tjq.api import QueueClient
from tjq.cli import main

from tests.sdk.test_readme import block


def test_the_quick_start_cell_trains_a_job_through_the_queue(
    local_env, source, monkeypatch, capsys
):
    monkeypatch.chdir(source)
    notebook: dict = {}
    exec(block("## Quick start, on your machine"), notebook)
    name = notebook["trainer"]._latest_training_job.training_job_name
    assert name.startswith("quick-start-")
    job = QueueClient.from_environment().job(name)
    assert (job["state"], job["priority"]) == ("completed", 2)
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "capacity: 2 x ml.p5.48xlarge" in capsys.readouterr().out
