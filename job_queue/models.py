"""The queue's domain: job states, a queued job, and the SageMaker jobs started for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from job_queue import tags, warm_pools

if TYPE_CHECKING:
    from job_queue.scheduler.dependencies import Dependency


class JobState(StrEnum):
    """Where a queued job is in its life. The value is what the API and the CLI show."""

    PENDING = "pending"  # waiting in the queue; starts when capacity allows
    STARTING = "starting"  # capacity claimed, CreateTrainingJob under way
    RUNNING = "running"  # its SageMaker job is InProgress
    PREEMPTING = "preempting"  # being stopped for a higher-priority job
    PREEMPTED = "preempted"  # stopped for a higher-priority job; waits to resume, in place
    CANCELLING = "cancelling"  # being stopped because a user cancelled it
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    STOPPED = "stopped"  # stopped outside the queue (console, CLI); not requeued

    @property
    def holds_instances(self) -> bool:
        """True while the job's instances count against the capacity."""
        return self in _HOLDING

    @property
    def is_stopping(self) -> bool:
        """True while a stop is under way: the instances are held, but about to free."""
        return self in _STOPPING

    @property
    def is_waiting(self) -> bool:
        """True while the job is in the queue, waiting for instances."""
        return self in (JobState.PENDING, JobState.PREEMPTED)

    @property
    def is_finished(self) -> bool:
        return self in _FINISHED


_HOLDING = frozenset(
    {JobState.STARTING, JobState.RUNNING, JobState.PREEMPTING, JobState.CANCELLING}
)
_STOPPING = frozenset({JobState.PREEMPTING, JobState.CANCELLING})
_FINISHED = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.STOPPED})

# How many instances of each type a job holds while it runs, e.g. {"ml.p5.48xlarge": 2}.
Demand = Mapping[str, int]

# Priorities a job may have; higher runs first.
MIN_PRIORITY, MAX_PRIORITY = -9999, 9999


class Outcome(StrEnum):
    """How one attempt (one SageMaker job) ended. The value is what the API shows."""

    COMPLETED = "completed"
    FAILED = "failed"
    PREEMPTED = "preempted"  # stopped for a higher-priority job; the job waits to resume
    CANCELLED = "cancelled"
    STOPPED = "stopped"  # stopped outside the queue
    CAPACITY_ERROR = "capacity-error"  # SageMaker could not get the instances; retried later


@dataclass(frozen=True)
class Checkpointing:
    """How a job saves its progress, as its ``checkpoint`` tag declares it: when SageMaker
    stops it (``on-stop``: a preempted attempt keeps all its progress), or every
    ``every_s`` seconds (it loses what it did since its last save)."""

    every_s: int | None = None  # None: on stop

    ON_STOP = "on-stop"

    @property
    def on_stop(self) -> bool:
        return self.every_s is None

    @classmethod
    def parse(cls, value: object) -> Checkpointing:
        """``on-stop`` or a positive whole number of seconds; ValueError otherwise."""
        text = str(value).strip().lower() if isinstance(value, str | int) else ""
        if text == cls.ON_STOP:
            return cls()
        if text.isdigit() and int(text) > 0:
            return cls(int(text))
        raise ValueError(f"must be {cls.ON_STOP!r} or a positive number of seconds, got {value!r}")

    def __str__(self) -> str:
        return self.ON_STOP if self.on_stop else str(self.every_s)


@dataclass(frozen=True)
class Attempt:
    """One SageMaker training job started for a queued job."""

    number: int
    sagemaker_job_name: str
    started_at: float
    ended_at: float | None = None
    outcome: Outcome | None = None  # None while it runs
    failure_reason: str | None = None
    preempted_by: str | None = None
    warm_pool: str | None = None  # started on the warm pool this SageMaker job left


class Action(StrEnum):
    """What someone (or the queue) did to a job, as its audit trail records it."""

    SUBMITTED = "submitted"
    PRIORITY_CHANGED = "priority-changed"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    POOL_RELEASED = "pool-released"  # its idle warm pool was ended for another job
    BLOCKED = "blocked"  # failed by the sweep: first in line past its HeadOfLineLimits
    LIMIT_REACHED = "limit-reached"  # stopped by the sweep: past its max-total-runtime
    DEPENDENCY_MET = "dependency-met"  # its parents ended as it needs: it joined the line


@dataclass(frozen=True)
class AuditEntry:
    """One line of a job's audit trail: what was done, when, and by whom (the caller's ARN;
    None when the queue did it, as for a preemption, which names the preempting job)."""

    at: float
    action: Action
    by: str | None = None
    from_priority: int | None = None
    to_priority: int | None = None
    preempted_by: str | None = None
    lost_work_s: int | None = None  # a preemption: the progress it threw away (estimated)
    released_for: str | None = None  # a released pool: the job it was ended for


@dataclass(frozen=True)
class Job:
    """A queued training job: the user's CreateTrainingJob request and its place in the queue."""

    name: str
    priority: int
    seq: int  # submission order; FIFO within a priority, kept across preemptions
    demand: Demand
    state: JobState
    submitted_at: float
    request: Mapping = field(repr=False)
    request_hash: str = ""
    attempt_name: str | None = None  # SageMaker job name of the current or next attempt
    attempts: tuple[Attempt, ...] = ()
    preempted_by: str | None = None
    not_before: float = 0.0  # after a refused start, retry no earlier than this
    start_failures: int = 0
    last_error: str | None = None
    failure_reason: str | None = None
    first_started_at: float | None = None
    ended_at: float | None = None
    share: str | None = None  # its quota share, when the queue has shares
    warm_pool: str | None = None  # its current attempt starts on this SageMaker job's pool
    training_plan: str | None = None  # its current attempt runs on this training plan (ARN)
    helpers: Demand = field(default_factory=dict)  # uncapped instances: shown, never counted
    submitted_by: str | None = None  # the caller's IAM ARN (None: queued before it was kept)
    submitter: str | None = None  # whom fair share charges (fair-share-id, or the principal)
    in_line: bool = False  # it waits in its submitter's own line (fair share was on)
    checkpoint: Checkpointing | None = None  # how it saves its progress (its checkpoint tag)
    history: tuple[AuditEntry, ...] = ()  # who did what, oldest first
    dependency: Dependency | None = None  # the queue jobs it waits for (its depends-on tag)
    dependency_met_at: float | None = None  # when they ended as it needs
    claimed_at: float | None = None  # when its current attempt claimed its instances
    stopping_since: float | None = None  # when a stop of its current attempt was asked for

    @property
    def waits_on_parents(self) -> bool:
        """Out of line until the jobs it depends on end as it needs."""
        return self.dependency is not None and self.dependency_met_at is None

    @property
    def max_runtime(self) -> float | None:
        """StoppingCondition.MaxRuntimeInSeconds: how long an attempt may run at most."""
        value = (self.request.get("StoppingCondition") or {}).get("MaxRuntimeInSeconds")
        return float(value) if isinstance(value, int | float) else None

    @property
    def max_preemptions(self) -> int | None:
        """Its ``max-preemptions`` tag: how often it may be preempted and requeued; one
        preemption more fails it (None: the queue's default)."""
        return tags.max_preemptions(self.request.get("Tags"))

    @property
    def max_total_runtime(self) -> int | None:
        """Its ``max-total-runtime`` tag: how long its attempts may run in all, seconds (None:
        no limit)."""
        return tags.max_total_runtime(self.request.get("Tags"))

    @property
    def keep_alive(self) -> int:
        """ResourceConfig.KeepAlivePeriodInSeconds: how long its instances stay in a warm pool
        after an attempt ends (0: no pool)."""
        return warm_pools.keep_alive(self.request)

    @property
    def warm_key(self) -> str | None:
        """The configuration a warm pool is matched on (None: it can use none)."""
        return warm_pools.warm_key(self.request)

    @property
    def checkpoint_uri(self) -> str | None:
        """CheckpointConfig.S3Uri: where its attempts save and find their checkpoints."""
        value = (self.request.get("CheckpointConfig") or {}).get("S3Uri")
        return value if isinstance(value, str) and value else None

    @property
    def preemptions(self) -> int:
        return sum(1 for a in self.attempts if a.outcome is Outcome.PREEMPTED)

    @property
    def current_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None
