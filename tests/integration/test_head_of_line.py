"""HeadOfLineLimits through the real handler on the emulated SageMaker: a job first in line
that waits for one reason past its limit is cancelled (it ends failed, saying why) or only
alarmed about, and a "Training Job Queue Blocked" event goes on the bus either way."""

from tjq.local.calls import training_request
from tjq.queue_log import event_line, read_events

from job_queue.head_of_line import Act, HeadOfLineLimit
from job_queue.limits import Limits
from job_queue.scheduler import Share, Strategy
from job_queue.scheduler.waiting_for import Reason
from tests.conftest import P5
from tests.integration.helpers import job, states

HOUR = 3600.0
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"


def _blocked(cloud) -> list[dict]:
    return [e for e in read_events(cloud.logs, cloud.settings.queue_name) if e.get("blocked_for")]


def _sweeps(cloud, minutes: int) -> None:
    """The one-minute sweep, ``minutes`` times."""
    for _ in range(minutes):
        cloud.advance(60)
        cloud.sweep()


def test_a_head_job_past_its_plan_window_limit_is_cancelled_with_the_blocked_event(make_cloud):
    limits = Limits(head_of_line=(HeadOfLineLimit(Reason.PLAN_WINDOW, 600, Act.CANCEL),))
    cloud = make_cloud(
        {P5: [{"training_plan": ARN + "next-week"}]},
        training_plans=[f"next-week={P5}:1:{7 * 24 * HOUR:g}:{8 * 24 * HOUR:g}"],
        limits=limits,
    )
    request = training_request("early", max_runtime=int(HOUR))
    assert cloud.api("POST", "/add-job", request)[0] == 201
    _sweeps(cloud, 10)  # 10 minutes first in line: within the limit
    assert states(cloud) == {"early": "pending"}
    assert _blocked(cloud) == []

    _sweeps(cloud, 2)
    failed = job(cloud, "early")
    assert failed["state"] == "failed"
    assert failed["failure_reason"].startswith("waited ")
    assert (
        "first in line for plan-window (training plan next-week has no reservation open"
        in (failed["failure_reason"])
    )
    assert failed["history"][-1]["action"] == "blocked"
    (event,) = _blocked(cloud)
    assert (event["job"], event["blocked_for"], event["action"]) == (
        "early",
        "plan-window",
        "cancel",
    )
    assert event["waited_seconds"] > 600
    assert " early blocked, cancelled (failed): waited " in event_line(event)


def test_an_alarm_limit_raises_one_event_and_leaves_the_job_in_line(make_cloud):
    limits = Limits(head_of_line=(HeadOfLineLimit(Reason.SHARE_LIMIT, 300, Act.ALARM),))
    team = Share("team", {P5: 1}, Strategy.LEND)
    cloud = make_cloud({P5: 1}, shares=(team,), limits=limits, run_seconds=4 * HOUR)
    for name in ("first", "second"):
        status, body = cloud.api("POST", "/add-job", training_request(name, 1, share="team"))
        assert status == 201, body
    assert job(cloud, "second")["waiting_for"]["code"] == "share-limit"
    assert job(cloud, "second")["waiting_for"]["first_in_line"] is True

    _sweeps(cloud, 15)
    assert states(cloud) == {"first": "running", "second": "pending"}
    (event,) = _blocked(cloud)  # once for the whole stretch, not at every sweep
    assert (event["job"], event["blocked_for"], event["action"]) == (
        "second",
        "share-limit",
        "alarm",
    )
    assert event["share"] == "team"
