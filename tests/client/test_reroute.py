"""`tjq.reroute()`: a plain boto3 session's (or client's) CreateTrainingJob goes to the queue,
for tools that call boto3 themselves (Airflow's SageMaker operator, scripts)."""

import boto3
import pytest
from botocore.exceptions import ClientError
from tjq import reroute
from tjq.errors import AccessDenied
from tjq.local.calls import training_request

from job_queue import tags
from tests.client.conftest import G4, wait_until


def request(name: str, priority: int | None, seconds: int = 3600, **kwargs) -> dict:
    return training_request(name, priority, instance_type=G4, run_seconds=seconds, **kwargs)


def test_create_training_job_through_a_rerouted_session_is_queued(local_env, unique):
    said = []
    session = boto3.Session()
    route = reroute(session, out=said.append)
    sagemaker = session.client("sagemaker")
    blocker, name = unique("blocker"), unique("scripted")

    sagemaker.create_training_job(**request(blocker, 5))
    # The previous test's jobs may still be stopping (real time) and holding the instance.
    wait_until(lambda: route.queue.job(blocker)["state"] == "running", f"{blocker} to run")
    answer = sagemaker.create_training_job(**request(name, 1))

    assert answer["TrainingJobArn"].endswith(f":training-job/{name}")
    assert route.queue.job(name)["state"] == "pending"
    assert name not in local_env.cloud.sagemaker.jobs
    queued_line = f"[queue] {name}: queued at position 1 (priority 1), expected to start in "
    assert any(line.startswith(queued_line) for line in said), said
    waiting = sagemaker.describe_training_job(TrainingJobName=name)
    assert (waiting["TrainingJobStatus"], waiting["SecondaryStatus"]) == ("InProgress", "Pending")

    route.queue.cancel(blocker)
    wait_until(lambda: route.queue.job(name)["state"] == "running", f"{name} to start")
    running = sagemaker.describe_training_job(TrainingJobName=name)
    assert (running["TrainingJobStatus"], running["TrainingJobName"]) == ("InProgress", name)
    assert tags.QUEUE in local_env.cloud.sagemaker.jobs[name].tags  # created by the queue
    # Every other call is SageMaker's, as before.
    assert sagemaker.list_models()["ResponseMetadata"]["HTTPStatusCode"] == 200
    route.queue.cancel(name)


def test_a_rerouted_client_queues_and_refusals_name_the_problem(local_env, unique):
    client = boto3.client("sagemaker")
    route = reroute(client, priority=3, out=lambda _: None)
    name = unique("client")
    client.create_training_job(**request(name, None, seconds=1))
    assert route.queue.job(name)["priority"] == 3  # the route's default

    refused = unique("refused")
    with pytest.raises(AccessDenied, match="role/Other is not one this queue may pass"):
        client.create_training_job(
            **request(refused, 1, role_arn="arn:aws:iam::123456789012:role/Other")
        )
    with pytest.raises(ClientError, match=r"ResourceNotFound|not found|does not exist"):
        client.describe_training_job(TrainingJobName=refused)  # nothing was queued or created


def test_only_sessions_and_sagemaker_clients_can_be_rerouted(local_env):
    with pytest.raises(TypeError, match="needs a SageMaker client, not a s3 client"):
        reroute(boto3.client("s3"))
    with pytest.raises(TypeError, match=r"takes a boto3\.Session or a SageMaker client, not str"):
        reroute("sagemaker")


def test_rerouting_again_replaces_the_earlier_route(local_env, unique):
    session = boto3.Session()
    reroute(session, priority=2, out=lambda _: None)
    route = reroute(session, priority=6, out=lambda _: None)
    name = unique("again")
    session.client("sagemaker").create_training_job(**request(name, None, seconds=1))
    assert route.queue.job(name)["priority"] == 6
