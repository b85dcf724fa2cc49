"""A submission's tags are parsed once, when it is queued: the job's item keeps what they
said, and an item from before it kept them still reads."""

import json

from tjq.local.calls import ROLE_ARN, training_request

from job_queue.models import Checkpointing, Job, JobState
from job_queue.request import validate_submission
from job_queue.store.codecs import job_from_item, job_item

P5 = "ml.p5.48xlarge"


def _with_checkpoint_tag(value: str) -> dict:
    request = training_request("saves-hourly", 2, share="vision")
    request["Tags"].append({"Key": "checkpoint", "Value": value})
    return request


def _job(request: dict, checkpoint: Checkpointing | None) -> Job:
    return Job(
        name=request["TrainingJobName"],
        priority=2,
        seq=7,
        demand={P5: 1},
        state=JobState.PENDING,
        submitted_at=100.0,
        request=request,
        checkpoint=checkpoint,
    )


def test_a_submission_carries_its_parsed_priority_share_and_checkpoint():
    submission = validate_submission(_with_checkpoint_tag("3600"), frozenset({ROLE_ARN}))
    assert (submission.priority, submission.share) == (2, "vision")
    assert submission.checkpoint == Checkpointing(3600)


def test_the_job_item_keeps_the_checkpoint_it_was_submitted_with():
    job = _job(_with_checkpoint_tag("on-stop"), Checkpointing())
    item = job_item(job)
    assert item["checkpoint"] == "on-stop"
    assert job_from_item(item).checkpoint == Checkpointing()


def test_an_item_from_before_the_checkpoint_was_kept_apart_reads_its_request_tag():
    item = job_item(_job(_with_checkpoint_tag("600"), Checkpointing(600)))
    del item["checkpoint"]
    assert job_from_item(item).checkpoint == Checkpointing(600)
    # One whose tag is no longer valid (refused at submission today) declares nothing.
    item["request"] = json.dumps(_with_checkpoint_tag("sometimes"))
    assert job_from_item(item).checkpoint is None
