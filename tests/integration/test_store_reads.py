"""A scheduling pass reads the waiting jobs it needs and the active ones, not the table."""

import copy

from tjq.local.calls import training_request
from tjq.local.dynamodb_usage import DynamoDBUsage

from job_queue.scheduler import Share, Strategy
from job_queue.scheduler.forecast import HORIZON
from tests.conftest import G5, P5
from tests.integration.helpers import job, load, states, submit

DEPTH = 120


def _measure(cloud, action) -> DynamoDBUsage:
    before = copy.deepcopy(cloud.dynamodb_usage)
    action()
    return cloud.dynamodb_usage.since(before)


def test_a_pass_over_a_deep_queue_reads_only_its_head(make_cloud):
    cloud = make_cloud({P5: 2})
    for i in range(2):
        submit(cloud, f"job{i:03d}", 1)  # they run
    load(cloud, DEPTH - 2, prefix="job")
    running_job = next(n for n, s in states(cloud).items() if s == "running")

    cancel = _measure(cloud, lambda: cloud.api("DELETE", f"/jobs/{running_job}"))
    stopped = _measure(cloud, lambda: cloud.advance(60))  # its pass starts the next job
    completions = _measure(cloud, lambda: cloud.advance(600))  # two events, two passes

    for usage in (cancel, stopped, completions):
        assert "scan" not in usage.calls
    assert cancel.items_read < 16, cancel
    assert stopped.items_read < 16, stopped
    assert completions.items_read < 32, completions
    assert len(cloud.jobs()) == DEPTH - 3  # one cancelled, two completed


def test_an_idle_instance_type_does_not_make_the_pass_read_another_types_queue(make_cloud):
    cloud = make_cloud({P5: 1, G5: 1})
    submit(cloud, "p5-running", 1)
    load(cloud, DEPTH - 1, prefix="p5")
    usage = _measure(cloud, cloud.sweep)
    # The sweep also counts the queue, once, and says why the first HORIZON jobs wait.
    waiting_reads = usage.items_read - DEPTH - HORIZON
    assert waiting_reads < 20, usage


def test_with_shares_a_pass_reads_only_as_far_as_some_share_could_start_a_job(make_cloud):
    shares = (
        Share("busy", {G5: 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
        Share("quiet", {G5: 1}, Strategy.LEND),
        Share("kept", {G5: 1}, Strategy.RESERVE),
    )
    cloud = make_cloud({}, shares=shares)
    for i in range(2):  # they run, one on quiet's lent instance
        status, _ = cloud.api(
            "POST", "/add-job", training_request(f"busy-{i:03d}", 1, instance_type=G5, share="busy")
        )
        assert status == 201
    load(cloud, DEPTH - 2, prefix="busy", itype=G5, share="busy")
    # busy runs two jobs (one borrowed); "quiet" has lent its instance, "kept" idles.
    stopped = _measure(cloud, lambda: cloud.advance(600))  # both complete, two passes
    assert stopped.items_read < 40, stopped
    assert len(cloud.jobs()) == DEPTH - 2


def test_a_submission_that_waits_makes_six_dynamodb_calls(make_cloud):
    """The holders are read once, with the run-time history; the answer's place in line
    reads on from where the pass stopped reading the queue."""
    cloud = make_cloud({P5: 2})
    for i in range(2):
        submit(cloud, f"job{i:03d}", 1)  # they run
    load(cloud, 58, prefix="job")

    answers = []
    usage = _measure(cloud, lambda: answers.append(submit(cloud, "one-more", 1)))

    assert usage.calls == {
        "batch_get_item": 1,  # the holders and the run-time history
        "update_item": 1,  # its sequence number
        "transact_write_items": 1,  # the job and its place in line
        "query": 3,  # its type's partition (the pass's page, the answer's), jobs on several
    }
    (answer,) = answers
    assert answer["position"] == 59  # behind the 58 that wait, counted from 1
    assert answer["position"] == job(cloud, "one-more")["position"]
