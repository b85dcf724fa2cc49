"""What one invocation did, for its metrics (starts and their waits, preemptions, usage) and
the queue's events (the state changes it wrote)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from job_queue.layout import Layout
from job_queue.ledger import UsageRecord
from job_queue.queue_events import Change, StateChange
from job_queue.scheduler import ActiveJob
from job_queue.scheduler.shares import ShareUsage, usage_with_plans
from job_queue.scheduler.snapshot import OutsideJob, WarmPool
from job_queue.scheduler.waiting_for import Reason, WaitingFor


@dataclass
class Report:
    """Filled in by the service as it works; the handler turns it into metrics and events."""

    waits_at_start: list[float] = field(default_factory=list)
    warm_starts: int = 0  # of those starts, how many on a warm pool
    preemptions: int = 0
    lost_instance_seconds: list[float] = field(default_factory=list)  # per preemption (estimated)
    refused_starts: int = 0  # CreateTrainingJob refused for capacity or throttling (retried)
    capacity: dict[str, int] = field(default_factory=dict)  # per capped type, as in effect
    instances_in_use: dict[str, int] = field(default_factory=dict)  # jobs and pools
    warm_pool_instances: dict[str, int] = field(default_factory=dict)  # of those, pools
    queue_depth: int | None = None
    share_usage: list[ShareUsage] = field(default_factory=list)
    waiting_by_share: dict[str, int] = field(default_factory=dict)
    waiting_by_reason: dict[str, int] = field(default_factory=dict)  # after a sweep's pass
    blocked: int = 0  # jobs first in line past their HeadOfLineLimits, this sweep
    outside_instances: dict[str, int] = field(default_factory=dict)  # jobs it did not start
    # For the queue's events: the state changes it wrote, and the pools it released.
    changes: list[Change] = field(default_factory=list)
    # What the usage ledger recorded: billable instance-seconds by share (None: no share).
    billable_instance_s: dict[str | None, float] = field(default_factory=dict)

    def billed(self, record: UsageRecord | None) -> None:
        """The ledger recorded ``record`` (None: nothing)."""
        if record is not None and record.billable_instance_s:
            held = self.billable_instance_s
            held[record.share] = held.get(record.share, 0.0) + record.billable_instance_s

    def submitted_waiting(self, job: str, why: WaitingFor | None) -> None:
        """The submission of ``job`` is to say why it waits (its first code), in its event."""
        self.changes = [
            replace(c, waiting_for=why)
            if isinstance(c, StateChange) and c.job == job and c.from_state is None
            else c
            for c in self.changes
        ]

    def count_reasons(self, why: Iterable[WaitingFor], unread: int) -> None:
        """How many waiting jobs wait for each reason after the sweep's pass: ``why`` for
        those a replay reads (the first HORIZON of each partition), and ``unread`` more that
        wait behind them (``queue-order``)."""
        counts = Counter(reason.code.value for reason in why)
        if unread > 0:
            counts[Reason.QUEUE_ORDER.value] += unread
        self.waiting_by_reason = dict(sorted(counts.items()))

    def record_usage(
        self,
        jobs: Iterable[ActiveJob],
        pools: Iterable[WarmPool],
        layout: Layout,
        outside: Iterable[OutsideJob] = (),
        now: float = 0.0,
    ) -> None:
        """The instances held per type — by jobs and idle warm pools, and by jobs started
        outside the queue — (and per share) as a pass found them."""
        jobs, pools = list(jobs), list(pools)
        self.capacity = dict(layout.capacity)
        self.instances_in_use = _per_type([*jobs, *pools], layout)
        self.warm_pool_instances = _per_type(pools, layout)
        self.outside_instances = _per_type(outside, layout)
        if layout.shares:
            self.share_usage = usage_with_plans(layout.shares, [*jobs, *pools], layout.plans, now)


def _per_type(holders, layout: Layout) -> dict[str, int]:
    counts = dict.fromkeys(layout.capacity, 0)
    for holder in holders:
        for itype, count in holder.demand.items():
            counts[itype] = counts.get(itype, 0) + count
    return counts
