"""GET /timeline: what held the queue's instances over a window, attempt by attempt and
pool by pool, for a picture of the queue over time (``smq ui``'s timeline), pure.

The rows are the usage ledger's records (:mod:`job_queue.ledger`) that overlap the window,
in the order they began: each attempt's phases (provisioning, running, stopping) and how
it ended, the work a preemption threw away, whether it started warm, its priority and when
its job joined the line before it (so that the queue's depth over time can be drawn); each
warm pool's idle time. Work in progress is listed as far as it went.
"""

from __future__ import annotations

from collections.abc import Iterable

from job_queue.ledger import UsageRecord
from job_queue.models import Outcome
from job_queue.scheduler.waiting_for import iso


def timeline_view(
    ended: Iterable[UsageRecord],
    in_progress: Iterable[UsageRecord],
    since: float,
    until: float,
    now: float,
) -> dict:
    """The answer of GET /timeline over [``since``, ``until``): the records that ``ended``
    and those still ``in_progress`` that held instances in it, oldest first."""
    rows = [(record, False) for record in ended] + [(record, True) for record in in_progress]
    shown = [
        (record, going)
        for record, going in rows
        if record.spans and record.started_at < until and record.ended_at >= since
    ]
    shown.sort(key=lambda pair: (pair[0].started_at, pair[0].name, pair[0].pool))
    return {
        "since": iso(since),
        "until": iso(until),
        "now": iso(now),
        "records": [timeline_row(record, going) for record, going in shown],
    }


def timeline_row(record: UsageRecord, in_progress: bool) -> dict:
    """One attempt or warm pool of GET /timeline."""
    preempted = record.outcome == Outcome.PREEMPTED.value
    return {
        "kind": "pool" if record.pool else "attempt",
        "job": record.job,
        "sagemaker_job_name": record.name,
        "instances": dict(record.demand),
        "priority": record.priority,
        "share": record.share,
        "submitter": record.submitter,
        "training_plan": record.plan,
        "in_progress": in_progress,
        "outcome": record.outcome,
        "lost_work_seconds": round(record.lost_s, 1) if preempted else None,
        "start": None if record.pool else ("warm" if record.warm_start else "cold"),
        "queued_at": iso(record.queued_at),
        "spans": [
            {"phase": span.phase.value, "start": iso(span.start), "end": iso(span.end)}
            for span in record.spans
        ],
    }
