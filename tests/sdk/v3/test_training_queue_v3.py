"""What `tjq.TrainingQueue` does with SDK v3 alone: local-mode trainers, and a ModelTrainer
back from a job that ran (AWS Batch's `get_model_trainer`)."""

import pytest
from sagemaker.core.training.configs import Compute, SourceCode
from sagemaker.train import ModelTrainer
from sagemaker.train.model_trainer import Mode
from tjq import TrainingQueue
from tjq.errors import JobNotStarted
from tjq.local.calls import ROLE_ARN

from tests.client.conftest import G4
from tests.sdk.test_training_queue import IMAGE, training_job, uploaded


@pytest.fixture
def queue(local_env):
    return TrainingQueue(poll_seconds=0.2, out=lambda _: None)


def test_a_local_mode_trainer_is_refused_before_anything_is_sent(queue, source, unique):
    before = uploaded()
    local = ModelTrainer(
        training_image=IMAGE,
        source_code=SourceCode(source_dir=source, entry_script="train.py"),
        compute=Compute(instance_type="local_cpu", instance_count=1),
        role=ROLE_ARN,
        training_mode=Mode.LOCAL_CONTAINER,
    )
    with pytest.raises(ValueError, match="LOCAL_CONTAINER mode, which trains on this machine"):
        queue.submit(local, job_name=unique())
    assert uploaded() == before


def test_a_job_that_ran_gives_back_its_model_trainer_which_queues_again(queue, source, unique):
    blocker = queue.submit(training_job(source, priority=9), job_name=unique("blocker"))
    name = unique("ran")
    job = queue.submit(training_job(source, run_seconds=1), job_name=name)
    with pytest.raises(JobNotStarted, match=f"{name} has not run yet: it is queued at position"):
        job.get_model_trainer()
    blocker.terminate()
    job.result()

    trainer = job.get_model_trainer()
    assert (trainer.role, trainer.training_image) == (ROLE_ARN, IMAGE)
    assert trainer.compute.instance_type == G4
    assert trainer._latest_training_job.training_job_status == "Completed"
    trainer.train(wait=False)  # through the queue again
    again = trainer._latest_training_job.training_job_name
    assert again.startswith(name) and queue.get_job(again).describe()["state"] != "failed"
