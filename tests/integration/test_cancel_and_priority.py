"""DELETE /jobs/{name} and PUT /jobs/{name}/priority, in every state a job can be in."""

import pytest
from tjq.local.calls import DEFAULT_CALLER

from job_queue.access import Caller
from job_queue.service import QueueService
from tests.integration.helpers import job, states, submit


def _cancel(cloud, name):
    return cloud.api("DELETE", f"/jobs/{name}")


def _prioritise(cloud, name, priority):
    return cloud.api("PUT", f"/jobs/{name}/priority", {"priority": priority})


# -- cancel --------------------------------------------------------------------------------


def test_cancel_pending_job_leaves_the_queue(cloud):
    for name in ("a", "b", "c", "d"):
        submit(cloud, name, 1)
    status, body = _cancel(cloud, "c")
    assert status == 200 and body["job"]["state"] == "cancelled"
    assert [(r["name"], r["position"]) for r in cloud.jobs() if r["position"]] == [("d", 1)]
    cloud.advance(600)
    assert job(cloud, "c")["state"] == "cancelled"
    assert "c" not in cloud.sagemaker.jobs


def test_cancel_running_job_stops_it_and_the_next_job_starts(cloud):
    for name in ("a", "b", "c"):
        submit(cloud, name, 1)
    status, body = _cancel(cloud, "a")
    assert status == 200 and body["job"]["state"] == "cancelling"
    assert cloud.sagemaker.jobs["a"].status == "Stopping"
    cloud.advance(60)
    cancelled = job(cloud, "a")
    assert cancelled["state"] == "cancelled"
    assert cancelled["attempts"][-1]["outcome"] == "cancelled"
    assert states(cloud) == {"b": "running", "c": "running"}


def test_cancel_preempted_job_waiting_to_resume(cloud):
    submit(cloud, "low", 1)
    submit(cloud, "mid", 2)
    submit(cloud, "high", 3)
    cloud.advance(60)
    assert states(cloud)["low"] == "preempted"
    assert _cancel(cloud, "low")[1]["job"]["state"] == "cancelled"
    cloud.advance(600)
    assert job(cloud, "low")["state"] == "cancelled"


def test_cancel_job_being_preempted_ends_cancelled_not_requeued(cloud):
    submit(cloud, "low", 1)
    submit(cloud, "mid", 2)
    submit(cloud, "high", 3)
    assert states(cloud)["low"] == "preempting"
    assert _cancel(cloud, "low")[1]["job"]["state"] == "cancelling"
    cloud.advance(60)
    assert job(cloud, "low")["state"] == "cancelled"
    assert states(cloud) == {"mid": "running", "high": "running"}


def test_cancel_starting_job_whose_create_is_in_doubt(cloud):
    cloud.sagemaker.lose_next_create_responses(1)
    assert submit(cloud, "a", 1)["job"]["state"] == "starting"
    assert _cancel(cloud, "a")[1]["job"]["state"] == "cancelling"
    cloud.advance(61)
    cloud.sweep()  # finds the job InProgress and stops it
    cloud.advance(60)
    assert job(cloud, "a")["state"] == "cancelled"
    assert cloud.sagemaker.jobs["a"].status == "Stopped"


def test_cancel_starting_job_that_sagemaker_never_created(cloud):
    cloud.sagemaker.refuse_next_creates(1, "InternalFailure")
    submit(cloud, "a", 1)
    assert _cancel(cloud, "a")[1]["job"]["state"] == "cancelling"
    cloud.advance(61)
    cloud.sweep()
    assert job(cloud, "a")["state"] == "cancelled"
    assert cloud.jobs() == []


def test_cancel_while_its_create_is_under_way_stops_it_once_sagemaker_has_it(cloud):
    """A cancel from another invocation lands between the claim and CreateTrainingJob's
    answer: the starter's write loses that race, reads the job again, and stops it."""
    other = QueueService(cloud.deps.store, cloud.deps.sagemaker, cloud.settings, cloud.clock)
    owner = Caller(DEFAULT_CALLER, DEFAULT_CALLER)

    def cancel_meanwhile(created):
        cloud.sagemaker.on_create = None
        assert other.cancel("a", owner).state.value == "cancelling"

    cloud.sagemaker.on_create = cancel_meanwhile
    assert submit(cloud, "a", 1)["job"]["state"] == "cancelling"
    assert cloud.sagemaker.jobs["a"].status in ("Stopping", "Stopped")
    cloud.advance(120)
    assert job(cloud, "a")["state"] == "cancelled"
    assert cloud.sagemaker.jobs["a"].status == "Stopped"


def test_cancel_twice_is_harmless(cloud):
    submit(cloud, "a", 1)
    _cancel(cloud, "a")
    status, body = _cancel(cloud, "a")
    assert status == 200 and body["job"]["state"] == "cancelling"


def test_cancel_finished_job_conflicts(cloud):
    submit(cloud, "a", 1)
    cloud.advance(600)
    status, body = _cancel(cloud, "a")
    assert status == 409 and "completed" in body["message"]


# -- priority ------------------------------------------------------------------------------


def test_raising_a_pending_jobs_priority_moves_it_up_and_preempts_at_once(cloud):
    for name in ("a", "b", "c", "d"):
        submit(cloud, name, 1)
    status, body = _prioritise(cloud, "d", 5)
    assert status == 200 and body["job"]["priority"] == 5
    assert states(cloud)["b"] == "preempting"  # the most recently started of a and b
    assert [r["name"] for r in cloud.jobs() if r["position"]] == ["d", "c"]
    cloud.advance(60)
    assert states(cloud)["d"] == "running"


def test_priority_within_a_level_keeps_submission_order(cloud):
    for name in ("a", "b", "first", "second"):
        submit(cloud, name, 1)
    _prioritise(cloud, "second", 0)
    _prioritise(cloud, "second", 1)  # back to 1: it regains its original place
    assert [r["name"] for r in cloud.jobs() if r["position"]] == ["first", "second"]


def test_lowering_a_running_jobs_priority_lets_a_waiting_job_preempt_it(cloud):
    submit(cloud, "a", 5)
    submit(cloud, "b", 5)
    submit(cloud, "waiting", 3)
    _prioritise(cloud, "b", 1)
    assert states(cloud)["b"] == "preempting"
    cloud.advance(60)
    assert states(cloud) == {"a": "running", "waiting": "running", "b": "preempted"}


def test_priority_of_a_preempted_job_orders_it_in_the_queue(cloud):
    submit(cloud, "low", 1)
    submit(cloud, "mid", 2)
    submit(cloud, "high", 3)
    submit(cloud, "queued", 1)
    cloud.advance(60)
    assert [r["name"] for r in cloud.jobs() if r["position"]] == ["low", "queued"]
    _prioritise(cloud, "low", 0)
    assert [r["name"] for r in cloud.jobs() if r["position"]] == ["queued", "low"]


def test_priority_of_a_starting_or_preempting_job_can_change(cloud):
    cloud.sagemaker.lose_next_create_responses(1)
    submit(cloud, "starting", 1)
    assert _prioritise(cloud, "starting", 4)[1]["job"]["priority"] == 4
    submit(cloud, "low", 1)
    submit(cloud, "urgent", 9)
    assert states(cloud)["low"] == "preempting"
    assert _prioritise(cloud, "low", 2)[0] == 200
    cloud.advance(60)
    assert job(cloud, "low")["priority"] == 2 and job(cloud, "low")["state"] == "preempted"


def test_priority_of_a_finished_or_cancelling_job_conflicts(cloud):
    submit(cloud, "done", 1)
    cloud.advance(600)
    assert _prioritise(cloud, "done", 3)[0] == 409
    submit(cloud, "going", 1)
    _cancel(cloud, "going")
    status, body = _prioritise(cloud, "going", 3)
    assert status == 409 and "cancelling" in body["message"]


@pytest.mark.parametrize(
    "body",
    [{"priority": "high"}, {"priority": 1.5}, {"priority": None}, {}, {"priority": 10**6}],
    ids=["a word", "a fraction", "null", "missing", "out of range"],
)
def test_bad_priority_is_refused_and_changes_nothing(cloud, body):
    submit(cloud, "a", 1)
    status, answer = cloud.api("PUT", "/jobs/a/priority", body)
    assert status == 400 and "priority" in answer["message"]
    assert job(cloud, "a")["priority"] == 1
