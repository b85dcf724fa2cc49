"""`estimator.fit()` (SDK v2) of a job that saves on stop: preempted under
`smq local-api --run-scripts`, it resumes from what it saved (the emulator runs the script
the SDK uploaded as sourcedir.tar.gz)."""

import json

import boto3
from sagemaker.pytorch import PyTorch
from tjq import TrainingQueue
from tjq.job_logs import AttemptLogs
from tjq.local.calls import ROLE_ARN

from tests.client.conftest import G5, wait_until
from tests.sdk.scripts import CHECKPOINTS, SCRIPT


def estimator(source, priority, **hyperparameters):
    return PyTorch(
        entry_point="train.py",
        source_dir=source,
        role=ROLE_ARN,
        instance_type=G5,
        instance_count=1,
        framework_version="2.3",
        py_version="py311",
        hyperparameters=hyperparameters,
        tags=[{"Key": "priority", "Value": str(priority)}],
    )


def test_a_preempted_estimator_job_resumes_from_its_checkpoint(scripts_env, tmp_path, unique):
    (tmp_path / "train.py").write_text(SCRIPT)
    queue = TrainingQueue(out=lambda _: None)
    low = queue.submit(estimator(str(tmp_path), 1), job_name=unique("low"), checkpoint="on-stop")
    logs = boto3.client("logs", endpoint_url=scripts_env.aws_url, region_name="us-east-1")
    first, seen = AttemptLogs(logs, low.job_name), []
    wait_until(lambda: seen.extend(first.new_lines()) or "[algo-1] step 3" in seen, "low to train")

    queue.submit(estimator(str(tmp_path), 9, steps=2), job_name=unique("high"))
    wait_until(lambda: low.describe()["status"] == "SUCCEEDED", "low to finish", 120)

    job = queue.queue.job(low.job_name)
    assert [a["outcome"] for a in job["attempts"]] == ["preempted", "completed"]
    assert job["checkpoint_s3_uri"] == f"{CHECKPOINTS}{low.job_name}/"
    s3 = boto3.client("s3", endpoint_url=scripts_env.aws_url, region_name="us-east-1")
    (saved_object,) = s3.list_objects_v2(
        Bucket="sagemaker-local", Prefix=f"checkpoints/{low.job_name}/"
    )["Contents"]
    body = s3.get_object(Bucket="sagemaker-local", Key=saved_object["Key"])["Body"].read()
    saved = json.loads(body)["step"]
    second = AttemptLogs(logs, job["attempts"][1]["sagemaker_job_name"]).new_lines()
    assert f"[algo-1] resumed from step {saved}" in second
    assert f"[algo-1] finished at step {saved + 5}" in second
