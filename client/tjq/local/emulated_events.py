"""The queue's events on one machine: as the template does, a rule on the default bus sends
this queue's events to a CloudWatch Logs group (both emulated by moto), which `smq events`
reads."""

from __future__ import annotations

import contextlib
import json

from job_queue import queue_events


def log_queue_events(events, logs, queue_name: str, region: str, account: str) -> None:
    """Create the log group and the rule (again after a restart: both calls are idempotent
    here, as in the template)."""
    group = queue_events.log_group(queue_name)
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_group(logGroupName=group)
    rule = f"{queue_name}-queue-events"
    events.put_rule(
        Name=rule, EventPattern=json.dumps(queue_events.pattern(queue_name)), State="ENABLED"
    )
    target = f"arn:aws:logs:{region}:{account}:log-group:{group}"
    events.put_targets(Rule=rule, Targets=[{"Id": "events-log", "Arn": target}])
