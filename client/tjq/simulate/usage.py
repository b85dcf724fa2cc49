"""`smq simulate`'s usage and cost: the replay's attempts and warm pools as usage-ledger
records, reported by the queue's own :func:`job_queue.usage_report.usage_report`, so that a
what-if and ``GET /usage`` count and price alike.

The phases follow the queue's ledger: an attempt runs from its start (SageMaker's start-up
included, as the queue counts from when SageMaker accepted the job) until a stop, and stops
for the stop latency; a pool is idle from the attempt's end until it is reused, released or
expires. The replay's clock starts at 0: its days are days since the workload began.
"""

from __future__ import annotations

from job_queue.costs import Prices
from job_queue.ledger import Phase, Span, UsageRecord
from job_queue.models import Outcome
from job_queue.usage_report import Window, usage_report
from tjq.simulate.records import AttemptRecord, SimResult
from tjq.simulate.workload import WorkloadJob

_STOPPED = (Outcome.PREEMPTED, Outcome.STOPPED)


def sim_usage(result: SimResult, prices: Prices, by: str) -> dict:
    """The usage report of the whole replay, one row per ``by`` (submitter, share, type
    or job)."""
    records = ledger(result)
    until = max((r.ended_at for r in records), default=0.0)
    return usage_report(records, Window(0.0, until + 1.0, by), prices, result.settings.plans)


def ledger(result: SimResult) -> list[UsageRecord]:
    """What each attempt and each warm pool of the replay held, as the queue records it."""
    specs = {job.spec.name: job.spec for job in result.jobs}
    stop_s, shares = result.settings.stop_latency, bool(result.settings.shares)
    records = [
        _attempt(job.spec, attempt, stop_s, shares)
        for job in result.jobs
        for attempt in job.attempts
        if attempt.end is not None
    ]
    for pool in result.pools:
        if pool.until is not None and pool.until > pool.since:
            spec = specs[pool.job]
            records.append(
                UsageRecord(
                    name=f"{pool.job}#pool@{pool.since:g}",
                    job=pool.job,
                    demand=dict(spec.demand),
                    spans=(Span(Phase.POOL_IDLE, pool.since, pool.until),),
                    submitter=spec.submitter,
                    share=spec.share if result.settings.shares else None,
                    pool=True,
                    billed_s=pool.until - pool.since,  # as SageMaker bills an idle pool
                )
            )
    return records


def _attempt(spec: WorkloadJob, attempt: AttemptRecord, stop_s: float, shares: bool):
    stop_from = attempt.end
    if attempt.outcome in _STOPPED:
        stop_from = max(attempt.start, attempt.end - stop_s)
    spans = [Span(Phase.RUNNING, attempt.start, stop_from)]
    spans.append(Span(Phase.STOPPING, stop_from, attempt.end))
    return UsageRecord(
        name=f"{spec.name}#{attempt.number}",
        job=spec.name,
        demand=dict(spec.demand),
        spans=tuple(s for s in spans if s.end > s.start),
        submitter=spec.submitter,
        share=spec.share if shares else None,
        plan=attempt.plan,
        outcome=attempt.outcome.value if attempt.outcome else None,
        lost_s=attempt.work_lost if attempt.outcome is Outcome.PREEMPTED else 0.0,
        warm_start=attempt.warm,
    )
