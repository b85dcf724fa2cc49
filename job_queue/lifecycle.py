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
  it goes back to its place in the queue to retry after a backoff; or unless the reason
  matches a ``RetryOnFailure`` rule (:mod:`job_queue.limits`) the job has not used
  up: then it goes back to its place, to resume from its checkpoint.
* A job whose attempts have run longer in all than its ``max-total-runtime`` tag allows is
  stopped by the sweep (cancelling) and ends failed; one preempted or retried past it ends
  failed instead of going back in line.
* Stopped: a job being preempted waits to resume, in its place; a job being cancelled is
  cancelled; any other was stopped outside the queue (console, CLI) and is not requeued.
* Whatever the end, a job with a keep-alive may leave a warm pool: SageMaker says
  (``WarmPoolStatus`` Available), and the pool then holds the job's instances until its
  keep-alive runs out from the job's end, a job starts on it, or the queue releases it.
* A start SageMaker refused (capacity, limits, throttling) backs off, 1, 2, 4 ... minutes up
  to 15; one it rejected fails with its message; one whose outcome is unknown is left to the
  sweep, which describes it. A start that returns after the job was cancelled: the new
  SageMaker job is stopped (if none was created, the job is cancelled).
* The sweep, for a job that holds instances: no SageMaker job of its name once the claim is
  older than a grace period — a starting job's create is retried, a stopping one is settled
  as stopped; a SageMaker job that ended — settled as its event would have; a starting job
  whose SageMaker job exists — it runs; a stopping job whose SageMaker job is still
  InProgress — the stop is sent again.
* A warm pool, when the sweep describes the job that left it (or a job was just started on
  it): still Available — it stays; gone (reused, terminated, unknown) — it is forgotten. One a
  job was started on: Available once that start is over — SageMaker started the job on
  other instances, so the pool is idle again; reused — it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from job_queue.limits import (
    DEFAULT_LIMITS,
    Limits,
    over_total_runtime,
    preempted_too_often,
    retried,
)
from job_queue.models import Attempt, Job, JobState, Outcome
from job_queue.sagemaker import (
    PoolStatus,
    SageMakerStatus,
    StartOutcome,
    StartResult,
    TrainingJobStatus,
    is_capacity_failure,
)
from job_queue.scheduler.holds import DRAIN
from job_queue.scheduler.snapshot import WarmPool

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
    """The job's instances are free — or held by the warm ``pool`` SageMaker kept of them: it
    ends in ``state`` (PREEMPTED: it waits to resume)."""

    state: JobState
    attempts: tuple[Attempt, ...] | None = None  # None: unchanged
    failure_reason: str | None = None
    pool: WarmPool | None = None
    note: str | None = None  # why, for its event, where the attempts do not say it


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


@dataclass(frozen=True)
class StopForGood:
    """running → cancelling: the job has run past its ``max-total-runtime``; it is stopped
    and ends failed, for ``why``."""

    why: str


Decision = Ignore | MarkRunning | Settle | BackOff | RetryStart | Stop | StopForGood


@dataclass(frozen=True)
class KeepPool:
    """The warm pool is as the table says."""

    why: str


@dataclass(frozen=True)
class ForgetPool:
    """The warm pool is gone (reused, released, expired): its instances are not held by it.
    ``billed_s``: what SageMaker says it billed for the pool's idle time, if it said."""

    why: str
    billed_s: float | None = None


@dataclass(frozen=True)
class UnclaimPool:
    """SageMaker did not start the claiming job on the pool: it is idle again."""

    why: str


PoolDecision = KeepPool | ForgetPool | UnclaimPool


# -- the rules ------------------------------------------------------------------------------


def on_status(
    job: Job | None,
    sagemaker_name: str | None,
    status: SageMakerStatus | None,
    reason: str | None,
    now: float,
    backoff: Backoff = Backoff(),
    found: TrainingJobStatus | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Decision:
    """SageMaker job ``sagemaker_name`` (started for ``job``) reached ``status``; ``found``,
    when the job was described, says whether SageMaker kept a warm pool of it."""
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
    decision = _ended(job, status, reason, now, backoff, limits)
    if isinstance(decision, Settle) and found is not None and found.pool is PoolStatus.AVAILABLE:
        return replace(decision, pool=pool_left(job, found, now))
    return decision


def may_leave_pool(
    job: Job | None, sagemaker_name: str | None, status: SageMakerStatus | None, reason
) -> bool:
    """Whether this end of ``job``'s current attempt may have left a warm pool, so that the
    job must be described before it is settled (the state-change event does not say)."""
    return (
        job is not None
        and job.attempt_name == sagemaker_name
        and job.state.holds_instances
        and job.keep_alive > 0
        and status is not None
        and status.ended
        and not (status is SageMakerStatus.FAILED and is_capacity_failure(reason))
    )


def pool_left(job: Job, found: TrainingJobStatus, now: float) -> WarmPool:
    """The warm pool SageMaker kept of ``job``'s attempt ``found``: its keep-alive runs from
    the attempt's end."""
    since = found.ended_at if found.ended_at is not None else now
    return WarmPool(
        name=found.name,
        job=job.name,
        demand=dict(job.demand),
        key=job.warm_key,
        since=since,
        expires_at=since + job.keep_alive,
        share=job.share,
        submitter=job.submitter,
    )


def on_description(
    job: Job | None,
    sagemaker_name: str,
    found: TrainingJobStatus | None,
    claimed_at: float,
    now: float,
    backoff: Backoff = Backoff(),
    limits: Limits = DEFAULT_LIMITS,
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
        # Stopped before SageMaker ever created it: it ends (or waits again) with no attempt,
        # as SageMaker ran none.
        decision = on_status(job, sagemaker_name, SageMakerStatus.STOPPED, None, now, backoff)
        started = any(a.sagemaker_job_name == sagemaker_name for a in job.attempts)
        if isinstance(decision, Settle) and not started:
            return replace(decision, attempts=None)
        return decision
    if found.status is not None and found.status.ended:
        return on_status(
            job, sagemaker_name, found.status, found.failure_reason, now, backoff, found, limits
        )
    if job.state is JobState.STARTING:
        return MarkRunning(_new_attempt(job, now))
    if job.state.is_stopping and found.status is SageMakerStatus.IN_PROGRESS:
        return Stop("the stop has not taken: SageMaker still runs it")
    over = over_total_runtime(job.max_total_runtime, job.attempts, now)
    if job.state is JobState.RUNNING and over is not None:
        return StopForGood(over)
    return Ignore("SageMaker agrees with the queue")


def on_start(
    job: Job,
    sagemaker_name: str,
    result: StartResult,
    now: float,
    backoff: Backoff = Backoff(),
    warm_pool: str | None = None,
) -> Decision:
    """CreateTrainingJob for ``sagemaker_name`` answered ``result``; ``job`` as it was
    claimed, or as re-read after a write lost a race (a cancel during the call);
    ``warm_pool``: the SageMaker job whose pool the attempt started on, if it did."""
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
        return MarkRunning(replace(_new_attempt(job, now), warm_pool=warm_pool))
    if result.outcome is StartOutcome.REFUSED:
        return _back_off(job, result.message, now, backoff)
    return Settle(JobState.FAILED, failure_reason=result.message)


def started_on(job: Job, sagemaker_name: str, pool_found: TrainingJobStatus | None) -> str | None:
    """The pool a just-started attempt runs on: the one it was started on, unless SageMaker
    says that pool was not moved to it (``pool_found`` None: not known, as planned)."""
    if job.warm_pool is None or pool_found is None:
        return job.warm_pool
    reused = pool_found.pool is PoolStatus.REUSED and pool_found.pool_reused_by == sagemaker_name
    return job.warm_pool if reused else None


def on_pool(
    pool: WarmPool, found: TrainingJobStatus | None, now: float, start_over: bool = False
) -> PoolDecision:
    """The job that left ``pool`` was described (None: SageMaker has no such job).
    ``start_over``: the start of the job that claimed the pool has returned."""
    if found is None or found.pool is not PoolStatus.AVAILABLE:
        if found is None:
            return ForgetPool("SageMaker has no such job")
        return ForgetPool(f"its pool is {found.pool}", found.pool_billed_s)
    if pool.claimed_by is None:
        return KeepPool("still available")
    if start_over or now - (pool.claimed_at or now) > START_GRACE_SECONDS:
        return UnclaimPool(f"{pool.claimed_by} did not start on it")
    return KeepPool(f"{pool.claimed_by} may still be starting on it")


# -- helpers --------------------------------------------------------------------------------


def _ended(
    job: Job,
    status: SageMakerStatus,
    reason: str | None,
    now: float,
    backoff: Backoff,
    limits: Limits,
) -> Settle | BackOff:
    if status is SageMakerStatus.COMPLETED:
        return Settle(JobState.COMPLETED, closed(job, Outcome.COMPLETED, now))
    if status is SageMakerStatus.FAILED:
        if is_capacity_failure(reason) and not job.state.is_stopping:
            attempts = closed(job, Outcome.CAPACITY_ERROR, now, reason)
            return _back_off(job, reason, now, backoff, attempts)
        earlier = [a.failure_reason for a in job.attempts if a.outcome is Outcome.FAILED]
        note = None if job.state.is_stopping else retried(limits.retry_on_failure, reason, earlier)
        attempts = closed(job, Outcome.FAILED, now, reason)
        over = over_total_runtime(job.max_total_runtime, attempts, now)
        if note is not None and over is None:
            return Settle(JobState.PENDING, attempts, note=note)
        return Settle(
            JobState.FAILED,
            closed(job, Outcome.FAILED, now, reason),
            failure_reason=reason or "SageMaker reported Failed without a reason",
        )
    if job.state is JobState.PREEMPTING:
        attempts = closed(job, Outcome.PREEMPTED, now)
        cap = limits.preemptions_allowed(job.max_preemptions)
        # An admin's drain is maintenance, not a preemption the job's cap is about.
        preempted = sum(
            1 for a in attempts if a.outcome is Outcome.PREEMPTED and a.preempted_by != DRAIN
        )
        too_often = None if job.preempted_by == DRAIN else preempted_too_often(cap, preempted)
        if too_often is not None:
            return Settle(JobState.FAILED, attempts, failure_reason=too_often)
        over = over_total_runtime(job.max_total_runtime, attempts, now)
        if over is not None:  # it would only be stopped again once resumed
            return Settle(JobState.FAILED, attempts, failure_reason=over)
        return Settle(JobState.PREEMPTED, attempts)
    if job.state is JobState.CANCELLING and job.failure_reason:  # stopped at its limit
        attempts = closed(job, Outcome.STOPPED, now)
        return Settle(JobState.FAILED, attempts, failure_reason=job.failure_reason)
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
