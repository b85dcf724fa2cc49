"""What SageMaker's word means for a queued job, as scenarios: events, the sweep's
descriptions and start outcomes, each against a job in a given state."""

import copy
from dataclasses import dataclass, field, replace

import pytest

from job_queue import lifecycle
from job_queue.lifecycle import (
    BackOff,
    Ignore,
    MarkRunning,
    RetryStart,
    Settle,
    Stop,
    on_description,
    on_start,
    on_status,
)
from job_queue.models import Attempt, Job, JobState, Outcome
from job_queue.sagemaker import (
    SageMakerStatus,
    StartOutcome,
)
from tests.unit.lifecycle_jobs import (
    BACKOFF,
    CAPACITY_ERROR,
    COMPLETED,
    FAILED,
    IN_PROGRESS,
    INTERNAL,
    INTERNAL_FAILURE,
    NOW,
    STARTING,
    STOPPED,
    STOPPING,
    described,
    job,
    last,
    result,
)


@dataclass
class Case:
    title: str
    job: Job | None
    expected: object
    status: SageMakerStatus | None = None
    reason: str | None = None
    name: str = "train-r2-abc"
    extra: dict = field(default_factory=dict)


EVENTS = [
    Case(
        "a starting job's InProgress event: it runs, its second attempt recorded",
        STARTING,
        MarkRunning(Attempt(2, "train-r2-abc", NOW)),
        IN_PROGRESS,
    ),
    Case("a running job's InProgress event again: nothing", job(), Ignore, IN_PROGRESS),
    Case(
        "Completed: completed, the attempt closed",
        job(),
        Settle(JobState.COMPLETED, last(Outcome.COMPLETED)),
        COMPLETED,
    ),
    Case(
        "Failed: failed with SageMaker's reason",
        job(),
        Settle(
            JobState.FAILED,
            last(Outcome.FAILED, failure_reason="AlgorithmError: exit 1"),
            "AlgorithmError: exit 1",
        ),
        FAILED,
        "AlgorithmError: exit 1",
    ),
    Case(
        "Failed without a reason: failed, saying so",
        job(),
        Settle(
            JobState.FAILED,
            last(Outcome.FAILED),
            "SageMaker reported Failed without a reason",
        ),
        FAILED,
    ),
    Case(
        "Failed for capacity: back in line, retried after a minute",
        job(),
        BackOff(
            NOW + 60,
            1,
            CAPACITY_ERROR,
            last(Outcome.CAPACITY_ERROR, failure_reason=CAPACITY_ERROR),
        ),
        FAILED,
        CAPACITY_ERROR,
    ),
    Case(
        "the fourth capacity failure in a row waits 8 minutes",
        job(start_failures=3),
        BackOff(
            NOW + 480,
            4,
            CAPACITY_ERROR,
            last(Outcome.CAPACITY_ERROR, failure_reason=CAPACITY_ERROR),
        ),
        FAILED,
        CAPACITY_ERROR,
    ),
    Case(
        "a job being preempted that fails for capacity is not retried as a start: failed",
        job(JobState.PREEMPTING, preempted_by="urgent"),
        Settle(
            JobState.FAILED,
            last(Outcome.FAILED, failure_reason=CAPACITY_ERROR),
            CAPACITY_ERROR,
        ),
        FAILED,
        CAPACITY_ERROR,
    ),
    Case(
        "Failed with an internal error: back in its place to resume, the attempt kept as failed",
        job(),
        Settle(
            JobState.PENDING,
            last(Outcome.FAILED, failure_reason=INTERNAL),
            note=f"failed, retried (1 of 3 attempts): {INTERNAL}",
        ),
        FAILED,
        INTERNAL,
    ),
    Case(
        "the second internal error is retried too: the preemption before does not count",
        job(attempts=(INTERNAL_FAILURE, Attempt(2, "train-r2-abc", 40_000.0))),
        Settle(
            JobState.PENDING,
            (
                INTERNAL_FAILURE,
                Attempt(2, "train-r2-abc", 40_000.0, NOW, Outcome.FAILED, INTERNAL),
            ),
            note=f"failed, retried (2 of 3 attempts): {INTERNAL}",
        ),
        FAILED,
        INTERNAL,
    ),
    Case(
        "the third internal error uses up its attempts: failed",
        job(
            attempt="train-r3-abc",
            attempts=(
                INTERNAL_FAILURE,
                replace(INTERNAL_FAILURE, number=2, sagemaker_job_name="train-r2-abc"),
                Attempt(3, "train-r3-abc", 40_000.0),
            ),
        ),
        Settle(
            JobState.FAILED,
            (
                INTERNAL_FAILURE,
                replace(INTERNAL_FAILURE, number=2, sagemaker_job_name="train-r2-abc"),
                Attempt(3, "train-r3-abc", 40_000.0, NOW, Outcome.FAILED, INTERNAL),
            ),
            INTERNAL,
        ),
        FAILED,
        INTERNAL,
        name="train-r3-abc",
    ),
    Case(
        "a job being preempted that fails with an internal error is not retried: failed",
        job(JobState.PREEMPTING, preempted_by="urgent"),
        Settle(JobState.FAILED, last(Outcome.FAILED, failure_reason=INTERNAL), INTERNAL),
        FAILED,
        INTERNAL,
    ),
    Case(
        "a preempted job's Stopped: waits to resume, preempted by whom",
        job(JobState.PREEMPTING, preempted_by="urgent"),
        Settle(JobState.PREEMPTED, last(Outcome.PREEMPTED, preempted_by="urgent")),
        STOPPED,
    ),
    Case(
        "a cancelled job's Stopped: cancelled",
        job(JobState.CANCELLING),
        Settle(JobState.CANCELLED, last(Outcome.CANCELLED)),
        STOPPED,
    ),
    Case(
        "Stopped with nobody in the queue stopping it (console, CLI): stopped, not requeued",
        job(),
        Settle(JobState.STOPPED, last(Outcome.STOPPED)),
        STOPPED,
    ),
    Case(
        "a starting job that ends before it was marked running gets its attempt all the same",
        STARTING,
        Settle(
            JobState.COMPLETED,
            (*STARTING.attempts, Attempt(2, "train-r2-abc", NOW, NOW, Outcome.COMPLETED)),
        ),
        COMPLETED,
    ),
    Case("a Stopping event: nothing until it is Stopped", job(), Ignore, STOPPING),
    Case("a status the queue does not know: nothing", job(), Ignore, None),
    Case(
        "the same Completed event twice: the second finds the job settled",
        job(JobState.COMPLETED),
        Ignore,
        COMPLETED,
    ),
    Case(
        "an earlier attempt's late Stopped event: nothing",
        job(),
        Ignore,
        STOPPED,
        name="train",
    ),
    Case(
        "an out-of-order Completed for a job waiting to resume: nothing",
        job(JobState.PREEMPTED),
        Ignore,
        COMPLETED,
    ),
    Case("an event for a job the table does not have: nothing", None, Ignore, COMPLETED),
]


def check(decision, expected) -> None:
    """``expected`` a decision, or the class of one whose ``why`` is only for the log."""
    if expected in (Ignore, Stop):
        assert isinstance(decision, expected), decision
        assert decision.why
    else:
        assert decision == expected


@pytest.mark.parametrize("case", EVENTS, ids=[c.title for c in EVENTS])
def test_state_change_event(case: Case):
    before = copy.deepcopy(case.job)
    decision = on_status(case.job, case.name, case.status, case.reason, NOW, BACKOFF)
    check(decision, case.expected)
    assert case.job == before, "input was mutated"


CLAIMED_LONG_AGO = NOW - 600
CLAIMED_JUST_NOW = NOW - 5

SWEEP = [
    Case(
        "no SageMaker job for a start claimed ten minutes ago: create it again",
        STARTING,
        RetryStart(),
        extra={"found": None},
    ),
    Case(
        "no SageMaker job for a start claimed seconds ago: it may still be under way",
        STARTING,
        Ignore,
        extra={"found": None, "claimed_at": CLAIMED_JUST_NOW},
    ),
    Case(
        "no SageMaker job for a job being cancelled: it was stopped before it existed, "
        "and its attempts stay those SageMaker ran",
        job(JobState.CANCELLING, attempts=job().attempts[:1]),
        Settle(JobState.CANCELLED),
        extra={"found": None},
    ),
    Case(
        "a missed Completed event: completed as the event would have",
        job(),
        Settle(JobState.COMPLETED, last(Outcome.COMPLETED)),
        extra={"found": described(COMPLETED)},
    ),
    Case(
        "a missed Stopped event of a preemption: waits to resume",
        job(JobState.PREEMPTING, preempted_by="urgent"),
        Settle(JobState.PREEMPTED, last(Outcome.PREEMPTED, preempted_by="urgent")),
        extra={"found": described(STOPPED)},
    ),
    Case(
        "a starting job whose SageMaker job exists (the start's answer was lost): it runs",
        STARTING,
        MarkRunning(Attempt(2, "train-r2-abc", NOW)),
        extra={"found": described(IN_PROGRESS)},
    ),
    Case(
        "a job being preempted that SageMaker still runs: the stop is sent again",
        job(JobState.PREEMPTING),
        Stop,
        extra={"found": described(IN_PROGRESS)},
    ),
    Case(
        "a job being preempted that SageMaker is stopping: wait for its event",
        job(JobState.PREEMPTING),
        Ignore,
        extra={"found": described(STOPPING)},
    ),
    Case(
        "a running job SageMaker runs: the table is right",
        job(),
        Ignore,
        extra={"found": described(IN_PROGRESS)},
    ),
    Case(
        "a job settled since the sweep read the pool: nothing",
        job(JobState.COMPLETED),
        Ignore,
        extra={"found": described(COMPLETED)},
    ),
    Case(
        "a job that moved on to a new attempt since it was described: nothing",
        job(attempt="train-r3-abc"),
        Ignore,
        extra={"found": described(COMPLETED)},
    ),
]


@pytest.mark.parametrize("case", SWEEP, ids=[c.title for c in SWEEP])
def test_sweep_description(case: Case):
    claimed_at = case.extra.get("claimed_at", CLAIMED_LONG_AGO)
    decision = on_description(case.job, case.name, case.extra["found"], claimed_at, NOW, BACKOFF)
    if case.expected is Stop:
        assert isinstance(decision, Stop) and decision.why
    else:
        check(decision, case.expected)


STARTS = [
    Case(
        "SageMaker took the job: it runs",
        STARTING,
        MarkRunning(Attempt(2, "train-r2-abc", NOW)),
        extra={"result": result(StartOutcome.STARTED)},
    ),
    Case(
        "refused for capacity: back in line for a minute, the error kept",
        STARTING,
        BackOff(NOW + 60, 1, "ResourceLimitExceeded: limit"),
        extra={"result": result(StartOutcome.REFUSED, "ResourceLimitExceeded: limit")},
    ),
    Case(
        "refused a fifth time: the backoff stops growing at 15 minutes",
        job(JobState.STARTING, start_failures=5),
        BackOff(NOW + 900, 6, "ThrottlingException: rate"),
        extra={"result": result(StartOutcome.REFUSED, "ThrottlingException: rate")},
    ),
    Case(
        "rejected as invalid: failed with SageMaker's message",
        STARTING,
        Settle(JobState.FAILED, failure_reason="ValidationException: bad image"),
        extra={"result": result(StartOutcome.INVALID, "ValidationException: bad image")},
    ),
    Case(
        "outcome unknown: left to the sweep",
        STARTING,
        Ignore,
        extra={"result": result(StartOutcome.UNKNOWN, "InternalFailure")},
    ),
    Case(
        "cancelled while SageMaker created it: the new SageMaker job is stopped",
        job(JobState.CANCELLING, attempts=job().attempts[:1]),
        Stop,
        extra={"result": result(StartOutcome.STARTED)},
    ),
    Case(
        "cancelled while SageMaker refused it: cancelled",
        job(JobState.CANCELLING, attempts=job().attempts[:1]),
        Settle(JobState.CANCELLED),
        extra={"result": result(StartOutcome.REFUSED, "ResourceLimitExceeded: limit")},
    ),
    Case(
        "cancelled while the outcome is unknown: left to the sweep",
        job(JobState.CANCELLING, attempts=job().attempts[:1]),
        Ignore,
        extra={"result": result(StartOutcome.UNKNOWN, "InternalFailure")},
    ),
    Case(
        "an answer for an attempt the job no longer has: nothing",
        job(JobState.STARTING, attempt="train-r3-abc"),
        Ignore,
        extra={"result": result(StartOutcome.STARTED)},
    ),
]


@pytest.mark.parametrize("case", STARTS, ids=[c.title for c in STARTS])
def test_start_outcome(case: Case):
    decision = on_start(case.job, case.name, case.extra["result"], NOW, BACKOFF)
    check(decision, case.expected)


def test_closing_an_attempt_keeps_the_earlier_ones():
    attempts = lifecycle.closed(job(), Outcome.COMPLETED, NOW)
    assert attempts[0] == job().attempts[0]
    assert (attempts[1].ended_at, attempts[1].outcome) == (NOW, Outcome.COMPLETED)


def test_backoff_doubles_up_to_its_ceiling():
    assert [BACKOFF.delay(n) for n in range(1, 7)] == [60, 120, 240, 480, 900, 900]
