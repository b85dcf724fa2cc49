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
from enum import StrEnum

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
    """The hold that keeps jobs of ``share`` from starting, if any: a drain before a hold
    (either of the whole queue or of the share), the whole queue's before the share's."""
    on = [h for h in holds if h.share is None or (share is not None and h.share == share)]
    return min(on, key=lambda h: (not h.drain, h.share is not None), default=None)


class HoldAction(StrEnum):
    """What an admin does to the queue or a share."""

    HOLD = "hold"  # nothing new starts; running jobs go on
    DRAIN = "drain"  # nothing starts, and running jobs are stopped and requeued
    RESUME = "resume"  # jobs start again


@dataclass(frozen=True)
class HoldChange:
    """One line of the holds' audit trail: who held, drained or resumed what, and when."""

    action: HoldAction
    share: str | None  # None: the whole queue
    by: str
    at: float


KEPT_CHANGES = 20  # the audit trail keeps the last ones


def changed(holds: Sequence[QueueHold], change: HoldChange) -> tuple[QueueHold, ...]:
    """``holds`` after ``change``. Holding (or draining) what is so already keeps who did
    it first, and since when."""
    others = tuple(h for h in holds if h.share != change.share)
    if change.action is HoldAction.RESUME:
        return others
    drain = change.action is HoldAction.DRAIN
    kept = next((h for h in holds if h.share == change.share and h.drain == drain), None)
    return (*others, kept or QueueHold(change.share, drain, change.by, change.at))


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
