"""Backfill's one number: when a held job could start at the latest.

A held job reserves its share and types from then instead of closing them, and a later job
may start in what is free only if it is bound to end before (EASY backfilling). The bound of
a running job is its start plus its MaxRuntimeInSeconds and the policy's provisioning
allowance (:meth:`~job_queue.scheduler.snapshot.Policy.bound`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def latest_start(now: float, need: int, have: int, ends: Iterable[tuple[float, int]]) -> float:
    """When ``need`` instances are there at the latest: ``have`` now, and each ``(end,
    count)`` frees ``count`` more at ``end``. Infinite when even all of them are not enough
    (or one that is needed has no bound)."""
    if have >= need:
        return now
    for end, count in sorted(ends):
        have += count
        if have >= need:
            return max(now, end)
    return math.inf
