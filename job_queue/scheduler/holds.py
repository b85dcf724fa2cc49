"""Holding and draining the queue, or one share of it, for maintenance (as Kueue's
``stopPolicy: Hold | HoldAndDrain``), pure.

While the queue (or a share) is held, none of its waiting jobs starts — they wait for
``held`` — and its running jobs go on. Drained, its running jobs are also stopped and
requeued as preemptions are, so that a job that checkpoints loses nothing; they resume once
an admin resumes the queue. Submissions are accepted all the while.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from job_queue.models import JobState
from job_queue.scheduler.snapshot import ActiveJob, Preemption
from job_queue.scheduler.waiting_for import Reason, WaitingFor, iso

DRAIN = "queue drain"  # the preemptor a drain's stops name (no job can have this name)


@dataclass(frozen=True)
class QueueHold:
    """An admin's hold on the queue (``share`` None) or on one share; ``drain``: its running
    jobs are stopped too."""

    share: str | None
    drain: bool
    by: str
    since: float

    @property
    def scope(self) -> str:
        return "the queue" if self.share is None else f"share {self.share}"

    @property
    def what(self) -> str:
        return "drained" if self.drain else "held"

    def waiting_for(self) -> WaitingFor:
        """Why a job it holds waits."""
        message = f"{self.scope} is {self.what} by {self.by} since {iso(self.since)}"
        return WaitingFor(Reason.HELD, message, share=self.share)


def hold_on(holds: Sequence[QueueHold], share: str | None) -> QueueHold | None:
    """The hold that keeps jobs of ``share`` from starting, if any (the whole queue's
    first)."""
    whole = next((h for h in holds if h.share is None), None)
    if whole is not None or share is None:
        return whole
    return next((h for h in holds if h.share == share), None)


def drained(active: Iterable[ActiveJob], holds: Sequence[QueueHold], lost=None) -> list[Preemption]:
    """The running jobs a drain stops, to requeue; ``lost`` estimates the work each stop
    throws away."""
    stops = []
    for job in active:
        hold = hold_on(holds, job.share)
        if hold is not None and hold.drain and job.state is JobState.RUNNING:
            why = f"stopped: {hold.scope} is drained by {hold.by}"
            stops.append(Preemption(job, DRAIN, why, lost(job) if lost else None))
    return stops
