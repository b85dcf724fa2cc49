"""The SageMaker gateway: start, stop and describe training jobs; classify their errors."""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from botocore.exceptions import BotoCoreError, ClientError

from job_queue import tags
from job_queue.errors import SageMakerError

_CAPACITY_CODES = {"ResourceLimitExceeded", "InsufficientCapacityError", "CapacityError"}
_THROTTLING_CODES = {"ThrottlingException", "Throttling", "TooManyRequestsException"}
# A job that fails this way never ran: SageMaker could not get the instances.
_CAPACITY_FAILURE_MARKERS = ("CapacityError", "InsufficientInstanceCapacity")


SAGEMAKER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def sagemaker_name(job_name: str) -> str:
    """The SageMaker job name a queued job's first attempt runs under: its own name when that
    is a valid SageMaker name; for an AWS Batch-style name (underscores, up to 128
    characters) one derived from it — underscores to hyphens, cut to fit, and a hash of the
    whole name, so that two names that differ only there stay apart (``qs1_job_high`` runs
    as ``qs1-job-high-<hash>``)."""
    if SAGEMAKER_NAME.match(job_name):
        return job_name
    digest = hashlib.sha256(job_name.encode()).hexdigest()[:6]
    base = re.sub(r"-+", "-", job_name.replace("_", "-")).strip("-")
    return base[: 63 - 7].rstrip("-") + f"-{digest}"


def attempt_name(job_name: str, seq: int, attempt: int) -> str:
    """The SageMaker job name of a job's ``attempt``-th start.

    The first attempt runs as :func:`sagemaker_name`; later ones add ``-r<attempt>-<hash>``
    (the hash of name and submission number keeps them apart from jobs users name ``x-r2``
    themselves), shortening the name so the result stays within SageMaker's 63 characters.
    """
    first = sagemaker_name(job_name)
    if attempt == 1:
        return first
    digest = hashlib.sha256(f"{job_name}#{seq}".encode()).hexdigest()[:6]
    suffix = f"-r{attempt}-{digest}"
    return first[: 63 - len(suffix)].rstrip("-") + suffix


def is_capacity_failure(reason: str | None) -> bool:
    """True for a FailureReason meaning the instances could not be provisioned."""
    return bool(reason) and any(marker in reason for marker in _CAPACITY_FAILURE_MARKERS)


class SageMakerStatus(StrEnum):
    """``TrainingJobStatus``: the statuses of a SageMaker training job the queue reads."""

    IN_PROGRESS = "InProgress"
    COMPLETED = "Completed"
    FAILED = "Failed"
    STOPPING = "Stopping"
    STOPPED = "Stopped"

    @property
    def ended(self) -> bool:
        """True once the job has released its instances."""
        return self in _ENDED

    @classmethod
    def parse(cls, value: object) -> SageMakerStatus | None:
        """The status, or None for a value the queue does not know (it ignores those)."""
        return _parse(cls, value)


_ENDED = frozenset({SageMakerStatus.COMPLETED, SageMakerStatus.FAILED, SageMakerStatus.STOPPED})


class StartOutcome(StrEnum):
    STARTED = "started"
    REFUSED = "refused"  # capacity, limits or throttling: nothing was created; retry later
    INVALID = "invalid"  # SageMaker rejected the request; retrying cannot help
    UNKNOWN = "unknown"  # the call failed in a way that leaves it unknown whether it ran


@dataclass(frozen=True)
class StartResult:
    outcome: StartOutcome
    message: str = ""


class PoolStatus(StrEnum):
    """``WarmPoolStatus.Status``: what became of a job's warm pool."""

    AVAILABLE = "Available"  # idle, for a matching job
    IN_USE = "InUse"  # the job runs on a pool another one left
    REUSED = "Reused"  # moved to the job ``ReusedByJob``
    TERMINATED = "Terminated"  # released, expired, or ended by SageMaker


@dataclass(frozen=True)
class TrainingJobStatus:
    """What DescribeTrainingJob (or a state-change event) says about a SageMaker job."""

    name: str
    status: SageMakerStatus | None  # None: a status the queue does not know
    failure_reason: str | None
    arn: str = ""
    ended_at: float | None = None  # TrainingEndTime
    pool: PoolStatus | None = None  # WarmPoolStatus.Status: None without a pool
    pool_reused_by: str | None = None  # WarmPoolStatus.ReusedByJob
    # WarmPoolStatus.ResourceRetainedBillableTimeInSeconds: what its idle pool was billed.
    pool_billed_s: float | None = None
    model_artifacts: str | None = None  # ModelArtifacts.S3ModelArtifacts, once it completed


class SageMakerGateway:
    """CreateTrainingJob / StopTrainingJob / DescribeTrainingJob for the queue.

    A start answers with a :class:`StartResult`; a stop or describe that SageMaker fails
    raises :class:`~job_queue.errors.SageMakerError`.

    Example::

        gateway = SageMakerGateway(boto3.client("sagemaker"), queue_name="my-queue")
        result = gateway.start(request, "job-1", job_name="job-1", attempt=1)
    """

    def __init__(
        self,
        client,
        queue_name: str,
        sleep: Callable[[float], None] = time.sleep,
        throttle_retries: int = 3,
    ) -> None:
        self._client = client
        self._queue_name = queue_name
        self._sleep = sleep
        self._throttle_retries = throttle_retries

    def start(
        self, request: Mapping, sagemaker_name: str, job_name: str, attempt: int
    ) -> StartResult:
        """Create the SageMaker job for one attempt. Safe to repeat with the same name."""
        ours = tags.queue_tags(self._queue_name, job_name, attempt)
        params = dict(request)
        params["TrainingJobName"] = sagemaker_name
        params["Tags"] = tags.with_tags(tags.for_sagemaker(request.get("Tags")), ours, replace=True)
        try:
            self._call(self._client.create_training_job, **params)
        except ClientError as exc:
            code, message = _error(exc)
            if code == "ResourceInUse":
                return self._adopt(sagemaker_name, job_name, attempt, message)
            if code in _CAPACITY_CODES or code in _THROTTLING_CODES:
                return StartResult(StartOutcome.REFUSED, f"{code}: {message}")
            if code == "ValidationException":
                return StartResult(StartOutcome.INVALID, f"{code}: {message}")
            return StartResult(StartOutcome.UNKNOWN, f"{code}: {message}")
        except BotoCoreError as exc:
            return StartResult(StartOutcome.UNKNOWN, str(exc))
        return StartResult(StartOutcome.STARTED)

    def stop(self, sagemaker_name: str) -> None:
        """Ask SageMaker to stop a job. A job that already ended or never existed is fine."""
        self._tolerant(
            "StopTrainingJob", self._client.stop_training_job, TrainingJobName=sagemaker_name
        )

    def describe(self, sagemaker_name: str) -> TrainingJobStatus | None:
        """The job's status, or None if SageMaker has no job of that name."""
        try:
            found = self._call(self._client.describe_training_job, TrainingJobName=sagemaker_name)
        except ClientError as exc:
            code, message = _error(exc)
            if code == "ResourceNotFound" or "not found" in message.lower():
                return None
            raise SageMakerError(f"DescribeTrainingJob: {code}: {message}") from exc
        except BotoCoreError as exc:
            raise SageMakerError(f"DescribeTrainingJob: {exc}") from exc
        warm = found.get("WarmPoolStatus") or {}
        ended = found.get("TrainingEndTime")
        return TrainingJobStatus(
            name=found["TrainingJobName"],
            status=SageMakerStatus.parse(found["TrainingJobStatus"]),
            failure_reason=found.get("FailureReason"),
            arn=found.get("TrainingJobArn", ""),
            ended_at=ended.timestamp() if ended is not None else None,
            pool=_parse(PoolStatus, warm.get("Status")),
            pool_reused_by=warm.get("ReusedByJob"),
            pool_billed_s=_optional_float(warm.get("ResourceRetainedBillableTimeInSeconds")),
            model_artifacts=(found.get("ModelArtifacts") or {}).get("S3ModelArtifacts"),
        )

    def describe_training_plan(self, name: str) -> Mapping:
        """DescribeTrainingPlan's answer for the plan ``name``; SageMakerError if there is none
        or SageMaker would not say."""
        try:
            return self._call(self._client.describe_training_plan, TrainingPlanName=name)
        except ClientError as exc:
            code, message = _error(exc)
            raise SageMakerError(f"DescribeTrainingPlan: {code}: {message}") from exc
        except BotoCoreError as exc:
            raise SageMakerError(f"DescribeTrainingPlan: {exc}") from exc

    def release_pool(self, sagemaker_name: str) -> None:
        """End the warm pool ``sagemaker_name`` left, at once (keep-alive 0). A pool that is
        no longer available (reused, expired) is fine."""
        self._tolerant(
            "UpdateTrainingJob",
            self._client.update_training_job,
            TrainingJobName=sagemaker_name,
            ResourceConfig={"KeepAlivePeriodInSeconds": 0},
        )

    def _tolerant(self, what: str, operation, **params) -> None:
        """Call ``operation``; a job not in a state for it (or gone) is fine, any other
        failure is a SageMakerError."""
        try:
            self._call(operation, **params)
        except ClientError as exc:
            code, message = _error(exc)
            if code not in ("ValidationException", "ResourceNotFound"):
                raise SageMakerError(f"{what}: {code}: {message}") from exc
        except BotoCoreError as exc:
            raise SageMakerError(f"{what}: {exc}") from exc

    def _adopt(self, sagemaker_name: str, job_name: str, attempt: int, message: str):
        # The name exists: either our own earlier call got through (a retried start), or
        # somebody else's job has this name. Only our tags make it ours.
        try:
            existing = self.describe(sagemaker_name)
            found = {}
            if existing is not None and existing.arn:
                listed = self._call(self._client.list_tags, ResourceArn=existing.arn)
                found = {t["Key"]: t["Value"] for t in listed.get("Tags", [])}
        except (SageMakerError, ClientError, BotoCoreError) as exc:
            return StartResult(StartOutcome.UNKNOWN, f"could not tell whose job it is: {exc}")
        ours = tags.queue_tags(self._queue_name, job_name, attempt)
        if all(found.get(key) == value for key, value in ours.items()):
            return StartResult(StartOutcome.STARTED)
        return StartResult(
            StartOutcome.INVALID,
            f"a SageMaker training job named {sagemaker_name} already exists "
            f"and was not started by this queue ({message})",
        )

    def _call(self, operation, **params):
        for attempt in range(self._throttle_retries + 1):
            try:
                return operation(**params)
            except ClientError as exc:
                code, _ = _error(exc)
                if code not in _THROTTLING_CODES or attempt == self._throttle_retries:
                    raise
                self._sleep(min(2.0, 0.1 * 2**attempt) * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")


def _parse(enum, value):
    try:
        return enum(value)
    except ValueError:
        return None


def _error(exc: ClientError) -> tuple[str, str]:
    error = exc.response.get("Error", {})
    return error.get("Code", ""), error.get("Message", "")


def outside_pattern(instance_types: list) -> dict:
    """The EventBridge pattern of the template's second rule: jobs no queue started, on the
    capped ``instance_types`` (one type, or an instance group of one), whenever their status
    changes — they hold instances from InProgress until they end."""
    return {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker Training Job State Change"],
        "detail": {
            "TrainingJobStatus": [SageMakerStatus.IN_PROGRESS.value]
            + [status.value for status in SageMakerStatus if status.ended],
            "Tags": {tags.QUEUE: [{"exists": False}]},
            "$or": [
                {"ResourceConfig": {"InstanceType": instance_types}},
                {"ResourceConfig": {"InstanceGroups": {"InstanceType": instance_types}}},
            ],
        },
    }


def state_change_pattern(queue_name: str) -> dict:
    """The EventBridge pattern the template deploys: this queue's jobs, once they end."""
    return {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker Training Job State Change"],
        "detail": {
            "TrainingJobStatus": [status.value for status in SageMakerStatus if status.ended],
            "Tags": {tags.QUEUE: [queue_name]},
        },
    }


def _optional_float(value) -> float | None:
    return None if value is None else float(value)
