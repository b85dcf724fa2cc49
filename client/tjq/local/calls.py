"""What callers send the local queue: API Gateway's event for a signed API call, and a
CreateTrainingJob request as the SageMaker Python SDK builds it; the local account and its
users."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qsl

from job_queue import tags
from tjq.local.sagemaker import RUN_SECONDS_TAG

REGION = "us-east-1"
ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/SageMakerTraining"
# Without other admins, every local user is one: on a laptop, you are the only user.
EVERY_LOCAL_USER = f"arn:aws:iam::{ACCOUNT}:user/*"


def local_user(access_key_id: str) -> str:
    """The caller the local API names after a request's SigV4 access key id."""
    return f"arn:aws:iam::{ACCOUNT}:user/{access_key_id}"


DEFAULT_CALLER = local_user("testing")


def api_identity(arn: str) -> dict:
    """``requestContext.identity`` as API Gateway fills it for an IAM-signed request by
    ``arn`` (an IAM user, or a role session ``arn:aws:sts::...:assumed-role/Role/session``);
    an empty ``arn``: an unsigned request's."""
    if not arn:
        return {"sourceIp": "127.0.0.1"}
    session = arn.split("/", 2)[-1] if ":assumed-role/" in arn else None
    unique_id = "AROA" + uuid.uuid5(uuid.NAMESPACE_URL, arn).hex[:17].upper()
    caller = f"{unique_id}:{session}" if session else "AIDA" + unique_id[4:]
    return {
        "sourceIp": "127.0.0.1",
        "accountId": arn.split(":")[4],
        "caller": caller,
        "user": caller,
        "userArn": arn,
        "accessKey": ("ASIA" if session else "AKIA") + unique_id[4:],
        "userAgent": "tjq-local",
    }


def api_event(
    method: str,
    path: str,
    body: str | None,
    headers: dict | None = None,
    caller: str = DEFAULT_CALLER,
) -> dict:
    """The API Gateway REST event for a request to ``path`` (with its query string, if any)
    signed by ``caller``."""
    path, _, query = path.partition("?")
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers or {"content-type": "application/json"},
        "multiValueHeaders": {},
        "queryStringParameters": dict(parse_qsl(query)) or None,
        "pathParameters": None,
        "requestContext": {
            "httpMethod": method,
            "path": f"/prod{path}",
            "stage": "prod",
            "requestId": str(uuid.uuid4()),
            "identity": api_identity(caller),
        },
        "body": body,
        "isBase64Encoded": False,
    }


def training_request(
    name: str,
    priority: int | None = None,
    instance_type: str = "ml.p5.48xlarge",
    instance_count: int = 1,
    run_seconds: float | None = None,
    role_arn: str = ROLE_ARN,
    max_runtime: int = 86400,
    share: str | None = None,
) -> dict:
    """A CreateTrainingJob request shaped as the SageMaker Python SDK builds it."""
    given = {tags.PRIORITY: priority, tags.SHARE: share, RUN_SECONDS_TAG: run_seconds}
    request_tags = [{"Key": k, "Value": str(v)} for k, v in given.items() if v is not None]
    request = {
        "TrainingJobName": name,
        "RoleArn": role_arn,
        "AlgorithmSpecification": {
            "TrainingImage": "763104351884.dkr.ecr.us-east-1.amazonaws.com/"
            "pytorch-training:2.3.0-gpu-py311",
            "TrainingInputMode": "File",
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "OutputDataConfig": {"S3OutputPath": "s3://my-bucket/output"},
        "ResourceConfig": {
            "InstanceType": instance_type,
            "InstanceCount": instance_count,
            "VolumeSizeInGB": 30,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": max_runtime},
        "HyperParameters": {
            "sagemaker_program": '"train.py"',
            "sagemaker_submit_directory": f'"s3://my-bucket/{name}/source/sourcedir.tar.gz"',
            "sagemaker_region": '"us-east-1"',
        },
        "EnableNetworkIsolation": False,
        "EnableInterContainerTrafficEncryption": False,
        "EnableManagedSpotTraining": False,
        "DebugHookConfig": {
            "S3OutputPath": "s3://my-bucket/output",
            "CollectionConfigurations": [],
        },
        "ProfilerConfig": {"S3OutputPath": "s3://my-bucket/output", "DisableProfiler": False},
        "Environment": {},
    }
    if request_tags:
        request["Tags"] = request_tags
    return request
