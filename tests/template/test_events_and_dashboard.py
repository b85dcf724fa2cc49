"""The template's queue events (the rule to the events log group, the optional notification
topic) and its dashboard: what no linter checks."""

import json
import pathlib
import re

import pytest
from cfnlint.decode import decode_str

from job_queue import queue_events

ROOT = pathlib.Path(__file__).resolve().parents[2]
STACK = {"Ref": "AWS::StackName"}


def load_template() -> dict:
    parsed, errors = decode_str((ROOT / "template.yaml").read_text())
    assert not errors, errors
    return json.loads(json.dumps(parsed))


@pytest.fixture(scope="module")
def template() -> dict:
    return load_template()


def _resource(template, name) -> dict:
    return template["Resources"][name]


def test_every_queue_event_goes_to_the_log_group_smq_events_reads(template):
    rule = _resource(template, "QueueEventsRule")["Properties"]
    assert rule["EventPattern"] == queue_events.pattern(STACK)
    assert rule["Targets"] == [
        {"Id": "events-log", "Arn": {"Fn::GetAtt": ["QueueEventsLogs", "Arn"]}}
    ]
    group = _resource(template, "QueueEventsLogs")["Properties"]["LogGroupName"]["Fn::Sub"]
    assert group == queue_events.log_group("${AWS::StackName}")
    policy = json.loads(
        _resource(template, "QueueEventsLogsPolicy")["Properties"]["PolicyDocument"]["Fn::Sub"]
    )
    (statement,) = policy["Statement"]
    assert "events.amazonaws.com" in statement["Principal"]["Service"]
    assert statement["Resource"] == "${QueueEventsLogs.Arn}"


def test_the_lambda_may_put_events_on_the_default_bus_only(template):
    statements = _resource(template, "QueueFunction")["Properties"]["Policies"][0]["Statement"]
    (publish,) = [s for s in statements if isinstance(s, dict) and "events:PutEvents" in str(s)]
    assert publish["Action"] == "events:PutEvents"
    assert publish["Resource"]["Fn::Sub"].endswith(":event-bus/default")


def test_queue_users_may_read_the_events_log(template):
    statements = _resource(template, "QueueUserPolicy")["Properties"]["PolicyDocument"]["Statement"]
    (read,) = [s for s in statements if s.get("Sid") == "ReadTheQueuesEvents"]
    assert read["Action"] == "logs:FilterLogEvents"
    assert read["Resource"] == {"Fn::GetAtt": ["QueueEventsLogs", "Arn"]}


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("", True),
        ("arn:aws:sns:us-east-1:123456789012:queue-news", True),
        ("arn:aws-us-gov:sns:us-gov-west-1:123456789012:queue-news.fifo", True),
        ("arn:aws:sqs:us-east-1:123456789012:queue-news", False),
        ("queue-news", False),
        ("arn:aws:sns:us-east-1:1234:queue-news", False),
    ],
)
def test_notification_topic_must_be_an_sns_topic_arn(template, value, accepted):
    parameter = template["Parameters"]["NotificationTopicArn"]
    assert bool(re.fullmatch(parameter["AllowedPattern"], value)) is accepted


def test_notifications_are_sent_only_with_a_topic_and_only_for_this_queue(template):
    rule = _resource(template, "NotificationRule")
    assert rule["Condition"] == "HasNotificationTopic"
    pattern = rule["Properties"]["EventPattern"]
    # State changes only: a released pool is in the events log, not in the notifications.
    assert pattern["source"] == queue_events.pattern(STACK)["source"]
    assert pattern["detail-type"] == [queue_events.DETAIL_TYPE]
    assert pattern["detail"]["queue"] == [STACK]
    assert set(pattern["detail"]["to"]) == {
        "running",
        "preempting",
        "completed",
        "failed",
        "cancelled",
        "stopped",
    }
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Ref": "NotificationTopicArn"}
    # Every path the message uses is a field of the event's detail (as the sample has it).
    sample = json.loads((ROOT / "events" / "queue-job-preempted.json").read_text())
    fields = set(sample["detail"])
    paths = target["InputTransformer"]["InputPathsMap"].values()
    assert {p.removeprefix("$.detail.") for p in paths} <= fields


def dashboard(template) -> dict:
    """The dashboard's JSON, with the template's substitutions made."""
    body = _resource(template, "QueueDashboard")["Properties"]["DashboardBody"]["Fn::Sub"]
    values = {"AWS::Region": "us-east-1", "AWS::StackName": "my-queue"}
    return json.loads(re.sub(r"\$\{([^}]+)\}", lambda m: values.get(m[1], f"<{m[1]}>"), body))


def dashboard_metrics(template) -> set[str]:
    """The metric names (or, for SEARCH, name prefixes) the dashboard graphs."""
    names = set()
    for widget in dashboard(template)["widgets"]:
        for row in widget["properties"].get("metrics", []):
            if isinstance(row[0], dict):
                names.update(re.findall(r"MetricName=(\w+)", row[0]["expression"]))
            elif row[0] in ("TrainingJobQueue", "."):
                names.add(row[1])
    return names


def test_dashboard_graphs_the_queues_metrics_and_shows_its_alarms(template):
    board = dashboard(template)
    assert set(dashboard_metrics(template)) >= {
        "InstancesInUse",
        "Capacity",
        "QueueDepth",
        "WaitSecondsAtStart",
        "Preemptions",
        "LostInstanceSeconds",
        "RefusedStarts",
        "WarmPoolInstances",
        "ShareInUse",
        "WaitingJobs",
        "BillableInstanceSeconds",
    }
    searches = [
        row[0]["expression"]
        for w in board["widgets"]
        for row in w["properties"].get("metrics", [])
        if isinstance(row[0], dict)
    ]
    assert all('service="my-queue"' in s for s in searches)
    (alarms,) = [w for w in board["widgets"] if w["type"] == "alarm"]
    alarm_names = {
        name for name, r in template["Resources"].items() if r["Type"] == "AWS::CloudWatch::Alarm"
    }
    assert set(alarms["properties"]["alarms"]) == {f"<{name}.Arn>" for name in alarm_names}
