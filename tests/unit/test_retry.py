"""The read-decide-write loop: decided again after each lost race, a bounded number of times."""

import pytest

from job_queue.errors import JobConflict, StaleState
from job_queue.retry import until_settled


def test_a_lost_race_is_read_and_decided_again_until_the_write_holds():
    reads = []

    def attempt():
        reads.append(len(reads))
        if len(reads) < 3:
            raise StaleState("another invocation wrote first")
        return "written"

    assert until_settled(attempt, 8, lambda: "gave up") == "written"
    assert reads == [0, 1, 2]


def test_after_too_many_lost_races_the_caller_says_so():
    def attempt():
        raise StaleState("always behind")

    def refuse():
        raise JobConflict("job j is changing state too often; try again")

    with pytest.raises(JobConflict, match="too often"):
        until_settled(attempt, 3, refuse)


def test_a_refusal_is_not_retried():
    calls = []

    def attempt():
        calls.append(1)
        raise JobConflict("job j already ended")

    with pytest.raises(JobConflict):
        until_settled(attempt, 8, lambda: None)
    assert calls == [1]
