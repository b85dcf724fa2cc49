"""SageMaker job names for each attempt: valid, within 63 characters, never the same twice."""

import re

import pytest

from job_queue.sagemaker import attempt_name, is_capacity_failure

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
