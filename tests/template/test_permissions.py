"""The Lambda's role allows every DynamoDB call the queue makes (moto checks no IAM: a call
the template does not allow would fail only once deployed)."""

import re

from tests.conftest import P5
from tests.integration.helpers import submit
from tests.template.test_events_and_dashboard import load_template

# TransactWriteItems has no action of its own: IAM checks each of its items' actions.
TRANSACTION_ITEM_ACTIONS = {"PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"}


def _table_actions() -> set[str]:
    function = load_template()["Resources"]["QueueFunction"]["Properties"]
    for policy in function["Policies"]:
        for statement in policy.get("Statement", []):
            if statement.get("Sid") == "QueueTable":
                return {action.removeprefix("dynamodb:") for action in statement["Action"]}
    raise AssertionError("no QueueTable statement in the QueueFunction's policies")


def _action(operation: str) -> str:
    """A boto3 operation's IAM action: get_item -> GetItem."""
    return re.sub(r"(?:^|_)([a-z])", lambda m: m.group(1).upper(), operation)


def test_every_dynamodb_call_of_a_busy_queue_is_allowed_by_the_template(make_cloud):
    cloud = make_cloud({P5: 2})
    for i in range(12):
        submit(cloud, f"job{i:02d}", i % 3, run_seconds=300)
    cloud.api("PUT", "/jobs/job11/priority", {"priority": 9})
    cloud.api("DELETE", "/jobs/job10")
    cloud.api("GET", "/jobs")
    cloud.api("GET", "/jobs/job05")
    cloud.advance(900)
    cloud.sweep()

    used = {_action(op) for op in cloud.dynamodb_usage.calls}
    allowed = _table_actions()

    assert "TransactWriteItems" in used and allowed >= TRANSACTION_ITEM_ACTIONS
    assert used - {"TransactWriteItems"} <= allowed, used - allowed
