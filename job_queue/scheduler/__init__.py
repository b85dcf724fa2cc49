"""Pure scheduling core: decisions over plain data, no I/O, no clock."""

from job_queue.scheduler.order import preemption_order, queue_order
from job_queue.scheduler.planner import Planner, choose_victims, make_planner, plan, positions
from job_queue.scheduler.share_planner import SharePlanner
from job_queue.scheduler.shares import Share, ShareLedger, Strategy, total_capacity
from job_queue.scheduler.snapshot import ActiveJob, Plan, Policy, Preemption, WaitingJob

__all__ = [
    "ActiveJob",
    "Plan",
    "Planner",
    "Policy",
    "Preemption",
    "Share",
    "ShareLedger",
    "SharePlanner",
    "Strategy",
    "WaitingJob",
    "choose_victims",
    "make_planner",
    "plan",
    "positions",
    "preemption_order",
    "queue_order",
    "total_capacity",
]
