"""POST /add-job: what is accepted, what is refused, and that a refusal changes nothing."""

import copy
import json

import pytest
from tjq.local.calls import training_request
from tjq.local.cloud import LocalCloud

from tests.conftest import G5, P5
from tests.integration.helpers import job, submit


def test_submission_answers_201_with_the_job_and_its_position(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 1)
    status, body = cloud.api("POST", "/add-job", training_request("c", 5))
    assert status == 201
    assert body["position"] == 1  # running jobs are not in line; c outranks nobody waiting
    assert body["job"]["state"] == "pending"
    assert body["job"]["priority"] == 5
    assert body["job"]["instance_type"] == P5 and body["job"]["instance_count"] == 1


def test_position_counts_the_jobs_ahead(cloud):
    for name in ("run1", "run2", "w1", "w2"):
        submit(cloud, name, 1)
    status, body = cloud.api("POST", "/add-job", training_request("late", 1))
    assert (status, body["position"]) == (201, 3)
    status, body = cloud.api("POST", "/add-job", training_request("urgent", 2))
    assert (status, body["position"]) == (201, 1)


def test_priority_defaults_to_zero(cloud):
    body = submit(cloud, "plain")
    assert body["job"]["priority"] == 0


def test_identical_resubmission_is_idempotent(cloud):
    submit(cloud, "a", 1)
    status, body = cloud.api("POST", "/add-job", training_request("a", 1))
    assert status == 200
    assert body["job"]["name"] == "a" and body["job"]["state"] == "running"
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 1
    assert [r["name"] for r in cloud.jobs()] == ["a"]


def test_resubmission_after_the_job_finished_returns_the_finished_job(cloud):
    submit(cloud, "a", 1)
    cloud.advance(601)
    status, body = cloud.api("POST", "/add-job", training_request("a", 1))
    assert status == 200 and body["job"]["state"] == "completed"
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 1


def test_the_request_reaches_sagemaker_unchanged_but_for_the_queues_tags(cloud):
    request = training_request("exact", 3)
    cloud.api("POST", "/add-job", request)
    sent = cloud.sagemaker.jobs["exact"].request
    assert {k: v for k, v in sent.items() if k != "Tags"} == {
        k: v for k, v in request.items() if k != "Tags"
    }
    tags = {t["Key"]: t["Value"] for t in sent["Tags"]}
    assert tags["priority"] == "3"
    assert tags["training-job-queue:queue"] == "training-job-queue"
    assert tags["training-job-queue:job"] == "exact"
    assert tags["training-job-queue:attempt"] == "1"


def _without(field):
    def change(request):
        request.pop(field)

    return change


def _set(path, value):
    def change(request):
        target = request
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _both(first, second):
    def change(request):
        first(request)
        second(request)

    return change


def _tags(tags):
    return _set(["Tags"], tags)


BAD_REQUESTS = [
    ("missing TrainingJobName", _without("TrainingJobName"), 400, "TrainingJobName"),
    ("missing RoleArn", _without("RoleArn"), 400, "RoleArn"),
    (
        "missing AlgorithmSpecification",
        _without("AlgorithmSpecification"),
        400,
        "AlgorithmSpecification",
    ),
    ("missing ResourceConfig", _without("ResourceConfig"), 400, "ResourceConfig"),
    ("missing OutputDataConfig", _without("OutputDataConfig"), 400, "OutputDataConfig"),
    ("missing StoppingCondition", _without("StoppingCondition"), 400, "StoppingCondition"),
    (
        "a name with other characters",
        _set(["TrainingJobName"], "bad_name!"),
        400,
        "TrainingJobName",
    ),
    ("a name over 128 characters", _set(["TrainingJobName"], "x" * 129), 400, "TrainingJobName"),
    (
        "a name starting with an underscore",
        _set(["TrainingJobName"], "_job"),
        400,
        "TrainingJobName",
    ),
    ("priority tag not an integer", _tags([{"Key": "priority", "Value": "high"}]), 400, "priority"),
    ("priority tag a fraction", _tags([{"Key": "priority", "Value": "1.5"}]), 400, "priority"),
    ("Tags not a list", _tags({"priority": "1"}), 400, "Tags"),
    (
        "checkpoint tag neither on-stop nor seconds",
        _tags([{"Key": "checkpoint", "Value": "often"}]),
        400,
        "Tags.checkpoint must be 'on-stop' or a positive number of seconds, got 'often'",
    ),
    (
        "checkpoint tag of zero seconds",
        _tags([{"Key": "checkpoint", "Value": "0"}]),
        400,
        "Tags.checkpoint must be 'on-stop' or a positive number of seconds",
    ),
    (
        "a checkpoint location that is not in S3",
        _set(["CheckpointConfig"], {"S3Uri": "/tmp/checkpoints"}),
        400,
        "CheckpointConfig.S3Uri must be an s3:// URI",
    ),
    (
        "instance type without capacity",
        _set(["ResourceConfig", "InstanceType"], "ml.m5.xlarge"),
        400,
        "ml.m5.xlarge",
    ),
    ("more instances than the cap", _set(["ResourceConfig", "InstanceCount"], 3), 400, "capacity"),
    ("no InstanceCount", _set(["ResourceConfig", "InstanceCount"], 0), 400, "InstanceCount"),
    (
        "InstanceGroups empty",
        _set(["ResourceConfig"], {"InstanceGroups": []}),
        400,
        "InstanceGroups",
    ),
    (
        "a negative keep-alive",
        _set(["ResourceConfig", "KeepAlivePeriodInSeconds"], -60),
        400,
        "KeepAlivePeriodInSeconds must be a whole number of seconds",
    ),
    (
        "a keep-alive that is not an integer",
        _set(["ResourceConfig", "KeepAlivePeriodInSeconds"], "60"),
        400,
        "KeepAlivePeriodInSeconds must be a whole number of seconds",
    ),
    (
        "a keep-alive with InstanceGroups",
        _set(
            ["ResourceConfig"],
            {
                "InstanceGroups": [
                    {"InstanceType": P5, "InstanceCount": 1, "InstanceGroupName": "gpu"}
                ],
                "VolumeSizeInGB": 30,
                "KeepAlivePeriodInSeconds": 60,
            },
        ),
        400,
        "no warm pools with InstanceGroups",
    ),
    (
        "a keep-alive with managed spot training",
        _both(
            _set(["ResourceConfig", "KeepAlivePeriodInSeconds"], 60),
            _set(["EnableManagedSpotTraining"], True),
        ),
        400,
        "no warm pools with EnableManagedSpotTraining",
    ),
    (
        "StoppingCondition not an object",
        _set(["StoppingCondition"], "1h"),
        400,
        "StoppingCondition",
    ),
    ("role not allowed", _set(["RoleArn"], "arn:aws:iam::123456789012:role/Admin"), 403, "RoleArn"),
]


@pytest.mark.parametrize(
    ("title", "change", "status", "named"), BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS]
)
def test_bad_request_is_refused_and_changes_nothing(cloud, title, change, status, named):
    submit(cloud, "existing", 1)
    before = cloud.jobs()
    request = copy.deepcopy(training_request("newjob", 1))
    change(request)

    got, body = cloud.api("POST", "/add-job", request)

    assert got == status, body
    assert named in body["message"]
    assert cloud.jobs() == before
    assert cloud.api("GET", "/jobs/newjob")[0] == 404
    assert cloud.sagemaker.calls["CreateTrainingJob"] == 1


@pytest.mark.parametrize(
    ("body", "named"),
    [("{not json", "JSON"), ("[1, 2]", "object"), ('"text"', "object"), ("", "JSON")],
    ids=["not JSON", "a list", "a string", "empty"],
)
def test_body_that_is_not_a_json_object_is_refused(cloud, body, named):
    status, answer = cloud.api("POST", "/add-job", body)
    assert status == 400 and named in answer["message"]
    assert cloud.jobs() == []


def test_body_over_the_size_limit_is_refused_with_413(cloud):
    request = training_request("big", 1)
    request["HyperParameters"]["blob"] = "x" * (300 * 1024)
    status, body = cloud.api("POST", "/add-job", json.dumps(request))
    assert status == 413 and "limit" in body["message"]
    assert cloud.jobs() == []


def test_same_name_with_a_different_body_conflicts(cloud):
    submit(cloud, "a", 1)
    status, body = cloud.api("POST", "/add-job", training_request("a", 2))
    assert status == 409 and "a" in body["message"]
    assert job(cloud, "a")["priority"] == 1


def test_instance_groups_count_every_group(make_cloud):
    cloud = make_cloud({P5: 2, G5: 4})
    request = training_request("hetero", 1)
    request["ResourceConfig"] = {
        "InstanceGroups": [
            {"InstanceGroupName": "trainer", "InstanceType": P5, "InstanceCount": 2},
            {"InstanceGroupName": "loaders", "InstanceType": G5, "InstanceCount": 3},
        ],
        "VolumeSizeInGB": 30,
    }
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 201
    assert body["job"]["instances"] == {P5: 2, G5: 3}
    assert body["job"]["instance_count"] == 5
    assert body["job"]["state"] == "running"

    too_big = copy.deepcopy(request)
    too_big["TrainingJobName"] = "too-big"
    too_big["ResourceConfig"]["InstanceGroups"][1]["InstanceCount"] = 5
    status, body = cloud.api("POST", "/add-job", too_big)
    assert status == 400 and G5 in body["message"]


def test_unknown_job_is_404_on_every_route(cloud):
    assert cloud.api("GET", "/jobs/ghost")[0] == 404
    assert cloud.api("DELETE", "/jobs/ghost")[0] == 404
    status, body = cloud.api("PUT", "/jobs/ghost/priority", {"priority": 2})
    assert status == 404 and "ghost" in body["message"]


def test_position_is_the_same_in_the_answer_and_in_the_list(make_cloud):
    cloud = make_cloud({P5: 1, G5: 1})
    submit(cloud, "p5-run", 1, instance_type=P5)
    submit(cloud, "g5-run", 1, instance_type=G5)
    answers = {
        "p5-wait": submit(cloud, "p5-wait", 1, instance_type=P5)["position"],
        "g5-wait": submit(cloud, "g5-wait", 2, instance_type=G5)["position"],
        "p5-later": submit(cloud, "p5-later", 1, instance_type=P5)["position"],
    }
    hetero = training_request("hetero", 3)
    hetero["ResourceConfig"] = {
        "InstanceGroups": [
            {"InstanceGroupName": "a", "InstanceType": P5, "InstanceCount": 1},
            {"InstanceGroupName": "b", "InstanceType": G5, "InstanceCount": 1},
        ]
    }
    status, body = cloud.api("POST", "/add-job", hetero)
    assert status == 201
    answers["hetero"] = body["position"]
    assert answers == {"p5-wait": 1, "g5-wait": 1, "p5-later": 2, "hetero": 1}
    listed = {r["name"]: r["position"] for r in cloud.jobs() if r["position"]}
    assert listed == {"hetero": 1, "g5-wait": 2, "p5-wait": 2, "p5-later": 3}
    assert job(cloud, "p5-later")["position"] == 3


def test_a_job_started_by_another_invocation_while_it_was_queued_is_answered_as_started(
    make_cloud,
):
    """An event's pass may start the job between its queuing and the submission's own pass:
    the answer then says it started, never that it waits behind more jobs than were read."""
    cloud: LocalCloud | None = None
    swept = []

    class SweepAfterQueuing:
        def __init__(self, client):
            self._client = client

        def __getattr__(self, name):
            method = getattr(self._client, name)
            if name != "transact_write_items":
                return method

            def call(**params):
                result = method(**params)
                if not swept and "raced" in json.dumps(params):
                    swept.append(True)
                    cloud.sweep()  # another invocation, just after the job was queued
                return result

            return call

    cloud = make_cloud(
        wrap_client=lambda service, c: SweepAfterQueuing(c) if service == "dynamodb" else c
    )
    status, body = cloud.api("POST", "/add-job", training_request("raced", 1))
    assert swept and status == 201
    assert body["job"]["state"] in ("starting", "running")
    assert body["job"]["waiting_for"] is None and body["position"] is None
    assert body["job"]["position_beyond"] is None
