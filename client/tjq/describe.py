"""What DescribeTrainingJob answers for a job in the queue.

A queued job is known by its queue name, but runs as one SageMaker job per attempt (a
resumed job under a new name), and has no SageMaker job at all while it waits. The answer
is its latest SageMaker job's description under the queue name, with the status the queue
knows: a job waiting (or being preempted, to resume later) is ``InProgress``, so that an
SDK waiting for it goes on waiting; a job that failed or was cancelled in the queue ends
``Failed`` or ``Stopped``, with the queue's reason.

Pure functions over the queue's JSON view of the job (GET /jobs/{name}).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from job_queue.models import JobState
from tjq.progress import expected_text, place, reason_text

# Request fields that DescribeTrainingJob does not return.
_REQUEST_ONLY = ("Tags",)


def queued_description(
    job: dict, attempt: dict | None, request: dict | None, region: str, now: datetime
) -> dict:
    """DescribeTrainingJob's answer for ``job``, the queue's view of it.

    ``attempt`` is DescribeTrainingJob of its latest SageMaker job, if SageMaker has it;
    ``request`` is its CreateTrainingJob request, when known (it fills in the answer while
    the job has never run)."""
    answer = copy.deepcopy(attempt) if attempt else _from_request(job, request, region)
    answer["TrainingJobName"] = job["name"]
    status = _queue_status(job, attempt)
    if status is not None:
        primary, secondary, message = status
        answer["TrainingJobStatus"] = primary
        answer["SecondaryStatus"] = secondary
        answer["SecondaryStatusTransitions"] = [
            *answer.get("SecondaryStatusTransitions", []),
            {"Status": secondary, "StartTime": now, "StatusMessage": message},
        ]
        answer["LastModifiedTime"] = now
        if primary == "Failed":
            answer["FailureReason"] = message
    return answer


def _queue_status(job: dict, attempt: dict | None) -> tuple[str, str, str] | None:
    """(status, secondary status, message) where the queue knows better than SageMaker;
    None where the latest SageMaker job tells the truth."""
    state = job["state"]
    sagemaker_status = (attempt or {}).get("TrainingJobStatus")
    if state == JobState.PENDING:
        return "InProgress", "Pending", _in_line(job, "Waiting in training-job-queue")
    if state == JobState.PREEMPTED:
        return "InProgress", "Pending", _in_line(job, "Preempted; waiting to resume")
    if state == JobState.PREEMPTING:
        return (
            "InProgress",
            "Interrupted",
            f"Preempted by {job.get('preempted_by')}; stopping, then back in the queue",
        )
    if state == JobState.STARTING and attempt is None:
        return "InProgress", "Starting", "Starting on capacity held by training-job-queue"
    if state == JobState.FAILED and sagemaker_status != "Failed":
        return "Failed", "Failed", job.get("failure_reason") or "failed in training-job-queue"
    if state == JobState.CANCELLED and sagemaker_status != "Stopped":
        return "Stopped", "Stopped", "Cancelled in training-job-queue"
    return None


def _in_line(job: dict, what: str) -> str:
    reason = reason_text(job)
    where = f"{what} {place(job)} (priority {job['priority']})"
    expected = expected_text(job)
    if expected:
        where += f", expected to start {expected}"
    return f"{where}: {reason}" if reason else where


def _from_request(job: dict, request: dict | None, region: str) -> dict:
    """The description of a job that never ran: its request, as SageMaker would echo it."""
    answer = {k: copy.deepcopy(v) for k, v in (request or {}).items() if k not in _REQUEST_ONLY}
    if "ResourceConfig" not in answer and len(job.get("instances") or {}) == 1:
        ((itype, count),) = job["instances"].items()
        answer["ResourceConfig"] = {"InstanceType": itype, "InstanceCount": count}
    answer["TrainingJobArn"] = training_job_arn(job["name"], answer.get("RoleArn"), region)
    answer["CreationTime"] = _timestamp(job.get("submitted_at"))
    return answer


def training_job_arn(name: str, role_arn: str | None, region: str) -> str:
    """The ARN a training job of that name gets, in the account of its role (which is the
    account that runs it)."""
    parts = (role_arn or "").split(":")
    account = parts[4] if len(parts) > 5 and parts[4] else "000000000000"
    return f"arn:aws:sagemaker:{region}:{account}:training-job/{name}"


def _timestamp(iso: str | None) -> datetime:
    if not iso:
        return datetime.now(UTC)
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))
