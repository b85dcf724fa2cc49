"""A job preempted under `smq local-api --run-scripts` resumes from the progress it saved:
the real SDK v3 (`ModelTrainer.train()`), a real training script using `tjq.training`, run by
the emulator, which stops it with SIGTERM as SageMaker does and keeps its checkpoints in
(emulated) S3 at the location the queue gave the job."""

import json

import boto3
from sagemaker.core.shapes import Tag
from sagemaker.core.training.configs import Compute, SourceCode
from sagemaker.train import ModelTrainer
from tjq import QueueTrainingJobSession
from tjq.job_logs import AttemptLogs
from tjq.local.calls import ROLE_ARN

from tests.client.conftest import G5, wait_until
from tests.sdk.scripts import CHECKPOINTS, SCRIPT
from tests.sdk.v3.test_model_trainer import IMAGE


def trainer(session, source, base, priority, **hyperparameters) -> ModelTrainer:
    return ModelTrainer(
        training_image=IMAGE,
        source_code=SourceCode(source_dir=source, entry_script="train.py"),
        compute=Compute(instance_type=G5, instance_count=1),
        role=ROLE_ARN,
        base_job_name=base,
        sagemaker_session=session,
        hyperparameters=hyperparameters,
        tags=[Tag(key="priority", value=str(priority))],
    )


def test_a_preempted_job_resumes_from_the_checkpoint_it_saved_on_stop(
    scripts_env, tmp_path, unique
):
    (tmp_path / "train.py").write_text(SCRIPT)
    session = QueueTrainingJobSession(checkpoint="on-stop", out=lambda _: None)
    low = trainer(session, str(tmp_path), unique("low"), 1)
    low.train(wait=False)
    name = low._latest_training_job.training_job_name
    logs = boto3.client("logs", endpoint_url=scripts_env.aws_url, region_name="us-east-1")
    first = AttemptLogs(logs, name)
    seen: list[str] = []
    wait_until(lambda: seen.extend(first.new_lines()) or "[algo-1] step 3" in seen, "low to train")

    high = trainer(session, str(tmp_path), unique("high"), 9, steps=2)
    high.train(wait=False)
    wait_until(lambda: session.queue.job(name)["state"] == "completed", "low to finish", 120)

    job = session.queue.job(name)
    assert [a["outcome"] for a in job["attempts"]] == ["preempted", "completed"]
    assert job["checkpoint"] == "on-stop"
    assert job["history"][-1]["lost_work_seconds"] == 0
    # What the first attempt saved as it was stopped is in S3, where the queue put it...
    location = f"{CHECKPOINTS}{name}/"
    assert job["checkpoint_s3_uri"] == location
    s3 = boto3.client("s3", endpoint_url=scripts_env.aws_url, region_name="us-east-1")
    keys = [
        o["Key"]
        for o in s3.list_objects_v2(Bucket="sagemaker-local", Prefix=f"checkpoints/{name}/")[
            "Contents"
        ]
    ]
    (key,) = keys
    saved = json.loads(s3.get_object(Bucket="sagemaker-local", Key=key)["Body"].read())["step"]
    seen += first.new_lines()
    assert f"[algo-1] saved at step {saved}" in seen and saved >= 3
    # ... and the second attempt, given the same location, went on from there.
    second = AttemptLogs(logs, job["attempts"][1]["sagemaker_job_name"]).new_lines()
    assert f"[algo-1] resumed from step {saved}" in second
    assert f"[algo-1] finished at step {saved + 5}" in second
    assert "[algo-1] step 1" not in second
    emulated = scripts_env.cloud.sagemaker.jobs
    attempts = [emulated[a["sagemaker_job_name"]].request for a in job["attempts"]]
    assert [r["CheckpointConfig"]["S3Uri"] for r in attempts] == [location, location]


def test_a_script_that_fails_fails_its_job_with_the_reason(scripts_env, tmp_path, unique):
    (tmp_path / "train.py").write_text("raise SystemExit('out of data')\n")
    session = QueueTrainingJobSession(out=lambda _: None)
    failing = trainer(session, str(tmp_path), unique("failing"), 1)
    failing.train(wait=False)
    name = failing._latest_training_job.training_job_name
    wait_until(lambda: session.queue.job(name)["state"] == "failed", "the job to fail")
    assert session.queue.job(name)["failure_reason"] == (
        "AlgorithmError: the training script exited with status 1: out of data"
    )
