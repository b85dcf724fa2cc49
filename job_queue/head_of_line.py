"""How long a job may wait first in line for one reason before the queue acts (the
``HeadOfLineLimits`` setting, as AWS Batch's ``jobStateTimeLimitActions``), pure.

A limit is ``{"reason": code, "seconds": N, "action": "cancel" | "alarm"}``, the code one of
:class:`~job_queue.scheduler.waiting_for.Reason`. A job first in line for its instances (no
job ahead of it waits for them) that has waited for that reason, without a break, for longer
than N seconds is acted on by the sweep: ``cancel`` ends it ``failed`` with the reason, so
that it stops blocking the jobs behind it; ``alarm`` only says so. Either way a
"Training Job Queue Blocked" event is put on the bus and the ``BlockedJobs`` metric counts
it — once per stretch of waiting, not at every sweep.

The sweep keeps, per such job, the reason it waits for and since when
(:class:`Blocking`); a job that starts, leaves the head of its line or waits for another
reason starts its count again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from job_queue.scheduler.waiting_for import Reason, WaitingFor

VARIABLE = "HEAD_OF_LINE_LIMITS"


class Act(StrEnum):
    """What the sweep does to a job blocked past its limit."""

    CANCEL = "cancel"  # it ends failed, with the reason
    ALARM = "alarm"  # only the event and the metric


@dataclass(frozen=True)
class HeadOfLineLimit:
    """A job first in line that waits for ``reason`` longer than ``seconds`` is acted on."""

    reason: Reason
    seconds: int
    action: Act


@dataclass(frozen=True)
class Blocking:
    """What the sweep keeps of a job first in line: its reason, since when, and whether its
    alarm was raised already."""

    reason: Reason
    since: float
    alarmed: bool = False


@dataclass(frozen=True)
class Blocked:
    """A job waiting past its limit, and what is done about it."""

    job: str
    why: WaitingFor
    waited_s: float
    action: Act

    @property
    def message(self) -> str:
        waited = f"waited {math.floor(self.waited_s)} s first in line for {self.why.code.value}"
        return f"{waited} ({self.why.message}), past its HeadOfLineLimits"


def check(
    kept: Mapping[str, Blocking],
    why: Mapping[str, WaitingFor],
    limits: tuple[HeadOfLineLimit, ...],
    now: float,
) -> tuple[dict[str, Blocking], list[Blocked]]:
    """After a sweep's pass: what to keep for next time, and the jobs past their limit
    (``kept``: what the last sweep kept; ``why``: the pass's reasons)."""
    by_reason = {limit.reason: limit for limit in limits}
    keep, blocked = {}, []
    for name, reason in why.items():
        limit = by_reason.get(reason.code)
        if limit is None or not reason.first:
            continue  # no limit for it, or it waits behind another job: no count
        before = kept.get(name)
        mark = before if before and before.reason is reason.code else Blocking(reason.code, now)
        waited = now - mark.since
        if waited > limit.seconds and not mark.alarmed:
            blocked.append(Blocked(name, reason, waited, limit.action))
            # An alarm is raised once; a cancel that did not land is tried at the next sweep.
            mark = replace(mark, alarmed=limit.action is Act.ALARM)
        keep[name] = mark
    return keep, blocked


def parse_limits(text: str, variable: str = VARIABLE) -> tuple[HeadOfLineLimit, ...]:
    """The setting's JSON list ("": none). ValueError names the entry and field at fault."""
    if not text.strip():
        return ()
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{variable}: not JSON ({exc.msg})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{variable}: must be a JSON list of limits")
    limits = tuple(_limit(entry, f"{variable}[{i}]") for i, entry in enumerate(entries))
    reasons = [limit.reason for limit in limits]
    twice = sorted({r.value for r in reasons if reasons.count(r) > 1})
    if twice:
        raise ValueError(f"{variable}: reason {', '.join(twice)} has more than one limit")
    return limits


def _limit(entry: object, where: str) -> HeadOfLineLimit:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: must be an object with reason, seconds and action")
    unknown = sorted(set(entry) - {"reason", "seconds", "action"})
    if unknown:
        raise ValueError(f"{where}: unknown field {', '.join(unknown)}")
    reason, seconds, action = entry.get("reason"), entry.get("seconds"), entry.get("action")
    codes = [r.value for r in Reason]
    if reason not in codes:
        raise ValueError(f"{where}.reason: must be one of {', '.join(codes)}, got {reason!r}")
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
        raise ValueError(f"{where}.seconds: must be a whole number above 0, got {seconds!r}")
    if action not in [a.value for a in Act]:
        raise ValueError(f"{where}.action: must be cancel or alarm, got {action!r}")
    return HeadOfLineLimit(Reason(reason), seconds, Act(action))
