"""A waiting job's room during one pass: instances of each type, and its share's quota.

One room serves every layout (the single queue is one share that holds all the capacity, so
its quota never refuses what the instances allow). A job has room when, for every instance
type it needs,

* its share's ledger grants the instances (its own idle limit; with ``borrow``, lent capacity
  within its borrow limit too: :meth:`ShareLedger.grant`), and
* enough instances are there: free now (and, ``soon``, once the stops under way finish), less
  the idle capacity that RESERVE shares other than its own keep for themselves.

The victim search (:func:`~job_queue.scheduler.victims.choose_victims`) takes holders — idle
pools to release, running jobs to stop — into a :class:`Room` until it is :meth:`Room.enough`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from job_queue.models import Demand
from job_queue.scheduler.shares import Share, ShareLedger
from job_queue.scheduler.snapshot import ActiveJob
from job_queue.scheduler.victims import Holder

# Which running jobs a search may stop for the job (idle pools offered may always go).
Eligible = Callable[[ShareLedger, ActiveJob], bool]


def reserved(ledger: ShareLedger, reserves: Sequence[str], itype: str) -> int:
    """Idle instances of ``itype`` that RESERVE shares (``reserves``) keep for themselves."""
    return sum(ledger.idle(name, itype) for name in reserves)


def instances_for(
    ledger: ShareLedger, demand: Demand, instances: Mapping[str, int], reserves: Sequence[str]
) -> bool:
    """Whether ``instances``, less the idle capacity ``reserves`` keep, hold ``demand``."""
    return all(count <= instances[t] - reserved(ledger, reserves, t) for t, count in demand.items())


class Room:
    """A job's room as holders are taken for it (a :class:`~job_queue.scheduler.victims.Room`):
    each holder taken gives its instances back to its share's ledger (a copy) and counts them
    as soon to be free. A holder helps only if it holds a type the job is still short of."""

    def __init__(
        self,
        ledger: ShareLedger,
        share: Share,
        demand: Demand,
        instances: Mapping[str, int],
        reserves: Sequence[str],
        eligible: Eligible,
        borrow: bool = False,
    ) -> None:
        self._ledger, self._share, self._demand = ledger, share, demand
        self._instances = dict(instances)
        self._reserves, self._eligible, self._borrow = reserves, eligible, borrow

    def _short(self, itype: str) -> bool:
        count = self._demand[itype]
        return count > self._instances[itype] - reserved(
            self._ledger, self._reserves, itype
        ) or not self._ledger.grant(self._share, {itype: count}, self._borrow)

    def enough(self) -> bool:
        return not any(self._short(t) for t in self._demand)

    def helps(self, candidate: Holder) -> bool:
        if isinstance(candidate, ActiveJob) and not self._eligible(self._ledger, candidate):
            return False
        return any(t in self._demand and self._short(t) for t in candidate.demand)

    def take(self, holder: Holder) -> None:
        self._ledger.give_back(holder.share, holder.demand)
        for itype, count in holder.demand.items():
            if itype in self._instances:
                self._instances[itype] += count

    def give_back(self, holder: Holder) -> None:
        self._ledger.take(holder.share, holder.demand)
        for itype, count in holder.demand.items():
            if itype in self._instances:
                self._instances[itype] -= count
