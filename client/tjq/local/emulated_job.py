"""One emulated SageMaker training job, and the error the emulator answers with."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tjq.local import emulated_pools as pools
from tjq.local.emulated_container import Container


class SageMakerFault(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status = code, message, status


@dataclass
class EmulatedJob:
    """A training job as :class:`~tjq.local.sagemaker.LocalSageMaker` keeps it."""

    name: str
    arn: str
    request: dict
    tags: dict[str, str]
    demand: dict[str, int]
    created_at: float
    ends_at: float  # when it completes (or fails) if nobody stops it
    status: str = "InProgress"
    secondary: str = "Starting"
    failure_reason: str | None = None
    end_reason: tuple[str, str | None] = ("Completed", None)
    stopped_at: float | None = None
    ended_at: float | None = None
    transitions: list[dict] = field(default_factory=list)
    keep_alive: int = 0  # ResourceConfig.KeepAlivePeriodInSeconds
    pool: str | None = None  # WarmPoolStatus.Status
    pool_expires_at: float | None = None
    reused_by: str | None = None  # the job its pool moved to
    reused_at: float | None = None  # when it moved: its pool's billing ended
    warm_from: str | None = None  # the job whose pool it started on
    plan: str | None = None  # the training plan it runs on (ResourceConfig.TrainingPlanArn)
    pending: bool = False  # waiting for its plan's capacity: InProgress, holding nothing
    reservation_ends: float | None = None  # its plan's instances terminate from then on
    container: Container | None = None  # its script, running (smq local-api --run-scripts)

    @property
    def pool_available(self) -> bool:
        return self.pool == pools.AVAILABLE


def demand_of(resource_config: dict) -> dict[str, int]:
    groups = resource_config.get("InstanceGroups") or [resource_config]
    demand: dict[str, int] = {}
    for group in groups:
        itype = group.get("InstanceType", "")
        demand[itype] = demand.get(itype, 0) + int(group.get("InstanceCount", 0))
    return demand


def state_change_event(detail: dict, account: str, region: str, now: float) -> dict:
    """A "SageMaker Training Job State Change" event of a job described as ``detail``."""
    detail = {k: _epoch_ms(v) if k.endswith("Time") else v for k, v in detail.items()}
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "account": account,
        "time": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [detail["TrainingJobArn"]],
        "detail": detail,
    }


def _epoch_ms(value):
    return int(value * 1000) if isinstance(value, int | float) else value


# The request's fields DescribeTrainingJob gives back, as SageMaker does.
# The statuses in which a job holds its instances.
HOLDING = ("InProgress", "Stopping")
_DESCRIBED = (
    "RoleArn",
    "AlgorithmSpecification",
    "ResourceConfig",
    "StoppingCondition",
    "OutputDataConfig",
    "HyperParameters",
    "InputDataConfig",
    "CheckpointConfig",
)


def describe(job: EmulatedJob, now: float) -> dict:
    """DescribeTrainingJob's answer for ``job``."""
    output_path = job.request.get("OutputDataConfig", {}).get("S3OutputPath", "")
    description = {
        "TrainingJobName": job.name,
        "TrainingJobArn": job.arn,
        "TrainingJobStatus": job.status,
        "SecondaryStatus": job.secondary,
        "CreationTime": job.created_at,
        "TrainingStartTime": job.created_at,
        "LastModifiedTime": job.transitions[-1]["StartTime"] if job.transitions else job.created_at,
        "SecondaryStatusTransitions": job.transitions,
        "ModelArtifacts": {
            "S3ModelArtifacts": f"{output_path.rstrip('/')}/{job.name}/output/model.tar.gz"
        },
        **{k: job.request[k] for k in _DESCRIBED if k in job.request},
    }
    if job.ended_at is not None:
        description["TrainingEndTime"] = job.ended_at
        description["BillableTimeInSeconds"] = int(job.ended_at - job.created_at)
    if job.failure_reason:
        description["FailureReason"] = job.failure_reason
    if job.pool is not None:
        description["WarmPoolStatus"] = pools.status(job, now)
    return description
