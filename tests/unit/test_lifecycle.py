"""What SageMaker's word means for a queued job, as scenarios: events, the sweep's
descriptions and start outcomes, each against a job in a given state."""

import copy
from dataclasses import dataclass, field, replace

import pytest

from job_queue import lifecycle
from job_queue.lifecycle import (
    BackOff,
    Backoff,
    Ignore,
    MarkRunning,
    RetryStart,
    Settle,
    Stop,
    on_description,
    on_start,
    on_status,
)
from job_queue.limits import Limits
from job_queue.models import Attempt, Job, JobState, Outcome
from job_queue.sagemaker import (
    PoolStatus,
    SageMakerStatus,
    StartOutcome,
    StartResult,
    TrainingJobStatus,
)
from job_queue.scheduler.holds import DRAIN
from job_queue.scheduler.snapshot import WarmPool

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


CAPPED = replace(
    job(JobState.PREEMPTING, preempted_by="urgent"),
    request={"Tags": [{"Key": "max-preemptions", "Value": "1"}]},
)
SECOND_PREEMPTION = last(Outcome.PREEMPTED, preempted_by="urgent")
TOO_OFTEN = "preempted 2 times, more than its max-preemptions (1) allows"


@pytest.mark.parametrize(
    ("title", "job_", "limits", "expected"),
    [
        (
            "its tag allows one preemption: the second fails it, saying so",
            CAPPED,
            Limits(),
            Settle(JobState.FAILED, SECOND_PREEMPTION, TOO_OFTEN),
        ),
        (
            "the queue's MaxPreemptions, for a job without the tag",
            job(JobState.PREEMPTING, preempted_by="urgent"),
            Limits(max_preemptions=1),
            Settle(JobState.FAILED, SECOND_PREEMPTION, TOO_OFTEN),
        ),
        (
            "the job's tag overrides the queue's default",
            replace(CAPPED, request={"Tags": [{"Key": "max-preemptions", "Value": "5"}]}),
            Limits(max_preemptions=1),
            Settle(JobState.PREEMPTED, SECOND_PREEMPTION),
        ),
        (
            "MaxPreemptions 0: the first preemption fails a job",
            job(JobState.PREEMPTING, "x", (Attempt(1, "x", 1.0),), preempted_by="urgent"),
            Limits(max_preemptions=0),
            Settle(
                JobState.FAILED,
                (Attempt(1, "x", 1.0, NOW, Outcome.PREEMPTED, preempted_by="urgent"),),
                "preempted once, more than its max-preemptions (0) allows",
            ),
        ),
        (
            "a stop by an admin's drain is not counted: the job waits to resume",
            replace(CAPPED, preempted_by=DRAIN),
            Limits(max_preemptions=0),
            Settle(JobState.PREEMPTED, last(Outcome.PREEMPTED, preempted_by=DRAIN)),
        ),
        (
            "earlier drains are not counted either: the first real preemption is allowed",
            replace(
                CAPPED,
                attempts=(
                    Attempt(1, "train", 1000.0, 2000.0, Outcome.PREEMPTED, preempted_by=DRAIN),
                    Attempt(2, "train-r2-abc", 40_000.0),
                ),
            ),
            Limits(),
            Settle(
                JobState.PREEMPTED,
                (
                    Attempt(1, "train", 1000.0, 2000.0, Outcome.PREEMPTED, preempted_by=DRAIN),
                    Attempt(2, "train-r2-abc", 40_000.0, NOW, Outcome.PREEMPTED, None, "urgent"),
                ),
            ),
        ),
    ],
)
def test_a_job_preempted_more_often_than_allowed_fails(title, job_, limits, expected):
    name = job_.attempt_name
    decision = on_status(job_, name, STOPPED, None, NOW, BACKOFF, limits=limits)
    assert decision == expected


@pytest.mark.parametrize("case", EVENTS, ids=[c.title for c in EVENTS])
def test_state_change_event(case: Case):
    before = copy.deepcopy(case.job)
    decision = on_status(case.job, case.name, case.status, case.reason, NOW, BACKOFF)
    check(decision, case.expected)
    assert case.job == before, "input was mutated"


def described(status, reason=None, name="train-r2-abc"):
    return TrainingJobStatus(name, status, reason)


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


def result(outcome, message=""):
    return StartResult(outcome, message)


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


# -- warm pools ---------------------------------------------------------------------------------

KEEP_ALIVE = 300
WITH_POOL = replace(
    job(),
    request={
        "ResourceConfig": {
            "InstanceType": "ml.p5.48xlarge",
            "InstanceCount": 1,
            "KeepAlivePeriodInSeconds": KEEP_ALIVE,
        }
    },
)
ENDED_AT = NOW - 20  # TrainingEndTime: the keep-alive runs from there, not from the event


def described_pool(status, pool, reused_by=None, name="train-r2-abc"):
    return TrainingJobStatus(
        name, status, None, ended_at=ENDED_AT, pool=pool, pool_reused_by=reused_by
    )


def left(job_):
    return WarmPool(
        "train-r2-abc",
        "train",
        {"ml.p5.48xlarge": 1},
        job_.warm_key,
        ENDED_AT,
        ENDED_AT + KEEP_ALIVE,
    )


def test_a_completed_job_that_sagemaker_kept_leaves_a_pool_for_its_keep_alive():
    found = described_pool(COMPLETED, PoolStatus.AVAILABLE)
    decision = on_status(WITH_POOL, "train-r2-abc", COMPLETED, None, NOW, BACKOFF, found)
    assert decision == Settle(JobState.COMPLETED, last(Outcome.COMPLETED), pool=left(WITH_POOL))


def test_a_preempted_job_that_sagemaker_kept_leaves_a_pool_and_waits_to_resume():
    preempting = replace(WITH_POOL, state=JobState.PREEMPTING, preempted_by="urgent")
    found = described_pool(STOPPED, PoolStatus.AVAILABLE)
    decision = on_status(preempting, "train-r2-abc", STOPPED, None, NOW, BACKOFF, found)
    assert decision.state is JobState.PREEMPTED and decision.pool == left(WITH_POOL)


def test_no_pool_when_sagemaker_kept_none():
    found = described_pool(COMPLETED, None)  # the warm-pool quota was full, say
    decision = on_status(WITH_POOL, "train-r2-abc", COMPLETED, None, NOW, BACKOFF, found)
    assert decision == Settle(JobState.COMPLETED, last(Outcome.COMPLETED))


MAY_LEAVE = [
    ("a completed job with a keep-alive", WITH_POOL, "train-r2-abc", COMPLETED, None, True),
    ("a stopped job with a keep-alive", WITH_POOL, "train-r2-abc", STOPPED, None, True),
    ("a job without a keep-alive", job(), "train-r2-abc", COMPLETED, None, False),
    ("a capacity failure never ran", WITH_POOL, "train-r2-abc", FAILED, CAPACITY_ERROR, False),
    ("a job still running", WITH_POOL, "train-r2-abc", IN_PROGRESS, None, False),
    ("an earlier attempt's late event", WITH_POOL, "train", COMPLETED, None, False),
    (
        "a job settled already",
        replace(WITH_POOL, state=JobState.COMPLETED),
        "train-r2-abc",
        COMPLETED,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("title", "job_", "name", "status", "reason", "expected"),
    MAY_LEAVE,
    ids=[m[0] for m in MAY_LEAVE],
)
def test_which_ends_are_described_for_a_pool_first(title, job_, name, status, reason, expected):
    assert lifecycle.may_leave_pool(job_, name, status, reason) is expected


IDLE = WarmPool("old-job", "old", {"ml.p5.48xlarge": 1}, "k", NOW - 100, NOW + 200)
CLAIMED = replace(IDLE, claimed_by="new-job", claimed_at=NOW - 5)
CLAIMED_LONG_AGO_POOL = replace(CLAIMED, claimed_at=NOW - 600)


def pool_state(status, reused_by=None):
    return TrainingJobStatus("old-job", COMPLETED, None, pool=status, pool_reused_by=reused_by)


POOLS = [
    (
        "an idle pool SageMaker still has stays",
        IDLE,
        pool_state(PoolStatus.AVAILABLE),
        False,
        lifecycle.KeepPool,
    ),
    (
        "an idle pool that expired is forgotten",
        IDLE,
        pool_state(PoolStatus.TERMINATED),
        False,
        lifecycle.ForgetPool,
    ),
    (
        "an idle pool another job took (outside the queue) is forgotten",
        IDLE,
        pool_state(PoolStatus.REUSED, "someone"),
        False,
        lifecycle.ForgetPool,
    ),
    (
        "a pool whose job SageMaker no longer knows is forgotten",
        IDLE,
        None,
        False,
        lifecycle.ForgetPool,
    ),
    (
        "a claimed pool that moved to its job is forgotten: the job holds it",
        CLAIMED,
        pool_state(PoolStatus.REUSED, "new-job"),
        True,
        lifecycle.ForgetPool,
    ),
    (
        "a claimed pool still available after the start returned is idle again",
        CLAIMED,
        pool_state(PoolStatus.AVAILABLE),
        True,
        lifecycle.UnclaimPool,
    ),
    (
        "a claimed pool still available while the start may be under way stays claimed",
        CLAIMED,
        pool_state(PoolStatus.AVAILABLE),
        False,
        lifecycle.KeepPool,
    ),
    (
        "a claim older than the grace period with the pool still available is given up",
        CLAIMED_LONG_AGO_POOL,
        pool_state(PoolStatus.AVAILABLE),
        False,
        lifecycle.UnclaimPool,
    ),
]


@pytest.mark.parametrize(
    ("title", "pool", "found", "start_over", "expected"), POOLS, ids=[p[0] for p in POOLS]
)
def test_a_warm_pool_described(title, pool, found, start_over, expected):
    decision = lifecycle.on_pool(pool, found, NOW, start_over)
    assert isinstance(decision, expected) and decision.why


def test_a_start_on_a_pool_is_warm_only_if_sagemaker_moved_the_pool_to_it():
    planned = replace(STARTING, warm_pool="old-job")
    moved = pool_state(PoolStatus.REUSED, "train-r2-abc")
    assert lifecycle.started_on(planned, "train-r2-abc", moved) == "old-job"
    assert lifecycle.started_on(planned, "train-r2-abc", pool_state(PoolStatus.AVAILABLE)) is None
    assert lifecycle.started_on(planned, "train-r2-abc", None) == "old-job"  # not known
    assert lifecycle.started_on(STARTING, "train-r2-abc", None) is None  # a cold start
    decision = on_start(
        planned, "train-r2-abc", result(StartOutcome.STARTED), NOW, BACKOFF, "old-job"
    )
    assert decision == MarkRunning(Attempt(2, "train-r2-abc", NOW, warm_pool="old-job"))


def capped(job_: Job, seconds: int) -> Job:
    """``job_`` with a ``max-total-runtime`` tag of ``seconds``."""
    tag = {"Key": "max-total-runtime", "Value": str(seconds)}
    return replace(job_, request={"Tags": [tag]})


# The default job ran 1,000 s on its first attempt and 10,000 s on its second, by NOW.
TOO_LONG = "ran 11000 s in all, more than its max-total-runtime (10000 s) allows"


@pytest.mark.parametrize(
    ("title", "decide", "expected"),
    [
        (
            "running past its max-total-runtime over all its attempts: stopped for good",
            lambda: on_description(
                capped(job(), 10_000), "train-r2-abc", described(IN_PROGRESS), 0.0, NOW
            ),
            lifecycle.StopForGood(TOO_LONG),
        ),
        (
            "within its max-total-runtime it runs on",
            lambda: on_description(
                capped(job(), 12_000), "train-r2-abc", described(IN_PROGRESS), 0.0, NOW
            ),
            Ignore,
        ),
        (
            "stopped at its limit, it ends failed, saying why",
            lambda: on_status(
                capped(job(JobState.CANCELLING, failure_reason=TOO_LONG), 10_000),
                "train-r2-abc",
                STOPPED,
                None,
                NOW,
                BACKOFF,
            ),
            Settle(JobState.FAILED, last(Outcome.STOPPED), TOO_LONG),
        ),
        (
            "preempted past its max-total-runtime, it ends failed instead of going back in line",
            lambda: on_status(
                capped(job(JobState.PREEMPTING, preempted_by="urgent"), 10_000),
                "train-r2-abc",
                STOPPED,
                None,
                NOW,
                BACKOFF,
            ),
            Settle(JobState.FAILED, last(Outcome.PREEMPTED, preempted_by="urgent"), TOO_LONG),
        ),
        (
            "an infrastructure failure past its max-total-runtime is not retried",
            lambda: on_status(
                capped(job(), 10_000), "train-r2-abc", FAILED, INTERNAL, NOW, BACKOFF
            ),
            Settle(
                JobState.FAILED,
                last(Outcome.FAILED, failure_reason=INTERNAL),
                INTERNAL,
            ),
        ),
    ],
)
def test_a_job_that_ran_longer_in_all_than_its_max_total_runtime(title, decide, expected):
    decision = decide()
    if isinstance(expected, type):
        assert isinstance(decision, expected), decision
    else:
        assert decision == expected
