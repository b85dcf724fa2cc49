"""Who may do what, through the real handler with API Gateway's IAM request contexts:
owner or admin, priority ceilings, shares that belong to teams, and the audit trail."""

import pytest
from tjq.local.calls import training_request

from job_queue.scheduler import Share, Strategy
from job_queue.share_config import share_to_dict
from tests.conftest import P5
from tests.integration.helpers import job

ACCOUNT = "123456789012"
ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{ACCOUNT}:user/bob"
# Two sessions of one role (a SageMaker notebook's execution role, say).
TRAIN_MONDAY = f"arn:aws:sts::{ACCOUNT}:assumed-role/Train/monday"
TRAIN_TUESDAY = f"arn:aws:sts::{ACCOUNT}:assumed-role/Train/tuesday"
ADMIN_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueAdmin/carol"
ADMINS = (f"arn:aws:iam::{ACCOUNT}:role/QueueAdmin",)

VISION = Share(
    "vision",
    {P5: 1},
    Strategy.LEND_AND_BORROW,
    max_priority=5,
    submitters=(f"arn:aws:iam::{ACCOUNT}:role/Train", f"arn:aws:iam::{ACCOUNT}:user/a*"),
)
LANGUAGE = Share("language", {P5: 1}, Strategy.LEND)


@pytest.fixture
def queue(make_cloud):
    """A queue with one admin role and a priority ceiling of 10."""
    return make_cloud(admins=ADMINS, max_priority=10)


@pytest.fixture
def shared(make_cloud):
    return make_cloud(shares=(VISION, LANGUAGE), admins=ADMINS, max_priority=10)


def _submit(cloud, name, caller, priority=None, share=None):
    return cloud.api("POST", "/add-job", training_request(name, priority, share=share), caller)


def _refused(answer, *words):
    status, body = answer
    assert status == 403, body
    assert body["error"] == "Forbidden"
    for word in words:
        assert word in body["message"], body["message"]
    return body["message"]


# -- owner or admin -----------------------------------------------------------------------------


def test_the_submitter_may_cancel_their_job_and_another_user_may_not(queue):
    _submit(queue, "alices", ALICE)
    message = _refused(queue.api("DELETE", "/jobs/alices", caller=BOB), "submitter", ALICE, BOB)
    assert "cancel" in message
    assert job(queue, "alices")["state"] == "running"  # the refusal changed nothing
    status, body = queue.api("DELETE", "/jobs/alices", caller=ALICE)
    assert status == 200 and body["job"]["state"] == "cancelling"


def test_another_user_may_not_change_a_jobs_priority(queue):
    _submit(queue, "alices", ALICE, priority=1)
    _refused(queue.api("PUT", "/jobs/alices/priority", {"priority": 0}, BOB), "submitter")
    assert job(queue, "alices")["priority"] == 1


def test_an_admin_may_cancel_and_reprioritise_anyones_job(queue):
    _submit(queue, "alices", ALICE)
    _submit(queue, "alices-next", ALICE)
    assert queue.api("PUT", "/jobs/alices/priority", {"priority": 50}, ADMIN_SESSION)[0] == 200
    assert queue.api("DELETE", "/jobs/alices-next", caller=ADMIN_SESSION)[0] == 200
    assert job(queue, "alices")["priority"] == 50
    assert job(queue, "alices-next")["state"] == "cancelling"


def test_any_session_of_the_submitting_role_owns_the_job(queue):
    _submit(queue, "notebook-job", TRAIN_MONDAY)
    assert job(queue, "notebook-job")["submitted_by"] == TRAIN_MONDAY
    status, _ = queue.api("DELETE", "/jobs/notebook-job", caller=TRAIN_TUESDAY)
    assert status == 200


def test_an_admin_pattern_for_one_session_admits_only_that_session(make_cloud):
    cloud = make_cloud(admins=(TRAIN_MONDAY,))
    _submit(cloud, "alices", ALICE)
    _refused(cloud.api("DELETE", "/jobs/alices", caller=TRAIN_TUESDAY), "submitter")
    assert cloud.api("DELETE", "/jobs/alices", caller=TRAIN_MONDAY)[0] == 200


def test_a_request_without_an_iam_caller_is_refused(queue):
    event_identity = queue.invoke_api("GET", "/jobs", None)  # sanity: reads need no caller
    assert event_identity["statusCode"] == 200
    response = queue.invoke_api("POST", "/add-job", '{"TrainingJobName": "x"}', caller="")
    assert response["statusCode"] == 403
    assert "AWS_IAM" in response["body"]


# -- priority ceilings --------------------------------------------------------------------------


def test_a_user_may_not_submit_above_the_queues_max_priority(queue):
    message = _refused(_submit(queue, "urgent", ALICE, priority=11), "MaxPriority", "10")
    assert "11" in message
    assert queue.api("GET", "/jobs/urgent")[0] == 404  # nothing was queued
    assert _submit(queue, "ok", ALICE, priority=10)[0] == 201


def test_an_admin_may_submit_above_the_ceiling(queue):
    assert _submit(queue, "urgent", ADMIN_SESSION, priority=500)[0] == 201


def test_a_user_may_raise_their_job_up_to_the_ceiling_but_not_above(queue):
    _submit(queue, "alices", ALICE, priority=1)
    assert queue.api("PUT", "/jobs/alices/priority", {"priority": 10}, ALICE)[0] == 200
    _refused(queue.api("PUT", "/jobs/alices/priority", {"priority": 11}, ALICE), "MaxPriority")
    assert job(queue, "alices")["priority"] == 10


def test_a_user_may_lower_a_job_an_admin_raised_above_the_ceiling(queue):
    _submit(queue, "alices", ALICE, priority=1)
    queue.api("PUT", "/jobs/alices/priority", {"priority": 100}, ADMIN_SESSION)
    assert queue.api("PUT", "/jobs/alices/priority", {"priority": 50}, ALICE)[0] == 200
    assert job(queue, "alices")["priority"] == 50


def test_a_shares_max_priority_is_its_jobs_ceiling(shared):
    _refused(_submit(shared, "v", TRAIN_MONDAY, priority=6, share="vision"), "vision", "5")
    assert _submit(shared, "v", TRAIN_MONDAY, priority=5, share="vision")[0] == 201
    _refused(shared.api("PUT", "/jobs/v/priority", {"priority": 6}, TRAIN_MONDAY), "vision")
    # The other share has no ceiling of its own: the queue's applies.
    assert _submit(shared, "l", BOB, priority=10, share="language")[0] == 201


# -- shares that belong to teams ----------------------------------------------------------------


def test_only_a_shares_submitters_may_submit_to_it(shared):
    message = _refused(_submit(shared, "sneaky", BOB, share="vision"), "share vision", BOB)
    assert "submitters" in message
    assert _submit(shared, "by-role", TRAIN_TUESDAY, share="vision")[0] == 201
    assert _submit(shared, "by-user", ALICE, share="vision")[0] == 201  # matches user/a*
    assert _submit(shared, "by-admin", ADMIN_SESSION, share="vision")[0] == 201
    assert _submit(shared, "open-share", BOB, share="language")[0] == 201


def test_only_an_admin_may_replace_the_shares(shared):
    new = [share_to_dict(Share("everyone", {P5: 2}, Strategy.LEND))]
    _refused(shared.api("PUT", "/shares", new, ALICE), "admin", "replace the shares")
    assert [s["name"] for s in shared.api("GET", "/shares")[1]["shares"]] == ["vision", "language"]
    status, body = shared.api("PUT", "/shares", new, ADMIN_SESSION)
    assert status == 200, body
    assert body["changed"]["by"] == ADMIN_SESSION and body["changed"]["at"]


def test_shares_with_a_max_priority_above_the_queues_are_refused_naming_it(shared):
    too_high = {**share_to_dict(VISION), "max_priority": 11}
    status, body = shared.api("PUT", "/shares", [too_high], ADMIN_SESSION)
    assert status == 400
    assert "share vision: max_priority 11 is above the queue's MaxPriority of 10" in body["message"]


def test_shares_with_a_bad_submitter_pattern_are_refused_naming_it(shared):
    bad = {**share_to_dict(VISION), "submitters": ["alice"]}
    status, body = shared.api("PUT", "/shares", [bad], ADMIN_SESSION)
    assert status == 400 and "share vision: submitters: 'alice'" in body["message"]


# -- the audit trail ----------------------------------------------------------------------------


def test_the_trail_says_who_submitted_reprioritised_and_cancelled_a_job(queue):
    _submit(queue, "alices", ALICE, priority=1)
    queue.api("PUT", "/jobs/alices/priority", {"priority": 3}, ALICE)
    queue.api("PUT", "/jobs/alices/priority", {"priority": 40}, ADMIN_SESSION)
    queue.api("DELETE", "/jobs/alices", caller=ADMIN_SESSION)
    trail = job(queue, "alices")["history"]
    assert [(h["action"], h["by"], h.get("from"), h.get("to")) for h in trail] == [
        ("submitted", ALICE, None, None),
        ("priority-changed", ALICE, 1, 3),
        ("priority-changed", ADMIN_SESSION, 3, 40),
        ("cancelled", ADMIN_SESSION, None, None),
    ]
    assert all(h["at"].endswith("Z") for h in trail)


def test_the_trail_says_which_job_preempted_a_job(make_cloud):
    cloud = make_cloud(capacity={P5: 1}, admins=ADMINS)
    _submit(cloud, "low", ALICE, priority=0)
    _submit(cloud, "high", ADMIN_SESSION, priority=5)
    cloud.advance(120)
    preempted = [h for h in job(cloud, "low")["history"] if h["action"] == "preempted"]
    # low was preempted the moment it started: it lost nothing.
    assert preempted == [{"at": preempted[0]["at"], "action": "preempted", "by": None,
                          "preempted_by": "high", "lost_work_seconds": 0}]  # fmt: skip


def test_a_refused_request_leaves_the_trail_unchanged(queue):
    _submit(queue, "alices", ALICE)
    queue.api("DELETE", "/jobs/alices", caller=BOB)
    assert [h["action"] for h in job(queue, "alices")["history"]] == ["submitted"]
