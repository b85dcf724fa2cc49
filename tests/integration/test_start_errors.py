"""What happens when SageMaker refuses, throttles or rejects a start."""

import json

from tjq.local.calls import training_request
from tjq.table import queue_table

from tests.conftest import G5, P5
from tests.integration.helpers import job, states, submit


def test_capacity_error_leaves_the_job_waiting_and_retries_with_backoff(cloud):
    cloud.sagemaker.refuse_next_creates(2, "ResourceLimitExceeded")
    body = submit(cloud, "a", 1)
    assert body["job"]["state"] == "pending"
    refused = job(cloud, "a")
    assert refused["start_failures"] == 1
    assert "ResourceLimitExceeded" in refused["last_start_error"]
    assert refused["retry_not_before"] is not None

    cloud.advance(30)
    cloud.sweep()  # too early: still backing off, no new call
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 1

    cloud.advance(31)
    cloud.sweep()  # refused again: the wait doubles
    assert job(cloud, "a")["start_failures"] == 2
    cloud.advance(100)
    cloud.sweep()
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 2
    cloud.advance(30)
    cloud.sweep()
    assert job(cloud, "a")["state"] == "running"
    assert job(cloud, "a")["sagemaker_job_name"] == "a"  # refused starts do not use up names


def test_a_refused_job_does_not_block_the_jobs_that_can_run(make_cloud):
    cloud = make_cloud({P5: 2, G5: 1})
    cloud.sagemaker.refuse_next_creates(1, "ResourceLimitExceeded")
    submit(cloud, "refused", 9)
    submit(cloud, "next", 1)
    submit(cloud, "g5", 1, instance_type=G5)
    assert states(cloud) == {"next": "running", "g5": "running", "refused": "pending"}


def test_throttling_is_retried(cloud):
    cloud.sagemaker.refuse_next_creates(2, "ThrottlingException")
    body = submit(cloud, "a", 1)
    assert body["job"]["state"] == "running"
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 3


def test_persistent_throttling_backs_off_like_a_capacity_error(cloud):
    cloud.sagemaker.refuse_next_creates(4, "ThrottlingException")
    body = submit(cloud, "a", 1)
    assert body["job"]["state"] == "pending"
    assert "ThrottlingException" in job(cloud, "a")["last_start_error"]
    cloud.advance(61)
    cloud.sweep()
    assert job(cloud, "a")["state"] == "running"


def test_validation_error_fails_the_job_with_sagemakers_message(cloud):
    cloud.sagemaker.refuse_next_creates(1, "ValidationException")
    submit(cloud, "bad", 1)
    submit(cloud, "good", 1)
    failed = job(cloud, "bad")
    assert failed["state"] == "failed"
    assert "ValidationException" in failed["failure_reason"]
    assert states(cloud) == {"good": "running"}


def test_job_failing_for_lack_of_capacity_goes_back_to_the_queue(cloud):
    cloud.sagemaker.fail_next_jobs_for_capacity(1)
    submit(cloud, "a", 1)
    cloud.advance(1)
    retried = job(cloud, "a")
    assert retried["state"] == "pending"
    assert retried["attempts"][0]["outcome"] == "capacity-error"
    assert "CapacityError" in retried["last_start_error"]
    cloud.advance(60)
    cloud.sweep()
    running = job(cloud, "a")
    assert running["state"] == "running"
    assert running["sagemaker_job_name"].startswith("a-r2-")  # a name is never reused


def test_name_taken_by_a_job_the_queue_did_not_start_fails_clearly(cloud):
    cloud.sagemaker.create_training_job(
        {
            "TrainingJobName": "taken",
            "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
        }
    )
    submit(cloud, "taken", 1)
    failed = job(cloud, "taken")
    assert failed["state"] == "failed"
    assert "already exists" in failed["failure_reason"]


def test_lost_create_response_is_resolved_without_a_second_job(cloud):
    cloud.sagemaker.lose_next_create_responses(1)
    body = submit(cloud, "a", 1)
    assert body["job"]["state"] == "starting"  # created, but the queue cannot know yet
    submit(cloud, "b", 1)
    submit(cloud, "c", 1)
    assert states(cloud)["c"] == "pending"  # a's instance stays counted
    cloud.advance(61)
    cloud.sweep()
    assert job(cloud, "a")["state"] == "running"
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 2  # a once, b; c still waits
    assert set(cloud.sagemaker.jobs) == {"a", "b"}


def test_start_that_never_reached_sagemaker_is_retried_under_the_same_name(cloud):
    cloud.sagemaker.refuse_next_creates(1, "InternalFailure")
    assert submit(cloud, "a", 1)["job"]["state"] == "starting"
    cloud.advance(30)
    cloud.sweep()  # within the grace period another invocation could still be starting it
    assert job(cloud, "a")["state"] == "starting"
    cloud.advance(31)
    cloud.sweep()
    assert job(cloud, "a")["state"] == "running"
    assert list(cloud.sagemaker.jobs) == ["a"]


def test_a_job_refused_for_instances_used_outside_the_queue_says_why_it_waits(make_cloud):
    cloud = make_cloud({P5: 1})
    # Someone starts a job straight in SageMaker: the account's one p5 is taken.
    outside = json.dumps(training_request("outside", instance_type=P5)).encode()
    assert cloud.sagemaker.respond("CreateTrainingJob", outside)[0] == 200
    submit(cloud, "queued", 1)

    _, listing = cloud.api("GET", "/jobs")
    (row,) = listing["jobs"]
    assert row["waiting_reason"].startswith("retry in 60 s: ResourceLimitExceeded: ")
    assert row["waiting_reason"].endswith(
        " — instances used outside the queue, or a capacity above the account's limit for the "
        "type (Service Quotas)?"
    )
    assert job(cloud, "queued")["waiting_reason"] == row["waiting_reason"]
    table = queue_table(listing["jobs"])
    assert "Why waiting" in table.splitlines()[0]
    assert "instances used outside the queue, or a capacity above" in " ".join(table.split())

    assert row["waiting_for"]["code"] == "backing-off"
    assert row["waiting_for"]["until"] == row["retry_not_before"]
    cloud.advance(61)
    _, listing = cloud.api("GET", "/jobs")
    # Due for a retry, it no longer backs off: it waits for the job that holds its instance.
    assert listing["jobs"][0]["waiting_for"]["code"] == "queue-order"
    assert listing["jobs"][0]["waiting_for"]["jobs"] == ["outside"]
    assert "started outside the queue" in listing["jobs"][0]["waiting_reason"]
