"""AWS's quota-management notebook for SageMaker training (SDK v3), as written, against
`smq local-api`: only its import line changes. Its three steps: QS1's high and medium jobs are
dispatched (medium on capacity QS2 lends); QS2's job reclaims it (medium back to RUNNABLE);
raising QS1's low job to priority 4 preempts within QS1."""

import pytest
from tjq import TrainingQueue, TrainingQueuedJob  # was: sagemaker.train.aws_batch...
from tjq.errors import NotConfigured
from tjq.local.calls import ROLE_ARN

from job_queue.share_config import parse_shares
from tests.client.conftest import G5, quiet_local_api, wait_until
from tests.sdk.test_training_queue import IMAGE

JOB_QUEUE_NAME = "ml-g5-xl-quota-queue"
QUOTA_SHARES = [
    {
        "name": "QS1",
        "capacity": {G5: 1},
        "strategy": "LEND_AND_BORROW",
        "borrow_limit": 200,
        "in_share_preemption": True,
    },
    {"name": "QS2", "capacity": {G5: 1}, "strategy": "LEND", "in_share_preemption": False},
    {"name": "QS3", "capacity": {G5: 1}, "strategy": "RESERVE", "in_share_preemption": False},
]


@pytest.fixture(scope="module")
def quota_api():
    with quiet_local_api(
        queue_name=JOB_QUEUE_NAME,
        shares=parse_shares(QUOTA_SHARES),
        run_seconds=3600,
        stop_seconds=0.5,
    ) as local:
        yield local


@pytest.fixture
def notebook_env(quota_api, monkeypatch):
    for name, value in quota_api.environment().items():
        monkeypatch.setenv(name, value)
    return quota_api


@pytest.fixture
def model_trainer(source):
    # The notebook's trainer, as it builds it.
    from sagemaker.core.training.configs import Compute, SourceCode, StoppingCondition
    from sagemaker.train.model_trainer import ModelTrainer

    return ModelTrainer(
        training_image=IMAGE,
        source_code=SourceCode(source_dir=source, entry_script="train.py"),
        compute=Compute(instance_type="ml.g5.xlarge", instance_count=1),
        stopping_condition=StoppingCondition(max_runtime_in_seconds=3600),
        role=ROLE_ARN,
        base_job_name="quota-management",
    )


def status(job) -> str:
    return job.describe()["status"]


def test_the_quota_management_notebook_runs_unchanged(notebook_env, model_trainer):
    queue = TrainingQueue(JOB_QUEUE_NAME)
    assert queue.queue_name == JOB_QUEUE_NAME

    # Step 1: QS1 submits three jobs; high runs on QS1's own instance, medium borrows QS2's.
    qs1_high = queue.submit(
        job_name="qs1_job_high",
        training_job=model_trainer,
        quota_share_name="QS1",
        priority=3,
        inputs=None,
    )
    qs1_medium = queue.submit(
        job_name="qs1_job_medium",
        training_job=model_trainer,
        quota_share_name="QS1",
        priority=2,
        inputs=None,
    )
    qs1_low = queue.submit(
        job_name="qs1_job_low",
        training_job=model_trainer,
        quota_share_name="QS1",
        priority=1,
        inputs=None,
    )
    assert isinstance(qs1_high, TrainingQueuedJob)
    wait_until(lambda: status(qs1_high) == status(qs1_medium) == "RUNNING", "high and medium")
    assert status(qs1_low) == "RUNNABLE"
    running = {job.job_name for job in queue.list_jobs_by_share(quota_share_name="QS1")}
    assert running == {"qs1_job_high", "qs1_job_medium", "qs1_job_low"}
    by_status = queue.list_jobs_by_share(status="RUNNING", quota_share_name="QS1")
    assert {job.job_name for job in by_status} == {"qs1_job_high", "qs1_job_medium"}
    described = qs1_high.describe()
    assert described["name"] == "qs1_job_high"  # the Batch name, kept by the queue
    assert described["sagemaker_job_name"].startswith("qs1-job-high-")  # as SageMaker runs it
    shares = {s["name"]: s for s in notebook_env.cloud.api("GET", "/shares")[1]["shares"]}
    assert shares["QS1"]["instance_types"][G5]["borrowed"] == 1

    # Step 2: QS2 wants its instance back: the borrowing medium job is reclaimed.
    qs2_job = queue.submit(
        job_name="qs2_job_1",
        training_job=model_trainer,
        quota_share_name="QS2",
        priority=1,
        inputs=None,
    )
    wait_until(lambda: status(qs2_job) == "RUNNING", "QS2's job to reclaim its instance")
    wait_until(lambda: status(qs1_medium) == "RUNNABLE", "medium back in the queue")
    assert qs1_medium.describe()["preemptions"] == 1

    # Step 3: QS1's low job is raised above high: it preempts high within QS1.
    qs1_low.update(scheduling_priority=4)
    wait_until(lambda: status(qs1_low) == "RUNNING", "low, now priority 4, to run")
    assert status(qs1_high) == "RUNNABLE"
    assert status(qs2_job) == "RUNNING"  # another share's job is not touched

    for job in (qs1_high, qs1_medium, qs1_low, qs2_job):
        job.terminate(reason="end of the notebook")


def test_a_queue_name_that_matches_nothing_names_where_it_looked(notebook_env, monkeypatch):
    with pytest.raises(NotConfigured, match=f"SMQ_API_URL .* is the queue '{JOB_QUEUE_NAME}'"):
        TrainingQueue("another-queue")
    with pytest.raises(ValueError, match="is not a queue name"):
        TrainingQueue("not a name")
    monkeypatch.delenv("SMQ_API_URL")
    with pytest.raises(NotConfigured, match="CloudFormation in us-east-1 has no stack 'gone'"):
        TrainingQueue("gone")
