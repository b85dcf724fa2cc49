"""Pure scheduling core: decisions over plain data, no I/O, no clock."""

from job_queue.scheduler.planner import Planner, choose_victims, plan, positions, queue_order
from job_queue.scheduler.snapshot import ActiveJob, Plan, Policy, Preemption, WaitingJob

__all__ = [
    "ActiveJob",
    "Plan",
    "Planner",
    "Policy",
    "Preemption",
    "WaitingJob",
    "choose_victims",
    "plan",
    "positions",
    "queue_order",
]
