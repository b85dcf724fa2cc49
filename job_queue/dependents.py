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
from job_queue.models import Action, AuditEntry, Job, JobState
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
        read = self._read(held)
        dependents = [Dependent(job.name, on) for job, on in read.jobs]
        self.settled = settle(dependents, read.states) if dependents else Settled()
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
        read = self._read(held)
        names = {job.name for job, _ in read.jobs}
        return read, {job.name: waiting_on(on, read.states, names) for job, on in read.jobs}

    def _read(self, held: Holders) -> OutOfLine:
        """The jobs out of line, and the states of their parents that are not (no reads in
        a queue that never had a dependent job)."""
        if not self._store.has_dependents(held):
            return OutOfLine()
        found = self._store.dependents()
        names = {job.name for job, _ in found}
        parents = {p for _, on in found for p in on.parents} - names
        return OutOfLine(found, self._store.states_of(parents) if parents else {})

    def _still_out_of_line(self, name: str) -> Job | None:
        """The job as it is now, if it still waits out of line (else it moved on)."""
        job = self._store.get(name)
        return job if job is not None and job.state.is_waiting and job.waits_on_parents else None

    def _cancel(self, name: str, reason: str, now: float) -> None:
        job = self._still_out_of_line(name)
        if job is None:
            return
        audit = AuditEntry(now, Action.CANCELLED)  # by the queue
        try:
            self._store.end_waiting(job, now, audit, reason, state=JobState.CANCELLED)
        except StaleState:
            return
        self._report.changes.append(StateChange.of(job, JobState.CANCELLED, now, reason))
        logger.info(f"cancelled: {reason}", extra={"job": name})

    def _join(self, name: str, now: float) -> None:
        job = self._still_out_of_line(name)
        if job is None:
            return
        audit = codecs.audit_value(AuditEntry(now, Action.DEPENDENCY_MET))
        try:
            self._store.join_line(job, now, audit)
        except StaleState:
            return
        self._report.changes.append(DependencyMet(name, str(job.dependency), job.share, now))
        logger.info(f"its dependency holds ({job.dependency}): in line", extra={"job": name})
