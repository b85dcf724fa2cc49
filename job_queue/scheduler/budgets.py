"""Budgets: how many instance-hours (or dollars) a quota share or a submitter may spend in a
rolling window of days, and what its jobs do once that is spent. Pure.

Spending is what SageMaker bills (running, stopping, idle warm pools: the usage ledger's
billed phases, :mod:`job_queue.ledger`), kept per holder and UTC day, plus what the jobs and
pools holding instances now have held so far. The window is the last ``window_days`` UTC
days, today included: a day's spending leaves it at the end of its ``window_days``-th day.

A holder whose spending reached its budget is *spent*. Its running jobs go on (a budget
stops nothing), and its waiting jobs, as ``when_spent`` says, either

* ``wait``: they wait (``budget``) until enough of the spending leaves the window, holding
  back nobody; or
* ``lowest-priority``: they are decided after every other job of the pass (borrowers
  included), start only on what is left then (never reclaiming, never preempting), and its
  running jobs count as the lowest priority: the first to be preempted.

A budget is checked when a job would start: a job that starts with budget left runs to its
end, and its time counts as it goes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from job_queue.scheduler.waiting_for import Reason, WaitingFor, iso

if TYPE_CHECKING:
    from job_queue.scheduler.snapshot import ActiveJob, Snapshot, WaitingJob, WarmPool

DAY = 86400.0
HOUR = 3600.0
LOWEST = -10000  # below any priority a job may have (MIN_PRIORITY is -9999)

# Billable instance-seconds by UTC day (days since the epoch) and capacity key: an instance
# type, or "TYPE PLAN-ARN" for a training plan's instances (priced apart).
Spending = Mapping[int, Mapping[str, float]]


class WhenSpent(StrEnum):
    WAIT = "wait"
    LOWEST_PRIORITY = "lowest-priority"


class Unit(StrEnum):
    INSTANCE_HOURS = "instance_hours"
    DOLLARS = "dollars"


@dataclass(frozen=True)
class Budget:
    """``amount`` of ``unit`` per ``window_days`` days; ``when_spent``: what then."""

    amount: float
    unit: Unit = Unit.INSTANCE_HOURS
    window_days: int = 30
    when_spent: WhenSpent = WhenSpent.WAIT

    def to_dict(self) -> dict:
        """As the shares file, the ``Budgets`` setting and the API write it."""
        return {
            self.unit.value: self.amount,
            "window_days": self.window_days,
            "when_spent": self.when_spent.value,
        }


@dataclass(frozen=True)
class Holder:
    """Whom a budget is for: a quota share, or a submitter (fair-share-id or principal)."""

    kind: str  # "share" or "submitter"
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def holders_of(share: str | None, submitter: str | None) -> list[Holder]:
    """The holders a job's (or a pool's) spending is charged to."""
    found = [Holder("share", share)] if share else []
    return found + ([Holder("submitter", submitter)] if submitter else [])


@dataclass(frozen=True)
class Standing:
    """Where a holder stands against its budget now."""

    holder: Holder
    budget: Budget
    spent: float  # in the budget's unit, over its window, work in progress included
    # When enough has left the window for it to be under budget again, at the earliest (its
    # work in progress goes on counting); None when it is not spent, or never frees.
    frees_at: float | None = None

    @property
    def is_spent(self) -> bool:
        return self.spent >= self.budget.amount

    @property
    def fraction(self) -> float:
        return self.spent / self.budget.amount if self.budget.amount else math.inf

    def to_dict(self) -> dict:
        return {
            "holder": str(self.holder),
            "budget": self.budget.to_dict(),
            "spent": round(self.spent, 6),
            "spent_fraction": round(self.fraction, 6) if self.budget.amount else None,
            "is_spent": self.is_spent,
            "frees_at": iso(self.frees_at),
        }


def by_day(start: float, end: float) -> dict[int, float]:
    """The seconds of [start, end) in each UTC day."""
    seconds: dict[int, float] = {}
    at = start
    while at < end:
        day = int(at // DAY)
        until = min(end, (day + 1) * DAY)
        seconds[day] = seconds.get(day, 0.0) + (until - at)
        at = until
    return seconds


def add(into: dict[int, dict[str, float]], key: str, instances: int, start: float, end: float):
    """Count ``instances`` of capacity ``key`` held over [start, end) into ``into``."""
    for day, seconds in by_day(start, end).items():
        keys = into.setdefault(day, {})
        keys[key] = keys.get(key, 0.0) + seconds * instances


def capacity_key(itype: str, plan: str | None) -> str:
    return f"{itype} {plan}" if plan else itype


def charge(
    into: dict[Holder, dict[int, dict[str, float]]],
    held: ActiveJob | WarmPool,
    since: float,
    until: float,
) -> None:
    """Count what ``held`` (a job holding instances, or a warm pool) held over [since, until)
    into its holders' spending (as the usage report prices it: all of a job on a plan at
    the plan's price)."""
    plan = getattr(held, "plan", None)
    demand = {**getattr(held, "helpers", {}), **held.demand}
    for holder in holders_of(held.share, held.submitter):
        for itype, count in demand.items():
            add(into.setdefault(holder, {}), capacity_key(itype, plan), count, since, until)


def in_progress(seen: Snapshot) -> dict[Holder, dict[int, dict[str, float]]]:
    """What the jobs holding instances and the idle warm pools have held so far, by holder."""
    spent: dict[Holder, dict[int, dict[str, float]]] = {}
    for job in seen.active:
        charge(spent, job, job.started_at, seen.now)
    for pool in seen.pools:
        charge(spent, pool, pool.since, seen.now)
    return spent


Price = Callable[[str], float]  # dollars per instance-hour of a capacity key


def standing(
    holder: Holder, budget: Budget, spending: Iterable[Spending], now: float, price: Price
) -> Standing:
    """``holder``'s standing at ``now`` from its ``spending`` (what ended, what is in
    progress), in the budget's unit, with ``price`` for a budget in dollars."""
    first = int(now // DAY) - budget.window_days + 1
    per_day: dict[int, float] = {}
    for part in spending:
        for day, keys in part.items():
            if day >= first:
                worth = sum(
                    s / HOUR * (price(k) if budget.unit is Unit.DOLLARS else 1.0)
                    for k, s in keys.items()
                )
                per_day[day] = per_day.get(day, 0.0) + worth
    spent = sum(per_day.values())
    frees_at, left = None, spent
    if spent >= budget.amount:
        for day in sorted(per_day):
            left -= per_day[day]
            if left < budget.amount:
                frees_at = (day + budget.window_days) * DAY
                break
    return Standing(holder, budget, spent, frees_at)


def standings(
    budgets: Mapping[Holder, Budget],
    ended: Mapping[Holder, Spending],
    seen: Snapshot,
    price: Price,
) -> tuple[Standing, ...]:
    """Every budgeted holder's standing in ``seen``: ``ended`` is what the ledger recorded
    of its ended attempts and pools (the same for the queue and the simulator)."""
    going = in_progress(seen)
    return tuple(
        standing(h, b, [ended.get(h, {}), going.get(h, {})], seen.now, price)
        for h, b in budgets.items()
    )


def spent_for(seen: Snapshot, share: str | None, submitter: str | None) -> Standing | None:
    """The spent budget that decides for a job of ``share`` and ``submitter``: one that
    makes it wait first, else one that lowers its priority; None if none is spent."""
    mine = set(holders_of(share, submitter))
    spent = [s for s in seen.budgets if s.holder in mine and s.is_spent]
    return min(spent, key=lambda s: s.budget.when_spent is not WhenSpent.WAIT, default=None)


def lowered(seen: Snapshot) -> Snapshot:
    """``seen`` with the running jobs of holders spent with ``lowest-priority`` at the lowest
    priority, so that the victim search takes them first."""
    if not any(s.is_spent for s in seen.budgets):
        return seen
    active = []
    for job in seen.active:
        spent = spent_for(seen, job.share, job.submitter)
        if spent is not None and spent.budget.when_spent is WhenSpent.LOWEST_PRIORITY:
            job = replace(job, priority=LOWEST)
        active.append(job)
    return replace(seen, active=tuple(active))


WARN_AT = (0.8, 1.0)  # of a budget: a queue event as a holder's spending reaches each


def warnings(
    standings_now: Iterable[Standing], warned: Mapping[str, float]
) -> tuple[dict[str, float], list[tuple[Standing, float]]]:
    """Which holders stand at a warning level now (holder -> the highest level reached), and
    the warnings to send: a level reached that was not warned of. A holder back under the
    first level is forgotten, so that reaching it again warns again."""
    levels: dict[str, float] = {}
    send = []
    for standing in standings_now:
        level = max((at for at in WARN_AT if standing.fraction >= at), default=None)
        if level is None:
            continue
        levels[str(standing.holder)] = level
        if level > warned.get(str(standing.holder), 0.0):
            send.append((standing, level))
    return levels, send


def waiting_for_budget(job: WaitingJob, spent: Standing) -> WaitingFor:
    """Why a job of a spent holder waits."""
    budget = spent.budget
    said = (
        f"{spent.holder} spent its budget: {spent.spent:.1f} of {budget.amount:g} "
        f"{budget.unit.value.replace('_', '-')} in the last {budget.window_days} days"
    )
    if budget.when_spent is WhenSpent.LOWEST_PRIORITY:
        said += "; it runs only on capacity nobody else wants, at the lowest priority"
    frees = f"enough leaves the window at {iso(spent.frees_at)}" if spent.frees_at else None
    message = f"{said}; {frees}" if frees else said
    return WaitingFor(Reason.BUDGET, message, until=spent.frees_at, share=job.share)


class BudgetStep:
    """The budget step of the pass (a part of :class:`~job_queue.scheduler.planner.Planner`):
    a spent holder's job waits, or is put aside and decided after every other job."""

    def _budget_step(self, job: WaitingJob) -> bool:
        """Whether the budget decided for ``job`` in this pass (it waits, or is put aside)."""
        if self._lowering:
            return False  # put aside already: now it is decided
        spent = spent_for(self._seen, job.share, job.submitter)
        if spent is None:
            return False
        if spent.budget.when_spent is WhenSpent.WAIT:
            self._waits(job, waiting_for_budget(job, spent))
        else:
            self._lowered.append((job, spent))
        return True

    def _decide_lowered(self) -> None:
        """The jobs put aside, in queue order, once every other job (borrowers included) is
        decided: each starts on what is left, or waits (holding back later ones put aside)."""
        self._lowering = True
        for job, spent in self._lowered:
            self.offer(job)
            if job.name in self._why:
                self._waits(job, waiting_for_budget(job, spent))
