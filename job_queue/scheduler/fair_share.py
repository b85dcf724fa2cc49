"""Fair share by recent use: within a priority, the next job comes from whoever has used the
instances least lately.

Pure, like the rest of the scheduler. Off by default (the queue is first come, first served
within a priority); on with a half-life:

* A submitter's **usage** is the instance-seconds it held (jobs starting, running and
  stopping, and the warm pools their attempts left), each second weighing half as much per
  half-life since. A job that holds instances counts at least its instances x the look-ahead
  from the moment it starts (the **entry penalty**): a start is charged at once, not after
  the fact.
* Its **standing** is its usage divided by its weight; a standing below one instance for the
  look-ahead counts as none (the submitter is idle).
* **The order.** Each line -- the jobs of one submitter waiting for one partition (instance
  type, or several, and share), first come first served -- is keyed job by job: its
  submitter's standing plus the entry penalties of the jobs ahead of it in that line, over
  its weight. The queue is the lines merged by priority (high first), then that key (low
  first), then submission (earliest first). With the same standing, a submitter's burst of
  jobs thus alternates with the others' instead of going first as a block.
* **Quota shares** borrow in order of their usage per instance of their limit (lowest first).

The bound: a job first in its submitter's line is passed over, at its priority, only by
jobs whose submitters stand lower. While its submitter holds nothing, its standing halves
every half-life, and once it is below one instance for the look-ahead only jobs submitted
before it go first: so it waits at most ``half-life x log2(usage / look-ahead)`` longer
than first come, first served would have it wait (:func:`idle_after`).

Usage of work that ended is kept as :class:`Usage`: per account, a few numbers, each the
decayed usage of the attempts (and pools) that ended in one window of four half-lives,
scaled to that window's start. Adding to one is a plain sum, so concurrent writers add
without reading (DynamoDB's ADD); old windows fall away.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from job_queue.patterns import matches

if TYPE_CHECKING:
    from job_queue.scheduler.shares import Share
    from job_queue.scheduler.snapshot import ActiveJob, Snapshot, WaitingJob, WarmPool

WINDOW_HALF_LIVES = 4  # the span of one Usage window
FORGET_HALF_LIVES = 20  # a window this old weighs less than a millionth: it is dropped
SHARE_ACCOUNT = "#share:"  # share accounts' prefix (no submitter identity holds a '#')


@dataclass(frozen=True)
class FairShare:
    """The fair-share settings: ``half_life_s`` (> 0), the entry penalty's ``lookahead_s``,
    and ``weights``: (identity or ARN pattern, weight > 0) pairs, the first that matches a
    submitter applying (default 1)."""

    half_life_s: float
    lookahead_s: float = 600.0
    weights: tuple[tuple[str, float], ...] = ()

    def weight(self, submitter: str | None) -> float:
        """The weight of ``submitter``: the first of ``weights`` it matches, else 1."""
        if submitter is not None:
            for pattern, weight in self.weights:
                if pattern == submitter or ("*" in pattern and matches(pattern, submitter)):
                    return weight
        return 1.0

    def held(self, instances: int, seconds: float) -> float:
        """``instances`` held for the last ``seconds``, decayed to now."""
        if seconds <= 0:
            return 0.0
        return instances * self.half_life_s / math.log(2) * -math.expm1(-_rate(self) * seconds)

    def charged(self, instances: int, seconds: float) -> float:
        """What a job holding ``instances`` for the last ``seconds`` counts now: at least
        its entry penalty."""
        return max(self.held(instances, seconds), instances * self.lookahead_s)


@dataclass(frozen=True)
class Usage:
    """Decayed usage of the work that ended, per account: a submitter's identity, or
    ``#share:<name>`` (:func:`share_account`). ``windows``: account -> {window start:
    usage scaled to the window's start}."""

    windows: Mapping[str, Mapping[int, float]] = field(default_factory=dict)

    def of(self, account: str, now: float, fair: FairShare) -> float:
        """The account's usage of ended work, decayed to ``now``."""
        return sum(
            value * 2.0 ** (-(now - start) / fair.half_life_s)
            for start, value in self.windows.get(account, {}).items()
        )

    def added(self, entries: Iterable[tuple[str, int, float]]) -> Usage:
        """This usage with (account, window start, value) entries added (see :func:`ended`)."""
        windows = {account: dict(kept) for account, kept in self.windows.items()}
        for account, start, value in entries:
            kept = windows.setdefault(account, {})
            kept[start] = kept.get(start, 0.0) + value
        return Usage(windows)

    def forgetting(self, now: float, fair: FairShare) -> Usage:
        """This usage without the windows too old to count."""
        oldest = now - FORGET_HALF_LIVES * fair.half_life_s
        windows = {
            account: {s: v for s, v in kept.items() if s >= oldest}
            for account, kept in self.windows.items()
        }
        return Usage({account: kept for account, kept in windows.items() if kept})


def share_account(share: str) -> str:
    return SHARE_ACCOUNT + share


def accounts(holder: ActiveJob | WarmPool) -> list[str]:
    """Whom a holder's instances are charged to: its submitter, and its share."""
    charged = [] if holder.submitter is None else [holder.submitter]
    return charged + ([] if holder.share is None else [share_account(holder.share)])


def ended(
    holder: ActiveJob | WarmPool, since: float, until: float, fair: FairShare
) -> list[tuple[str, int, float]]:
    """The usage of ``holder`` holding its instances from ``since`` to ``until``, as
    (account, window start, value) entries to add to :class:`Usage`."""
    span = WINDOW_HALF_LIVES * fair.half_life_s
    start = int(math.floor(until / span) * span)
    value = fair.held(_instances(holder.demand), until - since) * 2.0 ** (
        (until - start) / fair.half_life_s
    )
    return [(account, start, value) for account in accounts(holder)] if value > 0 else []


def charge(
    usage: Usage, holder: ActiveJob | WarmPool, since: float, until: float, fair: FairShare | None
) -> Usage:
    """``usage`` once ``holder``'s hold from ``since`` to ``until`` is charged (as the table
    charges an attempt or a pool that ends); unchanged with fair share off."""
    if fair is None:
        return usage
    return usage.added(ended(holder, since, until, fair)).forgetting(until, fair)


@dataclass(frozen=True)
class Standings:
    """Each account's usage now: its ended work, and what it holds (with entry penalties)."""

    usage: Mapping[str, float]
    fair: FairShare

    def used(self, submitter: str | None) -> float:
        """The submitter's usage (0 below one instance for the look-ahead: idle)."""
        used = self.usage.get(submitter, 0.0) if submitter is not None else 0.0
        return used if used >= self.fair.lookahead_s else 0.0

    def of(self, submitter: str | None) -> float:
        """The submitter's standing: its usage over its weight."""
        return self.used(submitter) / self.fair.weight(submitter)

    def of_share(self, share: Share) -> float:
        """A share's usage per instance of its limit (what decides who borrows first)."""
        limit = sum(share.capacity.values())
        used = self.usage.get(share_account(share.name), 0.0)
        return used / limit if limit else math.inf


def standings(seen: Snapshot, fair: FairShare) -> Standings:
    """Who stands where at ``seen.now``."""
    now = seen.now
    usage: dict[str, float] = {}
    for account in seen.usage.windows:
        usage[account] = seen.usage.of(account, now, fair)
    for job in seen.active:
        for account in accounts(job):
            charge = fair.charged(_instances(job.demand), now - job.started_at)
            usage[account] = usage.get(account, 0.0) + charge
    for pool in seen.pools:
        for account in accounts(pool):
            usage[account] = usage.get(account, 0.0) + fair.held(
                _instances(pool.demand), now - pool.since
            )
    return Standings(usage, fair)


class InLine(Iterable["WaitingJob"]):
    """Waiting jobs already in the pass's order (fair-share order included), as a reader
    that keeps the lines apart (the table, the simulator) hands them to the pass."""

    def __init__(self, jobs: Iterable[WaitingJob]) -> None:
        self._jobs = jobs

    def __iter__(self) -> Iterator[WaitingJob]:
        return iter(self._jobs)


def in_line(lines: Iterable[Iterable[WaitingJob]], standing: Standings) -> InLine:
    """The queue in fair-share order, from its lines (each one submitter's jobs of one
    partition, in queue order). Lazy: it reads one job ahead in each line."""
    return InLine(_merged(lines, standing))


def _merged(lines: Iterable[Iterable[WaitingJob]], standing: Standings) -> Iterator[WaitingJob]:
    fair = standing.fair

    def keyed(line: Iterable[WaitingJob]) -> Iterator[tuple[tuple[int, float, int], WaitingJob]]:
        ahead = None
        for job in line:
            if ahead is None:
                ahead, weight = standing.used(job.submitter), fair.weight(job.submitter)
            yield (-job.priority, ahead / weight, job.seq), job
            ahead += _instances(job.demand) * fair.lookahead_s

    for _, job in heapq.merge(*map(keyed, lines), key=lambda entry: entry[0]):
        yield job


def line_of(job: WaitingJob) -> tuple[str, str | None, str | None]:
    """The line a waiting job stands in: its partition (instance type; ``*``: several; ``-``:
    none capped), share, and submitter."""
    types = list(job.demand)
    partition = "-" if not types else types[0] if len(types) == 1 else "*"
    return partition, job.share, job.submitter


def fair_order(
    waiting: Iterable[WaitingJob], seen: Snapshot, fair: FairShare | None
) -> Iterable[WaitingJob]:
    """``waiting`` (in queue order) in fair-share order; as it is with fair share off, or
    when it is already in line (:class:`InLine`)."""
    if fair is None or isinstance(waiting, InLine):
        return waiting
    lines: dict[tuple[str, str | None, str | None], list[WaitingJob]] = {}
    for job in waiting:
        lines.setdefault(line_of(job), []).append(job)
    return in_line(lines.values(), standings(seen, fair))


def idle_after(used: float, fair: FairShare) -> float:
    """How long a submitter that has ``used`` instance-seconds (decayed) must hold nothing
    before it counts as idle: the bound on how much longer than first come, first served its
    next job waits."""
    if used < fair.lookahead_s:
        return 0.0
    return fair.half_life_s * math.log2(used / fair.lookahead_s)


def _rate(fair: FairShare) -> float:
    return math.log(2) / fair.half_life_s


def _instances(demand: Mapping[str, int]) -> int:
    return sum(demand.values())
