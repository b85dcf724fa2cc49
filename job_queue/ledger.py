"""The usage ledger: what each attempt and each warm pool held, and for how long, pure.

A record is written in the same transaction as the state change that ends what it
describes (:mod:`job_queue.store.ledger_writes`), so nothing is scanned, nothing is counted
twice, and a crash loses none. An attempt's instances are held in phases:

* provisioning — from the claim until SageMaker accepted the job (CreateTrainingJob
  returned, or the sweep found it): the queue holds the capacity, SageMaker bills nothing;
* running — until a stop was asked for (or the end);
* stopping — from the stop (a preemption, a cancel, a limit) until SageMaker said it ended.

A warm pool is idle from the end of the attempt that left it until a job starts on it (the
claim), the queue releases it, or its keep-alive runs out; it is kept for the job that left
it, and charged to that job's submitter and share. A preempted attempt also records the work
it threw away (its audit's estimate). The same functions describe what holds instances now
(``end`` = now, no outcome), so that a report counts work in progress too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from job_queue.models import Action, Job, Outcome
from job_queue.scheduler.budgets import add, capacity_key
from job_queue.scheduler.snapshot import WarmPool


class Phase(StrEnum):
    """How held instances were spent. The value is what reports show."""

    PROVISIONING = "provisioning"
    RUNNING = "running"
    STOPPING = "stopping"
    POOL_IDLE = "pool_idle"

    @property
    def billed(self) -> bool:
        """SageMaker bills it: a job that exists, or a warm pool it keeps."""
        return self is not Phase.PROVISIONING


@dataclass(frozen=True)
class Span:
    phase: Phase
    start: float
    end: float

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class UsageRecord:
    """What one attempt (or one warm pool) held: its instances, in spans of time."""

    name: str  # the attempt's SageMaker job; for a pool, the SageMaker job that left it
    job: str  # the queued job (a pool: the one it was kept for)
    demand: Mapping[str, int]
    spans: tuple[Span, ...]
    submitter: str | None = None
    share: str | None = None
    plan: str | None = None  # the training plan (ARN) it ran on; None: on-demand
    pool: bool = False  # a warm pool's idle time, not an attempt
    outcome: str | None = None  # how the attempt ended (None: in progress, or a pool)
    lost_s: float = 0.0  # a preemption: the work it threw away, seconds (per instance)
    warm_start: bool = False  # it started on a warm pool: a cold start avoided
    billed_s: float | None = None  # a pool: SageMaker's ResourceRetainedBillableTimeInSeconds
    queued_at: float | None = None  # an attempt: when its job joined the line it left
    priority: int | None = None  # an attempt: its job's priority while it held them

    @property
    def started_at(self) -> float:
        return min((s.start for s in self.spans), default=self.ended_at)

    @property
    def ended_at(self) -> float:
        return max((s.end for s in self.spans), default=0.0)

    @property
    def instances(self) -> int:
        return sum(self.demand.values())

    @property
    def billable_instance_s(self) -> float:
        """Its instance-seconds SageMaker bills (running, stopping, an idle pool)."""
        return sum(s.seconds for s in self.spans if s.phase.billed) * self.instances


NOT_STARTED = "not-started"  # a start SageMaker refused: the claim held capacity, nothing ran


def attempt_record(job: Job, attempts, end: float, ended: bool = True) -> UsageRecord | None:
    """The record of ``job``'s current attempt, held until ``end``: ``job`` as it was while
    it held the instances, ``attempts`` its attempts with the current one closed (or, with
    ``ended`` False, as they are: it still holds them). None if it never held any."""
    claimed = job.claimed_at
    current = attempts[-1] if attempts else None
    if current is not None and current.sagemaker_job_name != job.attempt_name:
        current = None  # it never ran: only the claim held the instances
    if claimed is None:  # claimed before the ledger existed: its provisioning is unknown
        if current is None:
            return None
        claimed = current.started_at
    running_from = min(current.started_at, end) if current else end
    stop_from = job.stopping_since if job.stopping_since is not None else end
    stop_from = max(claimed, min(stop_from, end))
    marks = [(Phase.PROVISIONING, claimed)]
    if running_from < stop_from:
        marks.append((Phase.RUNNING, max(claimed, running_from)))
    marks.append((Phase.STOPPING, stop_from))
    spans = tuple(
        Span(phase, start, until)
        for (phase, start), until in zip(marks, [m[1] for m in marks[1:]] + [end], strict=True)
        if until > start
    )
    outcome = None
    if ended:
        outcome = current.outcome.value if current and current.outcome else NOT_STARTED
    return UsageRecord(
        name=job.attempt_name or job.name,
        job=job.name,
        demand={**job.helpers, **job.demand},  # uncapped helpers are paid for too
        spans=spans,
        submitter=job.submitter,
        share=job.share,
        plan=job.training_plan,
        outcome=outcome,
        lost_s=_lost(job) if outcome == Outcome.PREEMPTED.value else 0.0,
        warm_start=bool(current and current.warm_pool),
        queued_at=queued_since(job, attempts[:-1] if current else attempts),
        priority=job.priority,
    )


def queued_since(job: Job, earlier) -> float:
    """When ``job`` last joined the line, before its attempts ``earlier`` (oldest first)
    ended: when the last of them ended (a preemption, a refused start), else when it was
    submitted or its dependency was met."""
    if earlier and earlier[-1].ended_at is not None:
        return earlier[-1].ended_at
    return max(job.submitted_at, job.dependency_met_at or 0.0)


def pool_record(pool: WarmPool, until: float, billed_s: float | None = None) -> UsageRecord:
    """The record of ``pool``'s idle time until ``until`` (no later than its expiry), kept for
    the job that left it; ``billed_s``: what SageMaker said it billed for the pool, if known."""
    end = max(pool.since, min(until, pool.expires_at))
    spans = (Span(Phase.POOL_IDLE, pool.since, end),) if end > pool.since else ()
    return UsageRecord(
        name=pool.name,
        job=pool.job,
        demand=dict(pool.demand),
        spans=spans,
        submitter=pool.submitter,
        share=pool.share,
        pool=True,
        billed_s=billed_s,
    )


def held_now(jobs: Iterable[Job], pools: Iterable[WarmPool], now: float) -> list[UsageRecord]:
    """What the jobs holding instances (as read now) and the warm pools have held so far:
    records of work in progress, for a report that ends now."""
    records = [attempt_record(job, job.attempts, now, ended=False) for job in jobs]
    records += [
        pool_record(pool, pool.claimed_at if pool.claimed_at is not None else now) for pool in pools
    ]
    return [r for r in records if r is not None]


def spending(record: UsageRecord) -> dict[int, dict[str, float]]:
    """What ``record`` held that SageMaker bills, in instance-seconds by UTC day and capacity
    key (:data:`~job_queue.scheduler.budgets.Spending`), as budgets count it."""
    spent: dict[int, dict[str, float]] = {}
    for itype, count in record.demand.items():
        for span in (s for s in record.spans if s.phase.billed):
            add(spent, capacity_key(itype, record.plan), count, span.start, span.end)
    return spent


def _lost(job: Job) -> float:
    """The work the last preemption threw away, as its audit line estimated it."""
    for entry in reversed(job.history):
        if entry.action is Action.PREEMPTED:
            return float(entry.lost_work_s or 0)
    return 0.0
