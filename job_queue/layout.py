"""The layout in effect for one invocation: capacity per instance type, quota shares and
training plans, and what a scheduling pass sees in it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from job_queue.scheduler import Share
from job_queue.scheduler.fair_share import Usage
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from job_queue.store import Holders
    from job_queue.store.accounts import Accounts


@dataclass(frozen=True)
class Layout:
    """The capacity in effect for one invocation, and the quota shares that make it up."""

    capacity: Mapping[str, int]
    shares: tuple[Share, ...] = ()
    default_share: str | None = None
    uncapped: frozenset[str] = frozenset()  # types the queue runs on without counting them
    plans: tuple[TrainingPlan, ...] = ()  # training plans of the capacity, as last read

    def share(self, name: str | None) -> Share | None:
        return next((s for s in self.shares if s.name == name), None)

    def most(self, itype: str) -> int | None:
        """The most instances of ``itype`` one job could ever get: on-demand, or on one
        reservation of a plan (None: a plan of the type was never read, so nobody knows)."""
        plans = [plan for plan in self.plans if plan.instance_type == itype]
        if any(plan.read_at is None for plan in plans):
            return None
        reserved = [r.count for plan in plans for r in plan.reservations]
        return max([self.capacity.get(itype, 0), *reserved])

    def seen(self, held: Holders, now: float, accounts: Accounts | None = None) -> Snapshot:
        """What a pass sees in this layout, from the holders just read (``held``) and fair
        share's accounts (``accounts``, when it is on)."""
        return Snapshot(
            now,
            self.capacity,
            held.jobs,
            held.idle_pools(now),
            held.outside,
            self.plans,
            self.shares,
            usage=accounts.usage if accounts else Usage(),
            holds=held.holds,
        )
