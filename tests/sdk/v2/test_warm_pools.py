"""The original post's estimator, with its `keep_alive_period_in_seconds=60`, through the real
SageMaker SDK v2 and HTTP against the local API: queued, run, its pool shown by `smq status`,
and the next matching job started on it."""

import pytest
from sagemaker.pytorch import PyTorch
from tjq import QueueTrainingJobSession
from tjq.cli import main
from tjq.local.calls import ROLE_ARN

from tests.client.conftest import quiet_local_api, wait_until

INSTANCE = "ml.g5.xlarge"


@pytest.fixture(scope="module")
def warm_api():
    with quiet_local_api(capacity={INSTANCE: 1}, run_seconds=1, stop_seconds=0.5) as local:
        yield local


@pytest.fixture
def session(warm_api, monkeypatch):
    for name, value in warm_api.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return QueueTrainingJobSession(poll_seconds=0.2, out=lambda _: None)


def posts_estimator(session, source) -> PyTorch:
    """The blog's estimator: a priority tag and a one-minute keep-alive."""
    return PyTorch(
        entry_point="train.py",
        source_dir=source,
        role=ROLE_ARN,
        framework_version="2.3",
        py_version="py311",
        instance_count=1,
        instance_type=INSTANCE,
        keep_alive_period_in_seconds=60,
        tags=[{"Key": "priority", "Value": "1"}],
        sagemaker_session=session,
    )


def test_the_posts_estimator_leaves_a_pool_that_the_next_job_starts_on(session, tmp_path, capsys):
    (tmp_path / "train.py").write_text("print('training')\n")
    source = str(tmp_path)

    first = posts_estimator(session, source)
    first.fit(wait=True, job_name="post-first")
    assert first.latest_training_job.describe()["TrainingJobStatus"] == "Completed"

    pools = wait_until(lambda: session.queue.jobs()["pools"], "the pool to be listed")
    assert [(p["job"], p["instance_count"]) for p in pools] == [("post-first", 1)]
    capsys.readouterr()
    assert main(["status"]) == 0
    assert "warm pool of post-first: 1 x ml.g5.xlarge, expires in" in capsys.readouterr().out

    posts_estimator(session, source).fit(wait=False, job_name="post-second")
    (attempt,) = session.queue.job("post-second")["attempts"]
    assert (attempt["start"], attempt["warm_pool_of"]) == ("warm", "post-first")
