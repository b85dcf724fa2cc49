"""The jobs and SageMaker answers the lifecycle scenarios are written against."""

from job_queue.lifecycle import (
    Backoff,
)
from job_queue.models import Attempt, Job, JobState, Outcome
from job_queue.sagemaker import (
    SageMakerStatus,
    StartResult,
    TrainingJobStatus,
)

NOW = 50_000.0
BACKOFF = Backoff(base_s=60, max_s=900)
CAPACITY_ERROR = "CapacityError: Unable to provision requested ML compute capacity."
INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
INTERNAL_FAILURE = Attempt(1, "train", 1000.0, 2000.0, Outcome.FAILED, INTERNAL)
IN_PROGRESS, COMPLETED, FAILED, STOPPING, STOPPED = (
    SageMakerStatus.IN_PROGRESS,
    SageMakerStatus.COMPLETED,
    SageMakerStatus.FAILED,
    SageMakerStatus.STOPPING,
    SageMakerStatus.STOPPED,
)


def job(state=JobState.RUNNING, attempt="train-r2-abc", attempts=None, **kwargs) -> Job:
    """A job on its second attempt (``train-r2-abc``), marked running at 40,000 unless
    ``attempts`` says otherwise."""
    if attempts is None:
        attempts = (
            Attempt(1, "train", 1000.0, 2000.0, Outcome.PREEMPTED, preempted_by="urgent"),
            Attempt(2, "train-r2-abc", 40_000.0),
        )
    return Job(
        name="train",
        priority=1,
        seq=7,
        demand={"ml.p5.48xlarge": 1},
        state=state,
        submitted_at=0.0,
        request={},
        attempt_name=attempt,
        attempts=attempts,
        **kwargs,
    )


STARTING = job(JobState.STARTING, attempts=job().attempts[:1])  # claimed, not yet running
ENDED_AT_NOW = {"ended_at": NOW}


def last(outcome, **changes) -> tuple[Attempt, ...]:
    """The running job's attempts with the second ended now as ``outcome``."""
    first, second = job().attempts
    return (first, Attempt(**{**second.__dict__, **ENDED_AT_NOW, "outcome": outcome, **changes}))


def described(status, reason=None, name="train-r2-abc"):
    return TrainingJobStatus(name, status, reason)


def result(outcome, message=""):
    return StartResult(outcome, message)
