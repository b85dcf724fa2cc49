"""What a replay is told and what it records: settings, attempts, warm pools, results."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from job_queue.costs import Prices
from job_queue.limits import DEFAULT_LIMITS, Limits
from job_queue.models import JobState, Outcome
from job_queue.scheduler import Policy, Share
from job_queue.scheduler.budgets import Budget, Holder
from job_queue.scheduler.reservations import TrainingPlan
from tjq.simulate.workload import WorkloadJob


@dataclass(frozen=True)
class SimSettings:
    """A replay's settings: the queue's (capacity, policy, shares, default keep-alive) and
    SageMaker's timings (a stop; a cold start and one on a warm pool, before progress)."""

    capacity: Mapping[str, int]  # with shares: their sum (see total_capacity)
    stop_latency: float = 0.0
    start_latency: float = 0.0
    policy: Policy = field(default_factory=Policy)
    shares: tuple[Share, ...] = ()
    keep_alive_s: float = 0.0  # the KeepAliveSeconds setting: for jobs that set none
    warm_start_latency: float = 0.0
    plans: tuple[TrainingPlan, ...] = ()  # training plans of the capacity (simulated times)
    uncapped: frozenset[str] = frozenset()  # types counted against nothing: jobs start at once
    limits: Limits = DEFAULT_LIMITS  # RetryOnFailure and MaxPreemptions, as the queue's
    budgets: Mapping[Holder, Budget] = field(default_factory=dict)  # submitters' (the shares')
    prices: Prices = field(default_factory=Prices)  # what budgets in dollars are priced at


@dataclass
class AttemptRecord:
    """One SageMaker job run for a workload job: when it held its instances, how it ended."""

    job: str
    number: int
    start: float
    end: float | None = None  # when its instances were released (or kept in a pool)
    outcome: Outcome | None = None  # COMPLETED, FAILED, PREEMPTED or STOPPED (at its limit)
    work_done: float = 0.0  # seconds of progress this attempt made
    work_lost: float = 0.0  # of which thrown away by the preemption
    order: int = 0  # its end is processed, among equal times, in the order attempts started
    warm: bool = False  # started on a warm pool
    latency: float = 0.0  # provisioning before it made progress
    plan: str | None = None  # the training plan (ARN) it ran on; None: on-demand


@dataclass
class PoolRecord:
    """A warm pool an attempt left: how long it held its instances, and how it ended."""

    job: str
    instances: int
    since: float
    expires_at: float
    until: float | None = None  # when it was reused, released or expired
    ended_by: str | None = None  # "reused", "released" or "expired"


@dataclass
class JobResult:
    spec: WorkloadJob
    state: JobState = JobState.PENDING
    first_start_s: float | None = None
    end_s: float | None = None
    preemptions: int = 0
    lost_instance_s: float = 0.0
    attempts: list[AttemptRecord] = field(default_factory=list)
    refused_starts: int = 0  # starts SageMaker refused (no instances): a baseline's doing
    failure_reason: str | None = None  # why it ended failed (a limit, or its own failure)
    retried: int = 0  # failed attempts requeued by a RetryOnFailure rule


@dataclass
class Decision:
    """A scheduling decision, for comparing engines: (time, "start"|"preempt", job)."""

    time: float
    action: str
    job: str


@dataclass
class SimResult:
    settings: SimSettings
    jobs: list[JobResult]
    decisions: list[Decision]
    idle_while_waiting_instance_s: float
    queue_depth: list[tuple[float, int]]  # (time, waiting jobs) after each event
    pools: list[PoolRecord] = field(default_factory=list)
