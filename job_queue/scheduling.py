"""One scheduling pass over the table: from a snapshot and a reading of the waiting queue to
a plan (the pure pass is :mod:`job_queue.scheduler`; acting on the plan is
:mod:`job_queue.actions`)."""

from __future__ import annotations

from dataclasses import dataclass

from job_queue.layout import Layout
from job_queue.scheduler import LostWork, Plan, Planner, Policy, Snapshot
from job_queue.store.accounts import Accounts
from job_queue.store.queue_reading import QueueReading
from job_queue.store.table import UNCAPPED


@dataclass(frozen=True)
class View:
    """What a pass sees, from the holders one invocation read: the layout and policy in
    effect (shares and fair-share weights set at run time included), the snapshot, and a
    reading of the queue in the pass's order."""

    layout: Layout
    policy: Policy
    seen: Snapshot
    reading: QueueReading
    accounts: Accounts | None = None  # fair share's (None: it was never on)


@dataclass(frozen=True)
class Scheduled:
    """What a pass decided, and what it sees once that is carried out (after a pass that
    gave up, what it last read)."""

    plan: Plan
    seen: Snapshot
    reading: QueueReading  # the queue as the pass read it (it reads on for an answer)
    policy: Policy  # the policy it planned with


def plan_pass(
    seen: Snapshot, layout: Layout, reading: QueueReading, policy: Policy, lost_work: LostWork
) -> Plan:
    """The pass's plan, reading the waiting queue only as far as a job could still start:
    jobs on uncapped types only first, then each capped type's (and share's) partitions."""
    planner = Planner(seen, policy, lost_work)
    partitions = [s.name for s in layout.shares] or [None]
    if layout.uncapped:
        # Jobs on uncapped types only start at once, whatever waits for capped ones.
        shares = list(dict.fromkeys([None, *partitions]))
        for waiting in reading.waiting([UNCAPPED], shares=shares, multi=False):
            planner.offer(waiting)
    # The planner says which instance types are still open, so the store stops reading
    # a type's queue once a job of that type is held back.
    for waiting in reading.waiting(list(layout.capacity), planner.is_open, partitions):
        planner.offer(waiting)
        if not planner.open_types:
            break
    return planner.plan()
