"""Training plans during one pass: where a waiting job is counted (a step of
:class:`~job_queue.scheduler.planner.Planner`).

A job may have several places to start: the training plans that admit it, then on-demand
capacity (:func:`~job_queue.scheduler.reservations.options`). It is counted on the first
where it fits now, else the first where stops under way would make room, else the first,
and then it waits for all of them.
"""

from __future__ import annotations

import math

from job_queue.scheduler import reservations
from job_queue.scheduler.pass_state import PassState
from job_queue.scheduler.shares import Share
from job_queue.scheduler.snapshot import WaitingJob
from job_queue.scheduler.victims import Holder


class Placement(PassState):
    """Where the pass counts each job, and the other places a held job waits for."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._alternatives: dict[str, list[WaitingJob]] = {}  # job -> other places it waits for

    def _make_room(self, job: WaitingJob, share: Share) -> tuple[Holder, ...] | None:
        raise NotImplementedError

    def _place(self, job: WaitingJob, share: Share) -> WaitingJob | None:
        """The job counted where it should start: the first of its options (training plans
        that admit it, then on-demand) where it fits now, else the first where stops would
        make room, else the first, and it waits for all of them."""
        options = reservations.options(job, self._capacity, self._plans, self._now)
        if not options:
            return None
        chosen = options[0]
        if len(options) > 1:
            found = next((o for o in options if self._fits_now(o[1], share)), None)
            found = found or next((o for o in options if self._room_after_stops(o[1], share)), None)
            if found is None:
                self._alternatives[job.name] = [placed for _, placed in options[1:]]
            chosen = found or chosen
        arn, placed = chosen
        if arn is not None:
            self._on_plans[job.name] = (arn, job)
        return placed

    def _fits_now(self, job: WaitingJob, share: Share) -> bool:
        keys = [(share.name, itype) for itype in job.demand]
        if any(key in self._held for key in keys):
            return False
        if self._bound_end(job) > min(self._reserved.get(k, math.inf) for k in keys):
            return False
        return self._own_pool(job, share) is not None or self._has_room(
            share, job.demand, soon=False
        )

    def _room_after_stops(self, job: WaitingJob, share: Share) -> bool:
        keys = [(share.name, itype) for itype in job.demand]
        if any(key in self._held or key in self._reserved for key in keys):
            return False
        if self._search(job, share, self._releasable_pools(job, share), soon=False):
            return True
        if self._has_room(share, job.demand, soon=True):
            return True
        return self._make_room(job, share) is not None
