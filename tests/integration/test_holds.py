"""Holding and draining the queue for maintenance, through the real handler on the emulated
SageMaker: held, nothing new starts and running jobs go on; drained, running jobs are stopped
and requeued like preemptions, so that a job that saves on stop loses nothing; resumed, jobs
start again. Only admins may, and the trail says who did what, and when."""

from tjq.cli.queue_commands import _status_text
from tjq.local.calls import training_request
from tjq.queue_log import event_line, read_events

from job_queue.scheduler import Share, Strategy
from tests.conftest import P5
from tests.integration.helpers import job, running, states, submit

ACCOUNT = "123456789012"
ADMIN = f"arn:aws:sts::{ACCOUNT}:assumed-role/QueueAdmin/carol"
ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
ADMINS = (f"arn:aws:iam::{ACCOUNT}:role/QueueAdmin",)
SAVES_ON_STOP = {"Key": "checkpoint", "Value": "on-stop"}
NEVER_PREEMPTED = {"Key": "max-preemptions", "Value": "0"}


def _as_admin(cloud, action: str, share: str | None = None):
    status, body = cloud.api("POST", f"/queue/{action}", {"share": share} if share else None, ADMIN)
    assert status == 200, body
    return body


def _submit_tagged(cloud, name: str, *tags: dict, share: str | None = None) -> None:
    request = training_request(name, 1, share=share)
    request["Tags"] += list(tags)
    status, body = cloud.api("POST", "/add-job", request, ADMIN)
    assert status == 201, body


def test_a_held_queue_lets_running_jobs_finish_and_starts_nothing_until_resumed(make_cloud):
    cloud = make_cloud({P5: 2}, admins=ADMINS)
    submit(cloud, "before", 1)
    cloud.advance(60)
    held = _as_admin(cloud, "hold")
    assert [(h["share"], h["drain"], h["by"]) for h in held["holds"]] == [(None, False, ADMIN)]

    status, answer = cloud.api("POST", "/add-job", training_request("during", 1))
    assert status == 201, answer  # submissions are still accepted
    why = answer["job"]["waiting_for"]
    assert why["code"] == "held"
    assert why["message"].startswith(f"the queue is held by {ADMIN} since ")
    cloud.advance(900)  # before completes; the free instance stays free
    assert job(cloud, "before")["state"] == "completed"
    assert states(cloud) == {"during": "pending"}
    listed = cloud.api("GET", "/jobs")[1]
    assert listed["holds"][0]["by"] == ADMIN
    assert _status_text(listed, None).startswith(f"the queue is held by {ADMIN} since ")

    assert _as_admin(cloud, "resume")["holds"] == []
    assert running(cloud) == {"during"}
    trail = [(c["action"], c["share"], c["by"]) for c in listed["hold_changes"]]
    assert trail == [("hold", None, ADMIN)]
    events = read_events(cloud.logs, cloud.settings.queue_name)
    assert [event_line(e).split(" ", 1)[1] for e in events if e.get("action")] == [
        f"the queue hold by {ADMIN}",
        f"the queue resume by {ADMIN}",
    ]


def test_a_drained_queue_requeues_its_running_jobs_which_resume_losing_nothing(make_cloud):
    cloud = make_cloud({P5: 1}, admins=ADMINS)
    # max-preemptions 0: a drain is maintenance, not a preemption the cap counts.
    _submit_tagged(cloud, "resumable", SAVES_ON_STOP, NEVER_PREEMPTED)
    cloud.advance(300)
    _as_admin(cloud, "drain")
    stopped = job(cloud, "resumable")
    assert stopped["state"] == "preempting"
    entry = stopped["history"][-1]
    assert (entry["action"], entry["preempted_by"], entry["lost_work_seconds"]) == (
        "preempted",
        "queue drain",
        0,
    )
    cloud.advance(300)
    waiting = job(cloud, "resumable")
    assert waiting["state"] == "preempted"
    assert waiting["waiting_for"]["code"] == "held"
    assert "drained" in waiting["waiting_for"]["message"]

    _as_admin(cloud, "resume")
    cloud.advance(1200)
    done = job(cloud, "resumable")
    assert done["state"] == "completed"
    assert [a["outcome"] for a in done["attempts"]] == ["preempted", "completed"]


def test_draining_one_share_leaves_the_other_shares_running(make_cloud):
    shares = (Share("A", {P5: 1}, Strategy.LEND_AND_BORROW), Share("B", {P5: 1}, Strategy.LEND))
    cloud = make_cloud({P5: 2}, shares=shares, admins=ADMINS)
    _submit_tagged(cloud, "a1", share="A")
    _submit_tagged(cloud, "b1", share="B")
    cloud.advance(60)
    drained = _as_admin(cloud, "drain", "A")
    assert [(h["share"], h["drain"]) for h in drained["holds"]] == [("A", True)]
    cloud.advance(120)
    assert states(cloud) == {"a1": "preempted", "b1": "running"}
    # The instance A's job left is not lent to a new job of A: A is drained.
    _submit_tagged(cloud, "a2", share="A")
    assert job(cloud, "a2")["waiting_for"]["code"] == "held"
    listed = cloud.api("GET", "/jobs")[1]
    assert "share A is drained" in _status_text(listed, "A")
    of_b = {**listed, "jobs": [j for j in listed["jobs"] if j["share"] == "B"]}
    assert "drained" not in _status_text(of_b, "B")


def test_only_an_admin_may_hold_the_queue_and_a_refusal_changes_nothing(make_cloud):
    cloud = make_cloud({P5: 1}, admins=ADMINS)
    for action in ("hold", "drain", "resume"):
        status, body = cloud.api("POST", f"/queue/{action}", None, ALICE)
        assert status == 403, body
        assert body["message"] == (
            f"only an admin (AdminPrincipals) may {action} the queue; you are {ALICE}"
        )
    submit(cloud, "still-starts", 1)
    assert running(cloud) == {"still-starts"}
    assert cloud.api("GET", "/jobs")[1]["hold_changes"] == []


def test_holding_a_share_the_queue_does_not_have_is_refused_naming_it(make_cloud):
    cloud = make_cloud({P5: 1}, admins=ADMINS)
    status, body = cloud.api("POST", "/queue/hold", {"share": "vision"}, ADMIN)
    assert status == 400, body
    assert body["message"] == "share vision is not one of the queue's shares: it has no shares"
    status, body = cloud.api("POST", "/queue/drain", {"shares": "vision"}, ADMIN)
    assert status == 400, body
    assert "name a share" in body["message"]
    assert cloud.api("GET", "/jobs")[1]["holds"] == []
