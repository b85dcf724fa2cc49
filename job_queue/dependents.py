"""Settling the jobs out of line for their dependency, the first step of every pass in a
queue that ever had one: read them and their parents' states, decide
(:func:`job_queue.scheduler.dependencies.settle`), and act — a job whose dependency holds
joins the line before the pass reads it, a job whose dependency never can ends cancelled.

Every write is conditional on the job being as read: a job that moved on meanwhile (a user
cancelled it, another pass settled it) is left to the next pass, which reads it anew.
"""

from __future__ import annotations

from collections.abc import Callable

from aws_lambda_powertools import Logger

from job_queue import tags
from job_queue.errors import InvalidRequest, StaleState
from job_queue.models import Action, AuditEntry, JobState
from job_queue.queue_events import DependencyMet, StateChange
from job_queue.report import Report
from job_queue.scheduler.dependencies import (
    Dependency,
    Dependent,
    Settled,
    settle,
    waiting_on,
)
from job_queue.scheduler.forecast import OutOfLine
from job_queue.scheduler.waiting_for import WaitingFor
from job_queue.store import DynamoJobStore, Holders, codecs

logger = Logger(child=True)


class DependentJobs:
    """Reads and settles the jobs out of line for their dependency."""

    def __init__(self, store: DynamoJobStore, report: Report, clock: Callable[[], float]):
        self._store, self._report, self._clock = store, report, clock
        self.settled = Settled()  # what the last settling decided (the sweep's metric)

    def settle(self, held: Holders) -> Settled:
        """Settle every job out of line (none unless ``held`` notes a dependent job was ever
        queued): those whose dependency holds join the line, those it never can end."""
        self.settled = Settled()
        if not self._store.has_dependents(held):
            return self.settled
        dependents = [Dependent(job.name, on) for job, on in self._store.dependents()]
        if not dependents:
            return self.settled
        out_of_line = {d.name for d in dependents}
        parents = {p for d in dependents for p in d.dependency.parents} - out_of_line
        self.settled = settle(dependents, self._store.states_of(parents) if parents else {})
        now = self._clock()
        for name, reason in self.settled.doomed.items():
            self._cancel(name, reason, now)
        for name in self.settled.ready:
            self._join(name, now)
        return self.settled

    def check_parents(self, dependency: Dependency | None) -> None:
        """A dependent job's parents must be in the queue (or have ended within the
        retention period): InvalidRequest naming the first that is not."""
        if dependency is None:
            return
        states = self._store.states_of(dependency.parents)
        missing = [name for name in dependency.parents if states[name] is None]
        if missing:
            raise InvalidRequest.must(
                f"Tags.{tags.DEPENDS_ON}",
                f"name jobs of this queue: there is no job {missing[0]} (a parent must be "
                "queued, or have ended within the retention period)",
            )

    def out_of_line(self, held: Holders) -> tuple[OutOfLine, dict[str, WaitingFor]]:
        """Every job out of line (with what it waits for, and its parents' states) and why
        each still waits: for views and expected starts (reads, writes nothing)."""
        if not self._store.has_dependents(held):
            return OutOfLine(), {}
        found = self._store.dependents()
        names = {job.name for job, _ in found}
        states = self._store.states_of({p for _, on in found for p in on.parents} - names)
        why = {job.name: waiting_on(on, states, names) for job, on in found}
        return OutOfLine(found, states), why

    def _cancel(self, name: str, reason: str, now: float) -> None:
        job = self._store.get(name)
        if job is None or not (job.state.is_waiting and job.waits_on_parents):
            return  # moved on since it was read
        audit = AuditEntry(now, Action.CANCELLED)  # by the queue
        try:
            self._store.end_waiting(job, now, audit, reason, state=JobState.CANCELLED)
        except StaleState:
            return
        self._report.changes.append(StateChange.of(job, JobState.CANCELLED, now, reason))
        logger.info(f"cancelled: {reason}", extra={"job": name})

    def _join(self, name: str, now: float) -> None:
        job = self._store.get(name)
        if job is None or not (job.state.is_waiting and job.waits_on_parents):
            return
        audit = codecs.audit_value(AuditEntry(now, Action.DEPENDENCY_MET))
        try:
            self._store.join_line(job, now, audit)
        except StaleState:
            return
        self._report.changes.append(DependencyMet(name, str(job.dependency), job.share, now))
        logger.info(f"its dependency holds ({job.dependency}): in line", extra={"job": name})
