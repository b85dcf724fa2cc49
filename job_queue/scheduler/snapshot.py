"""Plain data the scheduler decides on, and the plan it returns."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from job_queue.models import Checkpointing, Demand, JobState
from job_queue.scheduler.fair_share import FairShare, Usage

if TYPE_CHECKING:
    from job_queue.scheduler.budgets import Standing
    from job_queue.scheduler.holds import QueueHold
    from job_queue.scheduler.reservations import TrainingPlan
    from job_queue.scheduler.shares import Share
    from job_queue.scheduler.waiting_for import WaitingFor


@dataclass(frozen=True)
class Policy:
    """Scheduling settings.

    preemption: a waiting job may stop strictly lower-priority running jobs to start.
        Off, the queue is a plain capped priority queue.
    backfill: a later job may use instances that a job held back in line cannot use yet,
        if it fits now and its MaxRuntimeInSeconds ends before the held job could start
        were every running job to use its own whole MaxRuntimeInSeconds.
    start_allowance_s: time allowed for provisioning on top of MaxRuntimeInSeconds when
        backfill bounds a job's end.
    backfill_window: how many jobs behind reservations one pass examines for backfill, so
        that a pass reads a bounded part of a deep queue.
    affinity_window: how many later jobs of its priority (and type and share) a job that
        lets warm matches go first examines in one pass for one that matches an idle pool:
        a match further back gets the pool only in a later pass, once it is nearer.
    min_run_s: a job that has run (since its attempt started) for less than this may not be
        preempted, so that a job is not stopped again and again before it gets anywhere.
        A waiting job that needs it waits; the next pass after the protection ends (the
        scheduled sweep, at most a minute later) may preempt it.
    fair_share: within a priority (and share), the next job is taken from the submitter who
        has used the instances least lately (:mod:`~job_queue.scheduler.fair_share`); None:
        first come, first served.
    warm_affinity_s: a job of the highest waiting priority of its type (and share) that
        matches an idle warm pool (its share's) may start on it ahead of earlier jobs of that
        priority (and share) that have waited less than this since their submission (0:
        strict order; math.inf: no bound).
    """

    preemption: bool = True
    backfill: bool = True
    start_allowance_s: float = 600.0
    backfill_window: int = 50
    affinity_window: int = 1000
    min_run_s: float = 0.0
    warm_affinity_s: float = 0.0
    least_lost_work: bool = True
    fair_share: FairShare | None = None

    def bound(self, max_runtime: float | None) -> float:
        """How long an attempt holds its instances at the most: provisioning allowance plus
        its MaxRuntimeInSeconds (infinite without one)."""
        return math.inf if max_runtime is None else self.start_allowance_s + max_runtime


@dataclass(frozen=True)
class WaitingJob:
    """A job in the queue, as the scheduler sees it."""

    name: str
    priority: int
    seq: int
    demand: Demand
    not_before: float = 0.0  # a refused start is retried no earlier than this
    submitted_at: float = 0.0
    state: JobState = JobState.PENDING  # or PREEMPTED: waiting to resume
    max_runtime: float | None = None  # StoppingCondition.MaxRuntimeInSeconds
    share: str | None = None  # its quota share, when the queue has shares
    warm_key: str | None = None  # its warm-pool configuration (None: matches no pool)
    last_error: str | None = None  # why its last start was refused (shown while it backs off)
    helpers: Demand = field(default_factory=dict)  # uncapped instances (never counted)
    checkpoint: Checkpointing | None = None  # how it saves its progress (None: not declared)
    checkpoint_uri: str | None = None  # where, when it saves at an interval (CheckpointConfig)
    submitter: str | None = None  # whom its use is charged to, for fair share
    in_line: bool = False  # the table keeps it in its submitter's line (the pass ignores it)

    @property
    def waits_on_parents(self) -> bool:
        """Never, for a job a pass is offered: a job out of line for its dependency is not."""
        return False


@dataclass(frozen=True)
class ActiveJob:
    """A job that holds instances: starting, running, or stopping."""

    name: str
    priority: int
    seq: int
    demand: Demand
    state: JobState
    started_at: float
    max_runtime: float | None = None  # StoppingCondition.MaxRuntimeInSeconds
    share: str | None = None  # its quota share, when the queue has shares
    helpers: Demand = field(default_factory=dict)  # uncapped instances (never counted)
    plan: str | None = None  # the training plan (ARN) it runs on; None: on-demand
    checkpoint: Checkpointing | None = None  # how it saves its progress (None: not declared)
    checkpoint_uri: str | None = None  # where, when it saves at an interval (CheckpointConfig)
    submitter: str | None = None  # whom its use is charged to, for fair share


@dataclass(frozen=True)
class OutsideJob:
    """A SageMaker training job on the queue's capped types that the queue did not start (a
    script, the console): its instances are held until it ends, and it is never preempted."""

    name: str  # the SageMaker job's name
    demand: Demand  # its instances of the capped types
    since: float


@dataclass(frozen=True)
class WarmPool:
    """Instances SageMaker keeps after a job's attempt ended (a managed warm pool): held,
    idle, until a job of the same configuration starts on them, the queue releases them, or
    they expire.

    ``name`` is the SageMaker job that left it; ``key`` its warm-pool configuration (None:
    nothing matches it). A job matches a pool of the same key and the same demand.
    """

    name: str
    job: str  # the queued job whose attempt left it
    demand: Demand
    key: str | None
    since: float  # when it became available
    expires_at: float
    share: str | None = None  # the share of the job that left it
    claimed_by: str | None = None  # a SageMaker job being started on it (not idle, then)
    claimed_at: float | None = None
    submitter: str | None = None  # of the job that left it: its idle time is charged to them

    def expired(self, now: float) -> bool:
        """Past its keep-alive: SageMaker has ended it, whether or not the queue noticed."""
        return self.expires_at <= now

    def matches(self, job: WaitingJob) -> bool:
        return (
            job.warm_key is not None
            and job.warm_key == self.key
            and dict(job.demand) == dict(self.demand)
        )


@dataclass(frozen=True)
class Release:
    """End ``pool`` at once (UpdateTrainingJob, keep-alive 0) so that ``for_job`` can have
    its instances."""

    pool: WarmPool
    for_job: str
    reason: str


@dataclass(frozen=True)
class Preemption:
    """Stop ``victim`` so that ``preemptor`` can start."""

    victim: ActiveJob
    preemptor: str
    reason: str
    lost_work_s: float | None = None  # the progress its stop throws away (estimated)

    @classmethod
    def by_priority(
        cls, victim: ActiveJob, preemptor: WaitingJob, lost_work_s: float | None = None
    ) -> Preemption:
        """``victim`` stopped for a strictly higher-priority ``preemptor``."""
        reason = (
            f"preempted by {preemptor.name} (priority {preemptor.priority} > {victim.priority})"
        )
        return cls(victim, preemptor.name, reason, lost_work_s)


@dataclass(frozen=True)
class Plan:
    """What one scheduling pass decided: idle warm pools to release, running jobs to
    preempt, and jobs to start now (``warm``: those that start on a pool, and ``plans``:
    those that start on a training plan's reserved instances, by job name); and why each
    waiting job it was offered does not start (``waiting``, by job name)."""

    starts: tuple[WaitingJob, ...] = ()
    preemptions: tuple[Preemption, ...] = ()
    releases: tuple[Release, ...] = ()
    warm: Mapping[str, WarmPool] = field(default_factory=dict)
    plans: Mapping[str, str] = field(default_factory=dict)  # job name -> training plan ARN
    waiting: Mapping[str, WaitingFor] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.starts and not self.preemptions and not self.releases


@dataclass(frozen=True)
class Snapshot:
    """What a pass sees, read once per invocation: the time, the layout (capacity, quota
    shares, training plans), and what holds instances (active jobs, idle warm pools, jobs
    started outside the queue). The waiting jobs are not part of it: a pass reads the queue
    lazily, only as far as it needs.

    Example::

        seen = Snapshot(now, {"ml.p5.48xlarge": 2}, active=running_jobs)
        decided = plan(seen, waiting_in_queue_order)
        seen = after(seen, decided)
    """

    now: float
    capacity: Mapping[str, int]
    active: tuple[ActiveJob, ...] = ()
    pools: tuple[WarmPool, ...] = ()  # idle ones
    outside: tuple[OutsideJob, ...] = ()
    plans: tuple[TrainingPlan, ...] = ()
    shares: tuple[Share, ...] = ()
    usage: Usage = field(default_factory=Usage)  # fair share: usage of the work that ended
    holds: tuple[QueueHold, ...] = ()  # an admin holds or drains the queue, or shares of it
    budgets: tuple[Standing, ...] = ()  # where each budgeted share and submitter stands

    def __post_init__(self) -> None:
        for name in ("active", "pools", "outside", "plans", "shares", "holds", "budgets"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def at(self, now: float) -> Snapshot:
        """The same holders, seen at ``now``."""
        return replace(self, now=now)


def running(job: WaitingJob, since: float, plan: str | None = None) -> ActiveJob:
    """``job`` once its attempt started at ``since`` (on training plan ``plan``, if any)."""
    return ActiveJob(
        job.name,
        job.priority,
        job.seq,
        job.demand,
        JobState.RUNNING,
        since,
        job.max_runtime,
        job.share,
        job.helpers,
        plan,
        job.checkpoint,
        job.checkpoint_uri,
        job.submitter,
    )


def after(seen: Snapshot, decided: Plan) -> Snapshot:
    """``seen`` once ``decided`` is carried out, at the same instant: the pools it released
    or started jobs on are gone, its victims are stopping, and the jobs it started are
    running (on the training plan it chose). The replay of expected starts, the simulator and
    a submission's answer all move on from a pass with this."""
    gone = {r.pool.name for r in decided.releases} | {p.name for p in decided.warm.values()}
    stopping = {p.victim.name for p in decided.preemptions}
    active: list[ActiveJob] = [
        replace(job, state=JobState.PREEMPTING) if job.name in stopping else job
        for job in seen.active
    ]
    active += [running(job, seen.now, decided.plans.get(job.name)) for job in decided.starts]
    return replace(
        seen,
        active=tuple(active),
        pools=tuple(pool for pool in seen.pools if pool.name not in gone),
    )


def started_names(decided: Plan) -> frozenset[str]:
    """The jobs ``decided`` starts (they no longer wait)."""
    return frozenset(job.name for job in decided.starts)
