"""Fair share's accounts in the table: one item per submitter (and per quota share) under
``ACCOUNT``, holding

* ``waiting:<partition>`` -- how many of the submitter's jobs wait in its line of that
  partition (``<partition>@<submitter>``), so that a pass knows which lines to read without
  reading the queue;
* ``usage:<half-life>:<window start>`` -- the decayed usage of the work that ended in that
  window (:class:`~job_queue.scheduler.fair_share.Usage`); a new half-life starts afresh.

Both change only by ADD inside the transactions that queue, start and end jobs and pools:
concurrent invocations add without reading, and a transaction that loses its race changes
neither. One Query reads every account.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from job_queue.models import Job
from job_queue.scheduler import WaitingJob
from job_queue.scheduler.fair_share import (
    FORGET_HALF_LIVES,
    WINDOW_HALF_LIVES,
    FairShare,
    Usage,
    ended,
)
from job_queue.scheduler.snapshot import WarmPool
from job_queue.store import table

ACCOUNT_PK = "ACCOUNT"
WAITING = "waiting:"
USAGE = "usage:"
# An update drops this many windows beyond the forgotten one (a quiet account keeps a few).
_DROPPED = 4


@dataclass(frozen=True)
class Accounts:
    """Every account as last read: the usage of work that ended, and how many jobs wait in
    each line ((plain partition, submitter) -> count)."""

    usage: Usage = field(default_factory=Usage)
    counts: Mapping[tuple[str, str], int] = field(default_factory=dict)

    @cached_property
    def lines(self) -> Mapping[str, tuple[str, ...]]:
        """Plain partition -> the submitters with jobs waiting in a line of it."""
        lines: dict[str, list[str]] = {}
        for (plain, who), n in sorted(self.counts.items()):
            if n > 0:
                lines.setdefault(plain, []).append(who)
        return {plain: tuple(who) for plain, who in lines.items()}

    def in_line(self, plain: str) -> int:
        """How many jobs wait in the lines of partition ``plain``."""
        return sum(self.counts[plain, who] for who in self.lines.get(plain, ()))

    def waiting_of(self, account: str) -> int:
        """How many of ``account``'s jobs wait in its lines."""
        return sum(n for (_, who), n in self.counts.items() if who == account)


def accounts_from(items: Iterable[Mapping], fair: FairShare | None) -> Accounts:
    """The accounts of the ``ACCOUNT`` items (usage only of ``fair``'s half-life)."""
    windows: dict[str, dict[int, float]] = {}
    counts: dict[tuple[str, str], int] = {}
    prefix = None if fair is None else f"{USAGE}{_half_life(fair)}:"
    for item in items:
        account = item["sk"]
        for name, value in item.items():
            if name.startswith(WAITING) and int(value):
                # Never below 0, unless a write was lost (the fault suite checks it is not).
                counts[name.removeprefix(WAITING), account] = int(value)
            elif prefix and name.startswith(prefix) and float(value) > 0:
                windows.setdefault(account, {})[int(name.removeprefix(prefix))] = float(value)
    return Accounts(Usage(windows), counts)


def account_updates(
    waiting: Mapping[tuple[str, str], int],
    usage: Iterable[tuple[str, int, float]],
    fair: FairShare | None,
) -> list[dict]:
    """The Update actions that add ``waiting`` ((submitter, plain partition) -> jobs more or
    fewer in that line) and ``usage`` ((account, window start, value) entries of
    :func:`~job_queue.scheduler.fair_share.ended`) to the accounts: one per account, as a
    transaction may name an item once."""
    adds: dict[str, dict[str, float]] = {}
    for (submitter, plain), delta in waiting.items():
        if delta:
            names = adds.setdefault(submitter, {})
            names[WAITING + plain] = names.get(WAITING + plain, 0) + delta
    dropped: dict[str, list[str]] = {}
    for account, start, value in usage:
        name = f"{USAGE}{_half_life(fair)}:{start}"
        names = adds.setdefault(account, {})
        names[name] = names.get(name, 0.0) + value
        dropped[account] = _forgotten(start, fair)
    actions = []
    for account, names in sorted(adds.items()):
        attributes = {f"#a{i}": name for i, name in enumerate(names)}
        values = {f":a{i}": value for i, value in enumerate(names.values())}
        expression = "ADD " + ", ".join(f"#a{i} :a{i}" for i in range(len(names)))
        gone = {f"#d{i}": name for i, name in enumerate(dropped.get(account, ()))}
        if gone:
            expression += " REMOVE " + ", ".join(gone)
        key = {"pk": ACCOUNT_PK, "sk": account}
        actions.append(table.update(key, expression, None, values, {**attributes, **gone}))
    return actions


def _forgotten(start: int, fair: FairShare) -> list[str]:
    """The windows an update in window ``start`` drops: those too old to count."""
    span = WINDOW_HALF_LIVES * fair.half_life_s
    first = -(-FORGET_HALF_LIVES // WINDOW_HALF_LIVES) + 1  # windows back: past forgetting
    return [
        f"{USAGE}{_half_life(fair)}:{int(start - back * span)}"
        for back in range(first, first + _DROPPED)
    ]


def _half_life(fair: FairShare | None) -> str:
    return "0" if fair is None else f"{fair.half_life_s:g}"


class LineKeeping:
    """The store's part in fair share: where a job is queued (its submitter's line while
    fair share is on), and the account updates that go into its transactions."""

    _fair: FairShare | None
    _lines_marked: bool

    def _placed(self, job: Job) -> Job:
        """``job`` as it is queued now: in its submitter's line while fair share is on."""
        # A job out of line for its dependency joins its line once the dependency holds.
        in_line = self._fair is not None and job.submitter is not None
        in_line = in_line and not job.waits_on_parents
        if in_line and not self._lines_marked:
            self.mark_lines()
            self._lines_marked = True
        return replace(job, in_line=in_line)

    def _accounts(self, lines: dict, usage: list | tuple = ()) -> list[dict]:
        """The account updates of jobs joining (+1) or leaving (-1) lines, and of usage."""
        waiting = {line: n for line, n in lines.items() if line is not None}
        return account_updates(waiting, usage, self._fair) if waiting or usage else []

    def _attempt_usage(self, job: Job, changes: dict, now: float) -> list:
        """What ``job``'s attempt that ends now used, as account entries (fair share on)."""
        if self._fair is None:
            return []
        attempts = changes.get("attempts") or job.attempts
        current = attempts[-1] if attempts else None
        if current is None or current.sagemaker_job_name != job.attempt_name:
            return []  # it never ran: nothing held but its start
        return ended(job, current.started_at, now, self._fair)

    def _pool_usage(self, pool: WarmPool, until: float) -> list:
        return [] if self._fair is None else ended(pool, pool.since, until, self._fair)


def line_of(job: Job | WaitingJob) -> tuple[str, str] | None:
    """The (submitter, partition) account line a job waits in, if it waits in a line."""
    if not (job.in_line and job.submitter):
        return None
    return job.submitter, table.queue_partition(job.demand, job.share)
