"""What SageMaker's word means for a queued job: the lifecycle decisions, pure.

The service reads a job and what SageMaker says about its current attempt — a state-change
event, a DescribeTrainingJob answer in the sweep, the outcome of a CreateTrainingJob — asks
this module what to do, and writes the answer. Nothing here does I/O or reads the clock.

The rules:

* Only the job's current attempt counts. An event or a description of another SageMaker job
  (an earlier attempt's late event) changes nothing, and neither does one for a job that no
  longer holds instances (it was settled already: a duplicate, or out of order).
* InProgress for a starting job: it runs, and its attempt is recorded.
* Completed: completed. Failed: failed, with SageMaker's reason — unless the reason says the
  instances could not be provisioned and nobody was stopping the job: then it never ran, and
  it goes back to its place in the queue to retry after a backoff.
* Stopped: a job being preempted waits to resume, in its place; a job being cancelled is
  cancelled; any other was stopped outside the queue (console, CLI) and is not requeued.
* A start SageMaker refused (capacity, limits, throttling) backs off, 1, 2, 4 ... minutes up
  to 15; one it rejected fails with its message; one whose outcome is unknown is left to the
  sweep, which describes it. A start that returns after the job was cancelled: the new
  SageMaker job is stopped (if none was created, the job is cancelled).
* The sweep, for a job that holds instances: no SageMaker job of its name once the claim is
  older than a grace period — a starting job's create is retried, a stopping one is settled
  as stopped; a SageMaker job that ended — settled as its event would have; a starting job
  whose SageMaker job exists — it runs; a stopping job whose SageMaker job is still
  InProgress — the stop is sent again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from job_queue.models import Attempt, Job, JobState, Outcome
from job_queue.sagemaker import (
    SageMakerStatus,
    StartOutcome,
    StartResult,
    TrainingJobStatus,
    is_capacity_failure,
)

START_GRACE_SECONDS = 60.0  # a start younger than this may still be under way elsewhere


@dataclass(frozen=True)
class Backoff:
    """How long a job waits after its n-th refused start: base, 2 x base, 4 x base ... max."""

    base_s: float = 60.0
    max_s: float = 900.0

    def delay(self, failures: int) -> float:
        return min(self.max_s, self.base_s * 2 ** (failures - 1))


# -- decisions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ignore:
    """Nothing to do; ``why`` says why, for logs and tests."""

    why: str


@dataclass(frozen=True)
class MarkRunning:
    """starting → running: SageMaker has the job."""

    attempt: Attempt


@dataclass(frozen=True)
class Settle:
    """The job's instances are free: it ends in ``state`` (PREEMPTED: it waits to resume)."""

    state: JobState
    attempts: tuple[Attempt, ...] | None = None  # None: unchanged
    failure_reason: str | None = None


@dataclass(frozen=True)
class BackOff:
    """The job's instances are free; it waits in its place, to start no earlier than
    ``not_before``."""

    not_before: float
    start_failures: int
    last_error: str
    attempts: tuple[Attempt, ...] | None = None  # None: unchanged


@dataclass(frozen=True)
class RetryStart:
    """Create the SageMaker job again, under the same name (the gateway adopts it if the
    earlier call got through)."""


@dataclass(frozen=True)
class Stop:
    """Ask SageMaker to stop the job's current SageMaker job."""

    why: str


Decision = Ignore | MarkRunning | Settle | BackOff | RetryStart | Stop


# -- the rules ------------------------------------------------------------------------------


def on_status(
    job: Job | None,
    sagemaker_name: str | None,
    status: SageMakerStatus | None,
    reason: str | None,
    now: float,
    backoff: Backoff = Backoff(),
) -> Decision:
    """SageMaker job ``sagemaker_name`` (started for ``job``) reached ``status``."""
    if job is None:
        return Ignore("no such job in the queue")
    if job.attempt_name != sagemaker_name:
        return Ignore("not the job's current attempt: an earlier attempt's late event")
    if not job.state.holds_instances:
        return Ignore(f"the job is {job.state} already")
    if status is SageMakerStatus.IN_PROGRESS:
        if job.state is JobState.STARTING:
            return MarkRunning(_new_attempt(job, now))
        return Ignore(f"the job is {job.state}")
    if status is None or not status.ended:
        return Ignore(f"{status or 'an unknown status'} changes nothing")
    return _ended(job, status, reason, now, backoff)


def on_description(
    job: Job | None,
    sagemaker_name: str,
    found: TrainingJobStatus | None,
    claimed_at: float,
    now: float,
    backoff: Backoff = Backoff(),
) -> Decision:
    """The sweep described ``sagemaker_name`` (None: SageMaker has no such job) for ``job``,
    which claimed its instances at ``claimed_at``."""
    if job is None or not job.state.holds_instances:
        return Ignore("the job no longer holds instances")
    if job.attempt_name != sagemaker_name:
        return Ignore("the job has moved on to another attempt")
    if found is None:
        if now - claimed_at <= START_GRACE_SECONDS:
            return Ignore("its start may still be under way in another invocation")
        if job.state is JobState.STARTING:
            return RetryStart()
        # Stopped before SageMaker ever created it.
        return on_status(job, sagemaker_name, SageMakerStatus.STOPPED, None, now, backoff)
    if found.status is not None and found.status.ended:
        return on_status(job, sagemaker_name, found.status, found.failure_reason, now, backoff)
    if job.state is JobState.STARTING:
        return MarkRunning(_new_attempt(job, now))
    if job.state.is_stopping and found.status is SageMakerStatus.IN_PROGRESS:
        return Stop("the stop has not taken: SageMaker still runs it")
    return Ignore("SageMaker agrees with the queue")


def on_start(
    job: Job, sagemaker_name: str, result: StartResult, now: float, backoff: Backoff = Backoff()
) -> Decision:
    """CreateTrainingJob for ``sagemaker_name`` answered ``result``; ``job`` as it was
    claimed, or as re-read after a write lost a race (a cancel during the call)."""
    if job.attempt_name != sagemaker_name:
        return Ignore("the job has moved on to another attempt")
    if result.outcome is StartOutcome.UNKNOWN:
        return Ignore("the start's outcome is unknown: the sweep will describe it")
    if job.state is JobState.CANCELLING:
        if result.outcome is StartOutcome.STARTED:
            return Stop("cancelled while SageMaker created it")
        return Settle(JobState.CANCELLED)
    if job.state is not JobState.STARTING:
        return Ignore(f"the job is {job.state}")
    if result.outcome is StartOutcome.STARTED:
        return MarkRunning(_new_attempt(job, now))
    if result.outcome is StartOutcome.REFUSED:
        return _back_off(job, result.message, now, backoff)
    return Settle(JobState.FAILED, failure_reason=result.message)


# -- helpers --------------------------------------------------------------------------------


def _ended(
    job: Job, status: SageMakerStatus, reason: str | None, now: float, backoff: Backoff
) -> Settle | BackOff:
    if status is SageMakerStatus.COMPLETED:
        return Settle(JobState.COMPLETED, closed(job, Outcome.COMPLETED, now))
    if status is SageMakerStatus.FAILED:
        if is_capacity_failure(reason) and not job.state.is_stopping:
            attempts = closed(job, Outcome.CAPACITY_ERROR, now, reason)
            return _back_off(job, reason, now, backoff, attempts)
        return Settle(
            JobState.FAILED,
            closed(job, Outcome.FAILED, now, reason),
            failure_reason=reason or "SageMaker reported Failed without a reason",
        )
    if job.state is JobState.PREEMPTING:
        return Settle(JobState.PREEMPTED, closed(job, Outcome.PREEMPTED, now))
    if job.state is JobState.CANCELLING:
        return Settle(JobState.CANCELLED, closed(job, Outcome.CANCELLED, now))
    return Settle(JobState.STOPPED, closed(job, Outcome.STOPPED, now))


def _back_off(job: Job, message: str, now: float, backoff: Backoff, attempts=None) -> BackOff:
    failures = job.start_failures + 1
    return BackOff(now + backoff.delay(failures), failures, message, attempts)


def _new_attempt(job: Job, now: float) -> Attempt:
    return Attempt(len(job.attempts) + 1, job.attempt_name, now)


def closed(
    job: Job, outcome: Outcome, now: float, reason: str | None = None
) -> tuple[Attempt, ...]:
    """The job's attempts with the current one ended (added if it never got marked running)."""
    attempts = list(job.attempts)
    if not attempts or attempts[-1].sagemaker_job_name != job.attempt_name:
        attempts.append(Attempt(len(attempts) + 1, job.attempt_name, now))
    attempts[-1] = replace(
        attempts[-1],
        ended_at=now,
        outcome=outcome,
        failure_reason=reason if outcome in (Outcome.FAILED, Outcome.CAPACITY_ERROR) else None,
        preempted_by=job.preempted_by if outcome is Outcome.PREEMPTED else None,
    )
    return tuple(attempts)
