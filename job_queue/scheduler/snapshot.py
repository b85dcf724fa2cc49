"""Plain data the scheduler decides on, and the plan it returns."""

from __future__ import annotations

from dataclasses import dataclass

from job_queue.models import Demand, JobState


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
    min_run_s: a job that has run (since its attempt started) for less than this may not be
        preempted, so that a job is not stopped again and again before it gets anywhere.
        A waiting job that needs it waits; the next pass after the protection ends (the
        scheduled sweep, at most a minute later) may preempt it.
    """

    preemption: bool = True
    backfill: bool = True
    start_allowance_s: float = 600.0
    backfill_window: int = 50
    min_run_s: float = 0.0


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


@dataclass(frozen=True)
class Preemption:
    """Stop ``victim`` so that ``preemptor`` can start."""

    victim: ActiveJob
    preemptor: str
    reason: str

    @classmethod
    def by_priority(cls, victim: ActiveJob, preemptor: WaitingJob) -> Preemption:
        """``victim`` stopped for a strictly higher-priority ``preemptor``."""
        reason = (
            f"preempted by {preemptor.name} (priority {preemptor.priority} > {victim.priority})"
        )
        return cls(victim, preemptor.name, reason)


@dataclass(frozen=True)
class Plan:
    """What one scheduling pass decided: jobs to start now and running jobs to preempt."""

    starts: tuple[WaitingJob, ...] = ()
    preemptions: tuple[Preemption, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.starts and not self.preemptions
