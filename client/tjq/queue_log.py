"""The queue's events as `smq events` prints them: read from the CloudWatch Logs group the
template's rule (or the local API) writes them to, oldest first, optionally following."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

from job_queue import queue_events


def event_line(detail: dict) -> str:
    """One event in words: ``2026-12-01T12:00:00.000+00:00 job1 running -> preempting
    (attempt 1): preempted by job4 (priority 3 > 1)``."""
    if detail.get("month"):  # a month's usage report
        total = detail["total"]
        return (
            f"{detail['at']} usage report {detail['month']}: "
            f"{total['billable_instance_hours']:g} billable instance-hours, "
            f"${total['cost_usd']:,.2f}, {total['jobs']} jobs, {total['preemptions']} preemptions"
        )
    if detail.get("holder"):  # a budget 80% spent, or spent
        budget = detail["budget"]
        unit = "dollars" if "dollars" in budget else "instance-hours"
        amount = budget.get("dollars", budget.get("instance_hours"))
        said = "spent" if detail["is_spent"] else f"{detail['level']:.0%} spent"
        return (
            f"{detail['at']} budget of {detail['holder']} {said}: {detail['spent']:g} of "
            f"{amount:g} {unit} in {budget['window_days']} days"
        )
    if detail.get("blocked_for"):  # first in line past its HeadOfLineLimits
        done = "cancelled (failed)" if detail["action"] == "cancel" else "alarm"
        why = detail["waiting_for"]["message"]
        waited = f"waited {detail['waited_seconds']} s for {detail['blocked_for']} ({why})"
        return f"{detail['at']} {detail['job']} blocked, {done}: {waited}"
    if detail.get("action"):  # an admin held, drained or resumed the queue or a share
        what = f"share {detail['share']}" if detail.get("share") else "the queue"
        return f"{detail['at']} {what} {detail['action']} by {detail['by']}"
    if detail.get("dependency"):  # the jobs it depends on ended as it needs
        return f"{detail['at']} {detail['job']} dependency met ({detail['dependency']}): in line"
    if detail.get("released_for"):
        return f"{detail['at']} {detail['job']} warm pool released: {detail['reason']}"
    moved = f"{detail.get('from') or 'submitted'} -> {detail['to']}"
    attempt = f" (attempt {detail['attempt']})" if detail.get("attempt") else ""
    reason = f": {detail['reason']}" if detail.get("reason") else ""
    if detail.get("waiting_for"):  # a submission that waits: why, as first decided
        why = detail["waiting_for"]
        reason = f": waits, {why['code']}: {why['message']}"
    return f"{detail['at']} {detail['job']} {moved}{attempt}{reason}"


def read_events(
    logs,
    queue_name: str,
    job: str | None = None,
    since_ms: int = 0,
    follow: bool = False,
    poll_seconds: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[dict]:
    """The queue's events (their ``detail``), oldest first; with ``follow``, then those that
    arrive, until the caller stops iterating."""
    seen: set[str] = set()
    group = queue_events.log_group(queue_name)
    while True:
        pages = logs.get_paginator("filter_log_events").paginate(
            logGroupName=group, startTime=since_ms, interleaved=True
        )
        found = []
        for page in pages:
            for record in page.get("events", []):
                if record["eventId"] in seen:
                    continue
                seen.add(record["eventId"])
                detail = json.loads(record["message"]).get("detail") or {}
                found.append(detail)
                since_ms = max(since_ms, int(record["timestamp"]))
        # In the order the queue made the changes (the log's own timestamps are the events'
        # times, to the second); one invocation's changes stay in the order it made them.
        for detail in sorted(found, key=lambda detail: detail.get("at", "")):
            if job is None or detail.get("job") == job:
                yield detail
        if not follow:
            return
        sleep(poll_seconds)
