"""The limits on a job's attempts as its lifecycle applies them: MaxPreemptions and the
max-preemptions tag, and a max-total-runtime over all its attempts."""

from dataclasses import replace

import pytest

from job_queue import lifecycle
from job_queue.lifecycle import (
    Ignore,
    Settle,
    on_description,
    on_status,
)
from job_queue.limits import Limits
from job_queue.models import Attempt, Job, JobState, Outcome
from job_queue.scheduler.holds import DRAIN
from tests.unit.lifecycle_jobs import (
    BACKOFF,
    FAILED,
    IN_PROGRESS,
    INTERNAL,
    NOW,
    STOPPED,
    described,
    job,
    last,
)

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
