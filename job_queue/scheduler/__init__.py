"""Pure scheduling core: decisions over plain data, no I/O, no clock.

* :mod:`~job_queue.scheduler.snapshot` — what a pass decides on, and the plan it returns;
* :mod:`~job_queue.scheduler.order` — the queue's order, places in line, preemption order
  and the work a preemption throws away;
* :mod:`~job_queue.scheduler.passes` — the pass interface (:class:`SchedulingPass`);
* :mod:`~job_queue.scheduler.planner` — the single queue's pass;
* :mod:`~job_queue.scheduler.shares`, :mod:`~job_queue.scheduler.share_planner` — quota
  shares: the ledger, and the pass with shares;
* :mod:`~job_queue.scheduler.victims` — the one victim search both passes use;
* :mod:`~job_queue.scheduler.instances` — free and releasing instances (both passes);
* :mod:`~job_queue.scheduler.reservations` — training plans: when reserved instances count,
  who may use them, who must leave them.
"""

from job_queue.scheduler.order import LostWork, lost_work, positions, preemption_order, queue_order
from job_queue.scheduler.passes import SchedulingPass, make_planner, plan
from job_queue.scheduler.planner import Planner
from job_queue.scheduler.share_planner import SharePlanner
from job_queue.scheduler.shares import Share, ShareLedger, Strategy, total_capacity
from job_queue.scheduler.snapshot import ActiveJob, Plan, Policy, Preemption, WaitingJob
from job_queue.scheduler.victims import choose_victims

__all__ = [
    "ActiveJob",
    "LostWork",
    "Plan",
    "Planner",
    "Policy",
    "Preemption",
    "SchedulingPass",
    "Share",
    "ShareLedger",
    "SharePlanner",
    "Strategy",
    "WaitingJob",
    "choose_victims",
    "lost_work",
    "make_planner",
    "plan",
    "positions",
    "preemption_order",
    "queue_order",
    "total_capacity",
]
