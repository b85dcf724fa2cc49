"""The README's notebook section works as written, with the installed SDK: its code blocks
run in order against `smq local-api` (only `role`, the inputs and a request are given, as a
notebook would have them; the API URL is the local API's)."""

import re
from pathlib import Path

import pytest
from tjq.api import QueueClient
from tjq.local.calls import ROLE_ARN, training_request

from job_queue.scheduler import Share, Strategy
from tests.client.conftest import quiet_local_api
from tests.conftest import P5
from tests.sdk.conftest import SDK

README = Path(__file__).parents[2] / "README.md"


def block(heading: str) -> str:
    """The first Python block under the README heading ``heading``."""
    text = README.read_text()
    section = text[text.index(f"\n{heading}\n") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def without_v3_only_lines(code: str) -> str:
    return "\n".join(line for line in code.splitlines() if "# v3:" not in line)


@pytest.fixture
def readme_queue(monkeypatch):
    """A local API as the README's blocks expect it: two p5 in quota shares, "vision" (the
    share the AWS-Batch-style block names, and the default one) and "nlp"."""
    shares = (
        Share("vision", {P5: 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
        Share("nlp", {P5: 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
    )
    with quiet_local_api(
        capacity={P5: 2}, shares=shares, default_share="vision", run_seconds=2, stop_seconds=0.5
    ) as local:
        for name, value in local.environment().items():
            monkeypatch.setenv(name, value)
        yield local


@pytest.fixture
def notebook(readme_queue, source, monkeypatch):
    """A notebook's namespace, in a folder with its train.py. The emulated jobs train for
    an hour (as real ones would, longer than the blocks take), except sweep-1, which the
    block waits for: it trains a second."""
    monkeypatch.chdir(source)

    def train_as_the_story_needs(job) -> None:
        job.ends_at = job.created_at + (1 if job.name == "sweep-1" else 3600)

    monkeypatch.setattr(readme_queue.cloud.sagemaker, "on_create", train_as_the_story_needs)
    return {"role": ROLE_ARN}


def test_the_notebook_section_runs_as_written(notebook):
    queue = QueueClient.from_environment()
    if SDK >= 3:
        exec(block("### SDK v3: `ModelTrainer.train()`"), notebook)
        assert queue.job(notebook["trainer"]._latest_training_job.training_job_name)
    else:
        exec(block("### SDK v2: `estimator.fit()`"), notebook)
        assert queue.job("my-job")
        notebook["trainer"] = notebook["estimator"]

    notebook.update(inputs=None, inputs_a=None, inputs_b=None)
    queue_block = block("### `TrainingQueue`, as AWS Batch's")
    exec(queue_block if SDK >= 3 else without_v3_only_lines(queue_block), notebook)
    assert notebook["job"].describe()["status"] == "SUCCEEDED"
    assert notebook["jobs"][1].describe()["state"] == "cancelled"
    assert queue.job(notebook["jobs"][0].job_name)["priority"] == 8
    if SDK >= 3:
        assert notebook["trainer"]._latest_training_job.training_job_name == "sweep-1"

    notebook["request"] = training_request("scripted-from-the-readme", 1, run_seconds=3600)
    exec(block("### Plain boto3"), notebook)
    assert queue.job("scripted-from-the-readme")["priority"] == 1
    for name in [j["name"] for j in queue.jobs()["jobs"]]:
        queue.cancel(name)
