"""What one invocation did, for its metrics: starts and their waits, preemptions, usage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from job_queue.config import Layout
from job_queue.scheduler import ActiveJob, ShareLedger
from job_queue.scheduler.shares import ShareUsage


@dataclass
class Report:
    """Filled in by the service as it works; the handler turns it into metrics."""

    waits_at_start: list[float] = field(default_factory=list)
    preemptions: int = 0
    instances_in_use: dict[str, int] = field(default_factory=dict)
    queue_depth: int | None = None
    share_usage: list[ShareUsage] = field(default_factory=list)
    waiting_by_share: dict[str, int] = field(default_factory=dict)

    def record_usage(self, holders: Iterable[ActiveJob], layout: Layout) -> None:
        """The instances held per type (and per share) as a pass found them."""
        holders = list(holders)
        in_use = dict.fromkeys(layout.capacity, 0)
        for active in holders:
            for itype, count in active.demand.items():
                in_use[itype] = in_use.get(itype, 0) + count
        self.instances_in_use = in_use
        if layout.shares:
            self.share_usage = ShareLedger(layout.shares, holders).usage()
