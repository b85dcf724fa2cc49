"""GET /timeline: what held the queue's instances over a window, attempt by attempt and
pool by pool, for a picture of the queue over time (``smq ui``'s timeline), pure.

The rows are the usage ledger's records (:mod:`job_queue.ledger`) that overlap the window,
in the order they began: each attempt's phases (provisioning, running, stopping) and how
it ended, the work a preemption threw away, whether it started warm, its priority and when
its job joined the line before it (so that the queue's depth over time can be drawn); each
warm pool's idle time. Work in progress is listed as far as it went. With quota shares,
each share's limit, use, borrowing and lending at every moment its use changed, counted by
the rule ``GET /shares`` counts them with now (:meth:`ShareLedger.usage`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from job_queue.ledger import UsageRecord
from job_queue.models import JobState, Outcome
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.shares import Share, usage_with_plans
from job_queue.scheduler.snapshot import ActiveJob, WarmPool
from job_queue.scheduler.waiting_for import iso


def timeline_view(
    ended: Iterable[UsageRecord],
    in_progress: Iterable[UsageRecord],
    since: float,
    until: float,
    now: float,
    shares: Sequence[Share] = (),
    plans: Sequence[TrainingPlan] = (),
) -> dict:
    """The answer of GET /timeline over [``since``, ``until``): the records that ``ended``
    and those still ``in_progress`` that held instances in it, oldest first, and the
    ``shares``' use over the window (:func:`shares_over_time`)."""
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
        "shares": shares_over_time(shares, plans, [r for r, _ in shown], since, until),
    }


def shares_over_time(
    shares: Sequence[Share],
    plans: Sequence[TrainingPlan],
    records: Sequence[UsageRecord],
    since: float,
    until: float,
) -> list[dict]:
    """Per share, its use of all its instance types (a plan's reserved ones too) summed, at
    ``since`` and at every moment in the window that it changed: ``limit``, ``in_use``,
    ``borrowed`` (held beyond its limit) and ``lent`` (its idle instances others borrow)."""
    if not shares:
        return []
    changes = {t for r in records for t in (r.started_at, r.ended_at)}
    changes |= {t for p in plans for r in p.reservations for t in (r.start, r.usable_until)}
    moments = sorted({since} | {t for t in changes if since < t < until})
    points: dict[str, list[dict]] = {share.name: [] for share in shares}
    last: dict[str, dict] = {}
    starting = iter(sorted(records, key=lambda r: r.started_at))
    upcoming = next(starting, None)
    held: list[UsageRecord] = []
    for at in moments:  # a sweep: each record joins once and leaves once
        while upcoming is not None and upcoming.started_at <= at:
            held.append(upcoming)
            upcoming = next(starting, None)
        held = [r for r in held if at < r.ended_at]
        summed = {name: dict.fromkeys(_COUNTS, 0) for name in points}
        for use in usage_with_plans(shares, [_holder(r) for r in held], plans, at):
            for count in _COUNTS:
                summed[use.share][count] += getattr(use, count)
        for name, row in summed.items():
            if last.get(name) != row:
                points[name].append({"at": iso(at), **row})
                last[name] = row
    return [{"share": name, "points": series} for name, series in points.items()]


_COUNTS = ("limit", "in_use", "borrowed", "lent")


def _holder(record: UsageRecord) -> ActiveJob | WarmPool:
    """What a record held, as the share ledger counts holders."""
    demand = dict(record.demand)
    if record.pool:
        return WarmPool(
            record.name, record.job, demand, None, record.started_at, record.ended_at, record.share
        )
    return ActiveJob(
        record.name,
        record.priority or 0,
        0,
        demand,
        JobState.RUNNING,
        record.started_at,
        share=record.share,
        plan=record.plan,
    )


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
