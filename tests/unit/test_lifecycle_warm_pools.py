"""What SageMaker's word about warm pools means for a queued job: the pool a job leaves, the
ends described for a pool first, a pool's own state, and a start on one."""

from dataclasses import replace

import pytest

from job_queue import lifecycle
from job_queue.lifecycle import (
    MarkRunning,
    Settle,
    on_start,
    on_status,
)
from job_queue.models import Attempt, JobState, Outcome
from job_queue.sagemaker import (
    PoolStatus,
    StartOutcome,
    TrainingJobStatus,
)
from job_queue.scheduler.snapshot import WarmPool
from tests.unit.lifecycle_jobs import (
    BACKOFF,
    CAPACITY_ERROR,
    COMPLETED,
    FAILED,
    IN_PROGRESS,
    NOW,
    STARTING,
    STOPPED,
    job,
    last,
    result,
)

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
