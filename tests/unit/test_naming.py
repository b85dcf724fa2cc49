"""SageMaker job names for each attempt: valid, within 63 characters, never the same twice."""

import re

import pytest

from job_queue.sagemaker import attempt_name, is_capacity_failure, sagemaker_name

PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def test_first_attempt_keeps_the_users_name():
    assert attempt_name("pytorch-training-2026-01-01-00-00-00-000", 7, 1) == (
        "pytorch-training-2026-01-01-00-00-00-000"
    )


@pytest.mark.parametrize("name", ["a", "job-1", "x" * 63, "a-" * 31 + "b", "A--b"])
def test_later_attempts_are_valid_distinct_and_deterministic(name):
    names = [attempt_name(name, 42, n) for n in range(1, 30)]
    assert all(PATTERN.match(n) and len(n) <= 63 for n in names)
    assert len(set(names)) == len(names)
    assert names == [attempt_name(name, 42, n) for n in range(1, 30)]


@pytest.mark.parametrize(
    "batch_name", ["qs1_job_high", "a_", "x" * 128, "under_" * 21 + "ab", "job--", "a-_-b"]
)
def test_an_aws_batch_name_runs_under_a_valid_sagemaker_name_of_every_attempt(batch_name):
    names = [attempt_name(batch_name, 3, n) for n in range(1, 10)]
    assert all(PATTERN.match(n) and len(n) <= 63 for n in names), names
    assert len(set(names)) == len(names)
    assert names[0] == sagemaker_name(batch_name)


def test_a_batch_name_runs_as_its_own_name_made_sagemaker_valid_and_unique():
    derived = sagemaker_name("qs1_job_high")
    assert derived.startswith("qs1-job-high-")
    # Names that differ only in underscores and hyphens stay apart.
    assert derived != sagemaker_name("qs1-job-high") == "qs1-job-high"
    assert sagemaker_name("qs1_job-high") != derived


def test_a_resubmitted_name_gets_different_retry_names():
    assert attempt_name("job", 1, 2) != attempt_name("job", 2, 2)


def test_retry_names_do_not_collide_with_a_users_own_suffix():
    assert attempt_name("job", 5, 2) != "job-r2"


@pytest.mark.parametrize(
    ("reason", "capacity"),
    [
        ("CapacityError: Unable to provision requested ML compute capacity.", True),
        ("InsufficientInstanceCapacity: not enough p5 in us-east-1a", True),
        ("AlgorithmError: ExecuteUserScriptError", False),
        (None, False),
    ],
)
def test_capacity_failures_are_recognised(reason, capacity):
    assert is_capacity_failure(reason) is capacity
