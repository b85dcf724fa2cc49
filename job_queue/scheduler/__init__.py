"""Pure scheduling core: decisions over plain data, no I/O, no clock.

* :mod:`~job_queue.scheduler.snapshot` — what a pass decides on, and the plan it returns;
* :mod:`~job_queue.scheduler.order` — the queue's order, places in line, preemption order
  and the work a preemption throws away;
* :mod:`~job_queue.scheduler.planner` — the scheduling pass, one for every layout (the
  single queue is one share that holds all the capacity), and its rulebook;
* :mod:`~job_queue.scheduler.pass_state` — what a pass counts while it decides;
* :mod:`~job_queue.scheduler.shares` — quota shares and their ledger;
* :mod:`~job_queue.scheduler.room`, :mod:`~job_queue.scheduler.victims` — a job's room
  (instances and quota), and the one victim search;
* :mod:`~job_queue.scheduler.instances`, :mod:`~job_queue.scheduler.pools` — free and
  releasing instances, idle warm pools;
* :mod:`~job_queue.scheduler.backfill` — when a held job could start at the latest;
* :mod:`~job_queue.scheduler.reservations` — training plans: when reserved instances count,
  who may use them, who must leave them.
"""

from job_queue.scheduler.order import LostWork, lost_work, positions, preemption_order, queue_order
from job_queue.scheduler.planner import Planner, plan
from job_queue.scheduler.shares import Share, ShareLedger, Strategy, total_capacity
from job_queue.scheduler.snapshot import (
    ActiveJob,
    Plan,
    Policy,
    Preemption,
    Snapshot,
    WaitingJob,
    after,
)
from job_queue.scheduler.victims import choose_victims

__all__ = [
    "ActiveJob",
    "LostWork",
    "Plan",
    "Planner",
    "Policy",
    "Preemption",
    "Share",
    "ShareLedger",
    "Snapshot",
    "Strategy",
    "WaitingJob",
    "after",
    "choose_victims",
    "lost_work",
    "plan",
    "positions",
    "preemption_order",
    "queue_order",
    "total_capacity",
]
