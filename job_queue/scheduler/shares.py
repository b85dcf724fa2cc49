"""Quota shares: each team's slice of the capacity, lent when idle and reclaimed when needed.

Pure, like the rest of the scheduler. A share has a limit per instance type (the shares'
limits add up to the capacity) and a strategy:

* ``RESERVE``: never lends its idle capacity, never borrows;
* ``LEND``: lends its idle capacity, never borrows;
* ``LEND_AND_BORROW``: lends, and borrows idle capacity lent by others, up to
  ``borrow_limit`` percent of its own limit per type (-1: unlimited).

The pass applies them (:mod:`job_queue.scheduler.planner`), as it does for the single queue,
which is one share that holds all the capacity and neither lends nor borrows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from job_queue.models import Demand
from job_queue.scheduler.budgets import Budget
from job_queue.scheduler.reservations import TrainingPlan, key_type, on_plan
from job_queue.scheduler.snapshot import ActiveJob, WarmPool


class Strategy(StrEnum):
    """How a share treats its idle capacity, and others'."""

    RESERVE = "RESERVE"
    LEND = "LEND"
    LEND_AND_BORROW = "LEND_AND_BORROW"


UNLIMITED = -1


@dataclass(frozen=True)
class Share:
    """A team's slice of the capacity.

    Example::

        Share("research", {"ml.p5.48xlarge": 2}, Strategy.LEND_AND_BORROW, borrow_limit=100)
    """

    name: str
    capacity: Mapping[str, int]
    strategy: Strategy
    borrow_limit: int = UNLIMITED  # percent of the share's own limit, per instance type
    in_share_preemption: bool = False
    # Who may use the share (job_queue.access reads these; the scheduler does not).
    max_priority: int | None = None  # the highest priority a non-admin may give its jobs
    submitters: tuple[str, ...] = ()  # ARN patterns of who may submit to it (empty: anyone)
    # Training plans whose open reservations count toward its limit: (instance type, ARN).
    plans: tuple[tuple[str, str], ...] = ()
    budget: Budget | None = None  # what it may spend over time (job_queue.scheduler.budgets)

    @property
    def lends(self) -> bool:
        return self.strategy is not Strategy.RESERVE

    @property
    def borrows(self) -> bool:
        return self.strategy is Strategy.LEND_AND_BORROW

    def limit(self, key: str) -> int:
        """Its limit on a capacity key: an instance type's on-demand instances, or (in a
        pass, under ``TYPE@PLAN``) a training plan's reserved ones."""
        return self.capacity.get(key, 0)

    def type_limit(self, itype: str) -> int:
        """Its limit on an instance type: on-demand and reserved instances together."""
        return sum(n for key, n in self.capacity.items() if key_type(key) == itype)

    def most(self, itype: str) -> float:
        """The most instances of ``itype`` the share may ever hold: its limit plus what it
        may borrow."""
        return self.limit(itype) + self.borrow_cap(itype)

    def borrow_cap(self, key: str) -> float:
        """How many instances of the key's instance type the share may hold beyond its own
        limit: ``borrow_limit`` percent of its limit on the type (on-demand and reserved)."""
        if not self.borrows:
            return 0
        if self.borrow_limit == UNLIMITED:
            return math.inf
        return self.type_limit(key_type(key)) * self.borrow_limit // 100

    def with_reserved(self, plans: Iterable[TrainingPlan], now: float) -> Share:
        """The share as a pass counts it: its plans' open reservations beside its on-demand
        limits, under their capacity keys."""
        arns = {arn for _, arn in self.plans}
        reserved = {plan.key: plan.capacity(now) for plan in plans if plan.arn in arns}
        return replace(self, capacity={**self.capacity, **reserved}) if reserved else self


def total_capacity(shares: Iterable[Share]) -> dict[str, int]:
    """The capacity the shares make up: the sum of their limits per instance type."""
    total: dict[str, int] = {}
    for share in shares:
        for itype, count in share.capacity.items():
            total[itype] = total.get(itype, 0) + count
    return total


def usage_with_plans(
    shares: Sequence[Share],
    holders: Iterable[ActiveJob | WarmPool],
    plans: Sequence[TrainingPlan],
    now: float,
) -> list[ShareUsage]:
    """Each share's use (:meth:`ShareLedger.usage`), a training plan's open reservations
    apart from on-demand instances: a row per plan (``TYPE@PLAN``) whose limit is what the
    plan has open now."""
    counted = [share.with_reserved(plans, now) for share in shares]
    placed = [on_plan(h, plans) if isinstance(h, ActiveJob) else h for h in holders]
    return ShareLedger(counted, placed).usage()


@dataclass(frozen=True)
class ShareUsage:
    """One share's use of one instance type (jobs that hold instances, stopping ones too)."""

    share: str
    instance_type: str
    limit: int
    in_use: int
    borrowed: int
    lent: int


class ShareLedger:
    """What each share holds per instance type, and what it may take.

    Jobs without a known share count against ``default``: the single queue's one share, or
    (with quota shares, where their share was removed) a share of limit 0, so that everything
    they hold is borrowed, and reclaimable.
    """

    def __init__(
        self,
        shares: Sequence[Share],
        holders: Iterable[ActiveJob | WarmPool],
        default: str | None = None,
    ) -> None:
        self.shares = {share.name: share for share in shares}
        self.types = sorted(total_capacity(shares))
        self.default = default
        self.used: dict[tuple[str | None, str], int] = {}
        for job in holders:
            self.take(job.share, job.demand)

    def copy(self) -> ShareLedger:
        other = ShareLedger.__new__(ShareLedger)
        other.shares, other.types, other.default = self.shares, self.types, self.default
        other.used = dict(self.used)
        return other

    def owner(self, share: str | None) -> str | None:
        """The share a job or pool of ``share`` counts against."""
        return share if share in self.shares else self.default

    def take(self, share: str | None, demand: Demand) -> None:
        for itype, count in demand.items():
            key = (self._known(share), itype)
            self.used[key] = self.used.get(key, 0) + count

    def give_back(self, share: str | None, demand: Demand) -> None:
        for itype, count in demand.items():
            key = (self._known(share), itype)
            self.used[key] = self.used.get(key, 0) - count

    def limit(self, share: str | None, itype: str) -> int:
        known = self.shares.get(self._known(share))
        return known.limit(itype) if known else 0

    def in_use(self, share: str | None, itype: str) -> int:
        return self.used.get((self._known(share), itype), 0)

    def idle(self, share: str | None, itype: str) -> int:
        return max(0, self.limit(share, itype) - self.in_use(share, itype))

    def borrowed(self, share: str | None, itype: str) -> int:
        return max(0, self.in_use(share, itype) - self.limit(share, itype))

    def borrowed_of_type(self, share: str | None, key: str) -> int:
        """What the share holds beyond its limits on the key's instance type (every key of
        the type: on-demand and each plan's)."""
        itype = key_type(key)
        keys = {t for _, t in self.used if key_type(t) == itype}
        return sum(self.borrowed(share, t) for t in keys)

    def borrowed_total(self, itype: str) -> int:
        """Instances of ``itype`` held beyond their shares' limits, by every share."""
        return sum(self.borrowed(share, t) for share, t in self.used if t == itype)

    def lendable(self, itype: str) -> int:
        """Idle instances of lending shares not already borrowed: what a lender's own job or
        a borrower can take now. (RESERVE shares' idle instances are not in it.)"""
        idle = sum(self.idle(name, itype) for name, s in self.shares.items() if s.lends)
        return idle - self.borrowed_total(itype)

    def own_room(self, share: Share, itype: str) -> int:
        """Instances the share's next job may take now without borrowing."""
        idle = self.idle(share.name, itype)
        return idle if not share.lends else max(0, min(idle, self.lendable(itype)))

    def fits_own(self, share: Share, demand: Demand) -> bool:
        """The demand fits within the share's idle limit (lent out or not)."""
        return all(count <= self.idle(share.name, t) for t, count in demand.items())

    def grant(self, share: Share, demand: Demand, borrow: bool) -> bool:
        """Whether the share may take ``demand`` now: from its own room and, when ``borrow``
        and the share borrows, from lent capacity within its borrow limit."""
        for itype, count in demand.items():
            own = self.own_room(share, itype)
            if count <= own:
                continue
            if not (borrow and share.borrows):
                return False
            extra = count - own
            lent_out = self.lendable(itype) - own
            headroom = share.borrow_cap(itype) - self.borrowed_of_type(share.name, itype)
            if extra > lent_out or extra > headroom:
                return False
        return True

    def usage(self) -> list[ShareUsage]:
        """Per share and instance type: limit, in use, borrowed, and lent (borrowed capacity
        is attributed to lending shares in their configured order)."""
        rows = []
        for itype in self.types:
            to_attribute = self.borrowed_total(itype)
            for name, share in self.shares.items():
                if share.limit(itype) == 0 and not self.in_use(name, itype):
                    continue
                lent = min(self.idle(name, itype), to_attribute) if share.lends else 0
                to_attribute -= lent
                rows.append(
                    ShareUsage(
                        name,
                        itype,
                        share.limit(itype),
                        self.in_use(name, itype),
                        self.borrowed(name, itype),
                        lent,
                    )
                )
        return rows

    def _known(self, share: str | None) -> str | None:
        return share if share in self.shares else self.default
