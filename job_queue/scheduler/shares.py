"""Quota shares: each team's slice of the capacity, lent when idle and reclaimed when needed.

Pure, like the rest of the scheduler. A share has a limit per instance type (the shares'
limits add up to the capacity) and a strategy:

* ``RESERVE``: never lends its idle capacity, never borrows;
* ``LEND``: lends its idle capacity, never borrows;
* ``LEND_AND_BORROW``: lends, and borrows idle capacity lent by others, up to
  ``borrow_limit`` percent of its own limit per type (-1: unlimited).

The pass that applies them is :mod:`job_queue.scheduler.share_planner`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from job_queue.models import Demand
from job_queue.scheduler.snapshot import ActiveJob


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

    @property
    def lends(self) -> bool:
        return self.strategy is not Strategy.RESERVE

    @property
    def borrows(self) -> bool:
        return self.strategy is Strategy.LEND_AND_BORROW

    def limit(self, itype: str) -> int:
        return self.capacity.get(itype, 0)

    def most(self, itype: str) -> float:
        """The most instances of ``itype`` the share may ever hold: its limit plus what it
        may borrow."""
        return self.limit(itype) + self.borrow_cap(itype)

    def borrow_cap(self, itype: str) -> float:
        """How many instances of ``itype`` the share may hold beyond its own limit."""
        if not self.borrows:
            return 0
        if self.borrow_limit == UNLIMITED:
            return math.inf
        return self.limit(itype) * self.borrow_limit // 100


def total_capacity(shares: Iterable[Share]) -> dict[str, int]:
    """The capacity the shares make up: the sum of their limits per instance type."""
    total: dict[str, int] = {}
    for share in shares:
        for itype, count in share.capacity.items():
            total[itype] = total.get(itype, 0) + count
    return total


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

    Jobs without a known share (their share was removed) count against a share of limit 0:
    everything they hold is borrowed, and reclaimable.
    """

    def __init__(self, shares: Sequence[Share], holders: Iterable[ActiveJob]) -> None:
        self.shares = {share.name: share for share in shares}
        self.types = sorted(total_capacity(shares))
        self.used: dict[tuple[str | None, str], int] = {}
        for job in holders:
            self.take(job.share, job.demand)

    def copy(self) -> ShareLedger:
        other = ShareLedger.__new__(ShareLedger)
        other.shares, other.types, other.used = self.shares, self.types, dict(self.used)
        return other

    def take(self, share: str | None, demand: Demand) -> None:
        for itype, count in demand.items():
            key = (self._known(share), itype)
            self.used[key] = self.used.get(key, 0) + count

    def give_back(self, share: str | None, demand: Demand) -> None:
        for itype, count in demand.items():
            key = (self._known(share), itype)
            self.used[key] = self.used.get(key, 0) - count

    def limit(self, share: str | None, itype: str) -> int:
        known = self.shares.get(share) if share is not None else None
        return known.limit(itype) if known else 0

    def in_use(self, share: str | None, itype: str) -> int:
        return self.used.get((self._known(share), itype), 0)

    def idle(self, share: str | None, itype: str) -> int:
        return max(0, self.limit(share, itype) - self.in_use(share, itype))

    def borrowed(self, share: str | None, itype: str) -> int:
        return max(0, self.in_use(share, itype) - self.limit(share, itype))

    def lendable(self, itype: str) -> int:
        """Idle instances of lending shares not already borrowed: what a lender's own job or
        a borrower can take now. (RESERVE shares' idle instances are not in it.)"""
        idle = sum(self.idle(name, itype) for name, s in self.shares.items() if s.lends)
        borrowed = sum(self.borrowed(share, t) for share, t in self.used if t == itype)
        return idle - borrowed

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
            headroom = share.borrow_cap(itype) - self.borrowed(share.name, itype)
            if extra > lent_out or extra > headroom:
                return False
        return True

    def usage(self) -> list[ShareUsage]:
        """Per share and instance type: limit, in use, borrowed, and lent (borrowed capacity
        is attributed to lending shares in their configured order)."""
        rows = []
        for itype in self.types:
            to_attribute = sum(self.borrowed(share, t) for share, t in self.used if t == itype)
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
        return share if share in self.shares else None


class LedgerRoom:
    """A waiting job's room in a ledger of shares, for the victim search
    (:mod:`job_queue.scheduler.victims`): holders taken give their instances back to their
    shares' ledger. ``fits(ledger, taken)`` says whether the job then has room; ``eligible(
    ledger, job)`` which running jobs may be taken (every idle pool offered may be)."""

    def __init__(self, ledger: ShareLedger, fits, eligible) -> None:
        self._ledger, self._fits, self._eligible = ledger, fits, eligible
        self._taken: list = []

    def enough(self) -> bool:
        return self._fits(self._ledger, self._taken)

    def helps(self, candidate) -> bool:
        return not isinstance(candidate, ActiveJob) or self._eligible(self._ledger, candidate)

    def take(self, holder) -> None:
        self._taken.append(holder)
        self._ledger.give_back(holder.share, holder.demand)

    def give_back(self, holder) -> None:
        self._taken.remove(holder)
        self._ledger.take(holder.share, holder.demand)
