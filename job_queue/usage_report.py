"""Usage reports: who held what, in which phase, what it cost, grouped by submitter, share,
instance type or job, over a window — from ledger records (:mod:`job_queue.ledger`), pure.

The queue's GET /usage, its monthly report event and the simulator all call
:func:`usage_report`, so a report of a trace and of the real queue count alike:

* time is instance-seconds clipped to the window; a multi-type job counts toward each type
  it holds, its instances of that type times its seconds;
* billable hours are running, stopping and idle warm pools (SageMaker bills no job before it
  exists: provisioning is capacity held, not paid for); cost is billable hours at ``Prices``;
* an attempt counts toward ``attempts`` and ``jobs`` when it held instances in the window, a
  preemption (and the work it threw away) when it ended in the window, a warm start (a cold
  start avoided) when it began in it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from job_queue.costs import HOUR, Prices
from job_queue.errors import InvalidRequest
from job_queue.ledger import Phase, UsageRecord
from job_queue.models import Outcome
from job_queue.scheduler.budgets import DAY, by_day
from job_queue.scheduler.reservations import TrainingPlan

GROUPS = ("submitter", "share", "type", "job")
DEFAULT_WINDOW_S = 30 * 86400.0
NONE = "(none)"  # the group of records without a submitter or share
_RELATIVE = re.compile(r"^(\d+)([dhm])$")
_UNIT_S = {"d": 86400, "h": 3600, "m": 60}
_PREEMPTED = Outcome.PREEMPTED.value


@dataclass(frozen=True)
class Window:
    """A report's window, [since, until), and how its rows are grouped."""

    since: float
    until: float
    by: str


def parse_span(
    query: Mapping[str, str], now: float, default_s: float = DEFAULT_WINDOW_S
) -> tuple[float, float]:
    """``since`` and ``until`` of a query (ISO 8601 times, or ``30d``, ``12h``, ``90m``
    before now; by default the last ``default_s`` seconds); InvalidRequest naming the
    parameter that is wrong."""
    until = _moment("until", query.get("until"), now, now)
    since = _moment("since", query.get("since"), now, now - default_s)
    if since >= until:
        raise InvalidRequest(
            f"since must be before until (since {_day(since)}, until {_day(until)})"
        )
    return since, until


def parse_window(query: Mapping[str, str], now: float, default_by: str) -> Window:
    """The window of GET /usage's ``since``, ``until`` (:func:`parse_span`) and ``by``;
    InvalidRequest naming the parameter that is wrong."""
    since, until = parse_span(query, now)
    by = query.get("by") or default_by
    if by not in GROUPS:
        raise InvalidRequest(f"by must be one of {', '.join(GROUPS)}, got {by!r}")
    return Window(since, until, by)


def _moment(name: str, text: str | None, now: float, default: float) -> float:
    if not text:
        return default
    if found := _RELATIVE.match(text.strip()):
        return now - int(found[1]) * _UNIT_S[found[2]]
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(
            f"{name} must be an ISO 8601 time (2026-11-01 or 2026-11-01T00:00:00Z) or a span "
            f"before now (30d, 12h, 90m), got {text!r}"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def month_due(reported: str | None, now: float) -> tuple[str, bool] | None:
    """The month (``2026-11``) whose monthly report is due, and whether to send it: last
    month, once the last one sent (``reported``) is of an earlier month. A new queue
    (``reported`` None) marks last month without sending it: it has nothing to report."""
    last = _month(_month_start(now) - 1)
    if reported is None:
        return last, False
    return (last, True) if reported < last else None


def month_window(month: str, by: str) -> Window:
    """The window of one calendar month (UTC), grouped ``by``."""
    start = datetime.strptime(month, "%Y-%m").replace(tzinfo=UTC)
    after = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return Window(start.timestamp(), after.timestamp(), by)


def _month_start(moment: float) -> float:
    when = datetime.fromtimestamp(moment, UTC)
    return when.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def _month(moment: float) -> str:
    return time.strftime("%Y-%m", time.gmtime(moment))


def usage_report(
    records: Iterable[UsageRecord],
    window: Window,
    prices: Prices,
    plans: Iterable[TrainingPlan] = (),
) -> dict:
    """The report of ``records`` over ``window``: one row per group (most billed first), the
    total, and the billable instance-hours per day and group (for a plot)."""
    rates = prices.plan_rates(plans)
    rows: dict[str, _Row] = {}
    total = _Row()
    days: dict[str, dict[str, float]] = {}
    unpriced: set[str] = set()
    for record in records:
        keys = []
        for itype, count in record.demand.items():
            key = _key(record, itype, window.by)
            rate = prices.rate(itype, record.plan, rates)
            if not rate and record.plan is None:
                unpriced.add(itype)
            for row in (rows.setdefault(key, _Row()), total):
                row.add(record, count, rate, window)
            per_day = days.setdefault
            for span in (s for s in record.spans if s.phase.billed):
                for day, seconds in _by_day(span.start, span.end, window):
                    hours = per_day(day, {})
                    hours[key] = hours.get(key, 0.0) + seconds * count / HOUR
            keys.append(key)
        for key in dict.fromkeys(keys):
            rows[key].count(record, window)
        total.count(record, window)
    listed = sorted(rows.items(), key=lambda kv: (-kv[1].billable_s, kv[0]))
    return {
        "since": _iso(window.since),
        "until": _iso(window.until),
        "by": window.by,
        "rows": [{window.by: key, **row.view()} for key, row in listed],
        "total": total.view(),
        "days": [
            {"day": day, **{k: round(v, 4) for k, v in sorted(per.items())}}
            for day, per in sorted(days.items())
        ],
        "unpriced_types": sorted(unpriced),
    }


class _Row:
    """One group's sums."""

    def __init__(self) -> None:
        self.seconds = {phase: 0.0 for phase in Phase}
        self.cost = 0.0
        self.lost_s = 0.0
        self.billed_pool_s = 0.0
        self.jobs: set[str] = set()
        self.attempts = self.preemptions = self.warm_starts = 0

    @property
    def billable_s(self) -> float:
        return sum(s for phase, s in self.seconds.items() if phase.billed)

    def add(self, record: UsageRecord, count: int, rate: float, window: Window) -> None:
        """``count`` instances of one type of ``record``: their time, cost and work lost."""
        for span in record.spans:
            seconds = _clipped(span.start, span.end, window) * count
            self.seconds[span.phase] += seconds
            if span.phase.billed:
                self.cost += seconds / HOUR * rate
        if record.outcome == _PREEMPTED and window.since <= record.ended_at < window.until:
            self.lost_s += record.lost_s * count
        if record.pool and record.billed_s is not None and _in(record.ended_at, window):
            self.billed_pool_s += record.billed_s * count

    def count(self, record: UsageRecord, window: Window) -> None:
        """``record``'s attempt, job, preemption and warm start, where the window has them."""
        if record.pool:
            return
        held = any(_clipped(s.start, s.end, window) > 0 for s in record.spans)
        if held or _in(record.ended_at, window):
            self.attempts += 1
            self.jobs.add(record.job)
        self.preemptions += record.outcome == _PREEMPTED and _in(record.ended_at, window)
        self.warm_starts += record.warm_start and _in(record.started_at, window)

    def view(self) -> dict:
        hours = {phase.value: round(s / HOUR, 4) for phase, s in self.seconds.items()}
        return {
            "instance_hours": hours,
            "instance_seconds": {phase.value: round(s, 3) for phase, s in self.seconds.items()},
            "billable_instance_hours": round(self.billable_s / HOUR, 4),
            "cost_usd": round(self.cost, 2),
            "jobs": len(self.jobs),
            "attempts": self.attempts,
            "preemptions": self.preemptions,
            "work_lost_instance_hours": round(self.lost_s / HOUR, 4),
            "warm_starts": self.warm_starts,
            "pool_billed_instance_hours": round(self.billed_pool_s / HOUR, 4),
        }


def _key(record: UsageRecord, itype: str, by: str) -> str:
    if by == "type":
        return itype
    if by == "job":
        return record.job
    return (record.submitter if by == "submitter" else record.share) or NONE


def _clipped(start: float, end: float, window: Window) -> float:
    return max(0.0, min(end, window.until) - max(start, window.since))


def _in(moment: float, window: Window) -> bool:
    return window.since <= moment < window.until


def _by_day(start: float, end: float, window: Window) -> Iterable[tuple[str, float]]:
    """A span's seconds in the window, by UTC day."""
    for day, seconds in by_day(max(start, window.since), min(end, window.until)).items():
        yield _day(day * DAY), seconds


def _day(moment: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(moment))


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
