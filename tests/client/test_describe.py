"""What DescribeTrainingJob answers for a queued job, and the progress lines the SDK
sessions print: pure functions over the queue's view of a job, as scenario tables."""

from datetime import UTC, datetime

import pytest
from tjq.describe import queued_description
from tjq.progress import expected_text, progress

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REQUEST = {
    "TrainingJobName": "train",
    "RoleArn": "arn:aws:iam::111122223333:role/Training",
    "ResourceConfig": {"InstanceType": "ml.p5.48xlarge", "InstanceCount": 1},
    "Tags": [{"Key": "priority", "Value": "2"}],
}
ATTEMPT = {
    "TrainingJobName": "train-r2-abc123",
    "TrainingJobArn": "arn:aws:sagemaker:us-east-1:111122223333:training-job/train-r2-abc123",
    "TrainingJobStatus": "Stopped",
    "SecondaryStatus": "Stopped",
    "ModelArtifacts": {"S3ModelArtifacts": "s3://out/train-r2-abc123/output/model.tar.gz"},
}


BEHIND_BIG = {
    "code": "higher-priority",
    "message": "behind big (priority 3), first in line for its instances",
    "jobs": ["big"],
    "until": None,
    "share": None,
}
HELD = {"code": "held", "message": "the queue is held", "jobs": [], "until": None, "share": None}


def view(state, attempts=(), **fields):
    return {
        "name": "train",
        "state": state,
        "priority": 2,
        "position": 1 if state in ("pending", "preempted") else None,
        "instances": {"ml.p5.48xlarge": 1},
        "submitted_at": "2026-12-01T11:00:00Z",
        "preemptions": sum(1 for a in attempts if a.get("outcome") == "preempted"),
        "sagemaker_job_name": attempts[-1]["sagemaker_job_name"] if attempts else None,
        "attempts": list(attempts),
        **fields,
    }


FIRST = {"sagemaker_job_name": "train", "outcome": "preempted", "preempted_by": "urgent"}
SECOND = {"sagemaker_job_name": "train-r2-abc123", "outcome": None}


@pytest.mark.parametrize(
    ("scenario", "job", "attempt", "status", "secondary"),
    [
        ("waiting, never ran", view("pending"), None, "InProgress", "Pending"),
        (
            "preempted, waiting to resume",
            view("preempted", [FIRST]),
            ATTEMPT,
            "InProgress",
            "Pending",
        ),
        (
            "being preempted",
            view("preempting", [FIRST], preempted_by="urgent"),
            ATTEMPT,
            "InProgress",
            "Interrupted",
        ),
        ("claimed, not yet created", view("starting", [SECOND]), None, "InProgress", "Starting"),
        (
            "refused by SageMaker before it ran",
            view("failed", failure_reason="bad image"),
            None,
            "Failed",
            "Failed",
        ),
        ("cancelled while it waited", view("cancelled"), None, "Stopped", "Stopped"),
        ("stopped outside the queue", view("stopped", [SECOND]), ATTEMPT, "Stopped", "Stopped"),
    ],
)
def test_the_status_is_the_queues_where_it_knows_better(scenario, job, attempt, status, secondary):
    answer = queued_description(job, attempt, REQUEST, "us-east-1", NOW)
    assert (answer["TrainingJobStatus"], answer["SecondaryStatus"]) == (status, secondary)
    assert answer["TrainingJobName"] == "train"  # the SDK keeps asking under the queue's name


def test_a_running_job_is_its_latest_sagemaker_job_under_the_queues_name():
    running = {**ATTEMPT, "TrainingJobStatus": "InProgress", "SecondaryStatus": "Training"}
    answer = queued_description(view("running", [FIRST, SECOND]), running, None, "us-east-1", NOW)
    assert answer["TrainingJobName"] == "train"
    assert answer["TrainingJobArn"].endswith("/train-r2-abc123")
    assert answer["ModelArtifacts"] == ATTEMPT["ModelArtifacts"]
    assert (answer["TrainingJobStatus"], answer["SecondaryStatus"]) == ("InProgress", "Training")


def test_a_job_that_never_ran_is_described_from_its_request():
    answer = queued_description(view("pending"), None, REQUEST, "eu-west-1", NOW)
    assert answer["TrainingJobArn"] == "arn:aws:sagemaker:eu-west-1:111122223333:training-job/train"
    assert answer["ResourceConfig"] == REQUEST["ResourceConfig"]
    assert "Tags" not in answer  # DescribeTrainingJob does not return them
    assert answer["CreationTime"] == datetime(2026, 12, 1, 11, 0, tzinfo=UTC)
    reason = view("pending", waiting_reason="retry in 40 s: ResourceLimitExceeded: ...")
    message = queued_description(reason, None, None, "eu-west-1", NOW)[
        "SecondaryStatusTransitions"
    ][-1]["StatusMessage"]
    assert message == (
        "Waiting in training-job-queue at position 1 (priority 2): "
        "retry in 40 s: ResourceLimitExceeded: ..."
    )
    coded = view("pending", waiting_for=BEHIND_BIG, waiting_reason=BEHIND_BIG["message"])
    message = queued_description(coded, None, None, "eu-west-1", NOW)["SecondaryStatusTransitions"][
        -1
    ]["StatusMessage"]
    assert message.endswith(
        "(priority 2): higher-priority: behind big (priority 3), "
        + ("first in line for its instances")
    )
    failed = queued_description(view("failed", failure_reason="bad image"), None, None, "x", NOW)
    assert failed["FailureReason"] == "bad image"


@pytest.mark.parametrize(
    ("scenario", "last", "now", "said"),
    [
        ("first look", None, view("pending"), "queued at position 1 (priority 2)"),
        (
            "first look says why it waits, code first",
            None,
            view("pending", waiting_for=BEHIND_BIG, waiting_reason=BEHIND_BIG["message"]),
            "queued at position 1 (priority 2): higher-priority: behind big (priority 3), "
            "first in line for its instances",
        ),
        (
            "a newer reason is not news",
            view("pending", waiting_for=BEHIND_BIG),
            view("pending", waiting_for=HELD),
            None,
        ),
        ("moved up", view("pending", position=2), view("pending"), "now at position 1"),
        ("no change", view("pending"), view("pending"), None),
        (
            "started",
            view("pending"),
            view("running", [SECOND | {"sagemaker_job_name": "train"}]),
            "started as SageMaker job train",
        ),
        (
            "stopping seen",
            view("running", [FIRST]),
            view("preempting", [FIRST], preempted_by="urgent"),
            "preempted by urgent; stopping",
        ),
        (
            "stop seen",
            view("preempting", [FIRST]),
            view("preempted", [FIRST]),
            "waiting to resume, at position 1",
        ),
        (
            "stop missed between two looks",
            view("running", [FIRST]),
            view("preempted", [FIRST]),
            "preempted by urgent; waiting to resume, at position 1",
        ),
        (
            "resumed",
            view("preempted", [FIRST]),
            view("running", [FIRST, SECOND]),
            "resumed as SageMaker job train-r2-abc123",
        ),
        (
            "resumed and ended between two looks",
            view("preempted", [FIRST]),
            view("completed", [FIRST, SECOND]),
            "resumed as SageMaker job train-r2-abc123, then completed",
        ),
        (
            "cancelled while waiting to resume",
            view("preempted", [FIRST]),
            view("cancelled", [FIRST]),
            "cancelled",
        ),
        (
            "failed",
            view("running", [SECOND]),
            view("failed", [SECOND], failure_reason="OOM"),
            "failed: OOM",
        ),
    ],
)
def test_progress_says_what_changed_between_two_looks(scenario, last, now, said):
    assert progress(last, now) == said


# The queue answered at 12:00: one hour after the job's submission.
ANSWERED = {"submitted_at": "2026-12-01T11:00:00Z", "waiting_seconds": 3600}


@pytest.mark.parametrize(
    ("scenario", "likely", "at_latest", "said"),
    [
        ("likely and a bound", "14:00", "21:00", "in ~2 h, at the latest in 9 h"),
        (
            "no bound",
            "12:25",
            None,
            "in ~25 min (no bound: a job ahead has no MaxRuntimeInSeconds)",
        ),
        ("no history: the bound is all the queue knows", "15:00", "15:00", "in 3 h at the latest"),
        ("starts at once", "12:00", "12:00", "now"),
        ("days away", "2026-12-04T12:00", "2026-12-06T12:00", "in ~3 d, at the latest in 5 d"),
    ],
)
def test_expected_start_in_words(scenario, likely, at_latest, said):
    def at(time):
        return time and (time if "T" in time else f"2026-12-01T{time}") + ":00Z"

    job = view("pending", expected_start={"likely": at(likely), "at_latest": at(at_latest)})
    assert expected_text(job | ANSWERED) == said


def test_the_queued_message_says_when_the_job_is_expected_to_start():
    expected = {"likely": "2026-12-01T14:00:00Z", "at_latest": "2026-12-01T21:00:00Z"}
    job = view("pending", expected_start=expected) | ANSWERED
    assert progress(None, job) == (
        "queued at position 1 (priority 2), expected to start in ~2 h, at the latest in 9 h"
    )
    message = queued_description(job, None, REQUEST, "eu-west-1", NOW)[
        "SecondaryStatusTransitions"
    ][-1]["StatusMessage"]
    assert message.endswith("(priority 2), expected to start in ~2 h, at the latest in 9 h")
    # Beyond the replay's horizon the queue does not say.
    assert progress(None, view("pending", expected_start=None) | ANSWERED) == (
        "queued at position 1 (priority 2)"
    )
