"""Plain data the scheduler decides on, and the plan it returns."""

from __future__ import annotations

from dataclasses import dataclass

from job_queue.models import Demand, JobState


@dataclass(frozen=True)
class Policy:
    """Scheduling settings.

    preemption: a waiting job may stop strictly lower-priority running jobs to start.
    Off, the queue is a plain capped priority queue.
    """

    preemption: bool = True


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


@dataclass(frozen=True)
class ActiveJob:
    """A job that holds instances: starting, running, or stopping."""

    name: str
    priority: int
    seq: int
    demand: Demand
    state: JobState
    started_at: float

    @property
    def stopping(self) -> bool:
        return self.state.is_stopping


@dataclass(frozen=True)
class Preemption:
    """Stop ``victim`` so that ``preemptor`` can start."""

    victim: ActiveJob
    preemptor: str
    reason: str


@dataclass(frozen=True)
class Plan:
    """What one scheduling pass decided: jobs to start now and running jobs to preempt."""

    starts: tuple[WaitingJob, ...] = ()
    preemptions: tuple[Preemption, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.starts and not self.preemptions
