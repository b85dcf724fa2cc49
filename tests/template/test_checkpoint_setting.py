"""The CheckpointS3Uri parameter: an s3:// URI or empty, passed to the Lambda, which may then
list (and only list) that bucket to see when interval jobs last saved."""

import re

import pytest

from job_queue.checkpoints import check_base_uri
from tests.template.test_events_and_dashboard import load_template


@pytest.fixture(scope="module")
def template() -> dict:
    return load_template()


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("", True),
        ("s3://team-checkpoints/", True),
        ("s3://team.checkpoints/queue/prod/", True),
        ("s3://team-checkpoints", True),
        ("team-checkpoints/queue/", False),
        ("https://team-checkpoints.s3.amazonaws.com/queue/", False),
        ("s3://Team_Checkpoints/", False),
        ("s3:///queue/", False),
    ],
)
def test_the_checkpoint_location_must_be_an_s3_uri_at_deploy_and_at_cold_start(
    template, value, accepted
):
    parameter = template["Parameters"]["CheckpointS3Uri"]
    assert bool(re.fullmatch(parameter["AllowedPattern"], value)) is accepted
    # The Lambda refuses at cold start exactly what the template refuses at deploy.
    try:
        check_base_uri(value)
        refused = False
    except ValueError:
        refused = True
    assert refused is not accepted


def test_the_lambda_is_told_the_location_and_may_only_list_its_bucket(template):
    function = template["Resources"]["QueueFunction"]["Properties"]
    assert function["Environment"]["Variables"]["CHECKPOINT_S3_URI"] == {"Ref": "CheckpointS3Uri"}
    statements = function["Policies"][0]["Statement"]
    (listing,) = [
        s["Fn::If"]
        for s in statements
        if isinstance(s, dict) and "Fn::If" in s
        if s["Fn::If"][0] == "HasCheckpointUri"
    ]
    allowed = listing[1]
    assert allowed["Action"] == "s3:ListBucket"
    assert listing[2] == {"Ref": "AWS::NoValue"}
    bucket = allowed["Resource"]["Fn::Sub"][1]["Bucket"]
    assert bucket == {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "CheckpointS3Uri"}]}]}
    assert ["s3:", "", "team-checkpoints", "queue", ""][2] == "team-checkpoints"
