"""The queue's own events through the real handler: one "Training Job Queue State Change" per
state change, in order, on the default bus, where the template's rule sends them to the
events log group (moto's EventBridge and CloudWatch Logs)."""

import json

from botocore.stub import Stubber
from moto.events.models import EventPattern
from tjq.local.calls import local_user
from tjq.queue_log import event_line, read_events

from job_queue import queue_events
from tests.conftest import P5
from tests.integration.helpers import job, submit


def moves(cloud, name=None) -> list[tuple]:
    events = read_events(cloud.logs, cloud.settings.queue_name, job=name)
    return [(e["job"], e["from"], e["to"]) for e in events if "to" in e]  # state changes


def test_a_preempted_and_resumed_job_reports_every_change_in_order(make_cloud):
    cloud = make_cloud({P5: 1})
    submit(cloud, "low", 0)
    cloud.advance(300)  # low trains for 5 minutes
    submit(cloud, "urgent", 5)
    cloud.advance(60)  # low has stopped; urgent runs
    cloud.advance(600)  # urgent completes; low resumes
    cloud.advance(600)
    assert moves(cloud, "low") == [
        ("low", None, "pending"),
        ("low", "pending", "starting"),
        ("low", "starting", "running"),
        ("low", "running", "preempting"),
        ("low", "preempting", "preempted"),
        ("low", "preempted", "starting"),
        ("low", "starting", "running"),
        ("low", "running", "completed"),
    ]
    details = list(read_events(cloud.logs, cloud.settings.queue_name, job="low"))
    preempting = details[3]
    # low saves no checkpoints: its 5 minutes are lost, and the event says so.
    assert preempting["reason"] == (
        "preempted by urgent (priority 5 > 0); work lost (estimated): 300 s"
    )
    assert (preempting["attempt"], details[5]["attempt"]) == (1, 2)
    assert details[5]["sagemaker_job_name"] == job(cloud, "low")["sagemaker_job_name"]
    assert {d["submitted_by"] for d in details} == {local_user("testing")}
    assert {d["queue"] for d in details} == {cloud.settings.queue_name}
    # All jobs' events interleave in the order the queue made the changes.
    assert moves(cloud)[:5] == [
        ("low", None, "pending"),
        ("low", "pending", "starting"),
        ("low", "starting", "running"),
        ("urgent", None, "pending"),
        ("low", "running", "preempting"),
    ]


def test_cancels_refused_starts_and_failures_are_reported(make_cloud):
    cloud = make_cloud({P5: 1})
    submit(cloud, "running", 1, run_seconds=3600)
    submit(cloud, "waiting", 1)
    cloud.api("DELETE", "/jobs/waiting")
    cloud.api("DELETE", "/jobs/running")
    cloud.advance(60)
    cloud.sagemaker.refuse_next_creates(1)
    submit(cloud, "refused", 1)
    assert moves(cloud, "waiting") == [
        ("waiting", None, "pending"),
        ("waiting", "pending", "cancelled"),
    ]
    queued = next(read_events(cloud.logs, cloud.settings.queue_name, job="waiting"))
    # Its submission says why it waits, as first decided; a later change of reason is no event.
    assert queued["waiting_for"]["code"] == "queue-order"
    assert queued["waiting_for"]["jobs"] == ["running"]
    assert "submitted -> pending: waits, queue-order: its instances are in use by running" in (
        event_line(queued)
    )
    started = next(read_events(cloud.logs, cloud.settings.queue_name, job="running"))
    assert started["waiting_for"] is None  # it started at once
    assert moves(cloud, "running")[-2:] == [
        ("running", "running", "cancelling"),
        ("running", "cancelling", "cancelled"),
    ]
    refused = list(read_events(cloud.logs, cloud.settings.queue_name, job="refused"))
    assert [(e["from"], e["to"]) for e in refused] == [
        (None, "pending"),
        ("pending", "starting"),
        ("starting", "pending"),
    ]
    assert refused[-1]["reason"].startswith("start refused, will retry: ResourceLimitExceeded")


def test_the_rule_picks_this_queues_events_only(cloud):
    submit(cloud, "mine", 1)
    (event,) = [
        json.loads(r["message"])
        for r in cloud.logs.filter_log_events(
            logGroupName=queue_events.log_group(cloud.settings.queue_name)
        )["events"]
        if '"to": "pending"' in r["message"]
    ]
    assert (event["source"], event["detail-type"]) == (
        "training-job-queue",
        "Training Job Queue State Change",
    )
    rule = EventPattern.load(json.dumps(queue_events.pattern(cloud.settings.queue_name)))
    other = EventPattern.load(json.dumps(queue_events.pattern("another-queue")))
    assert rule.matches_event(event)
    assert not other.matches_event(event)


def test_a_refused_event_never_undoes_the_change(cloud, caplog):
    """EventBridge refuses: the job is queued and started all the same, and it is logged."""
    with Stubber(cloud.deps.events) as stubber:
        stubber.add_client_error("put_events", "AccessDeniedException", http_status_code=400)
        submit(cloud, "unlucky", 1)
        stubber.assert_no_pending_responses()
    assert job(cloud, "unlucky")["state"] == "running"
    assert moves(cloud, "unlucky") == []  # those events are lost; the job is not
    assert any("could not publish 3 queue events" in r.getMessage() for r in caplog.records)
