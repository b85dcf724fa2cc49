"""A scheduling pass: the interface both planners implement, and how to run one.

A pass is offered the waiting jobs one at a time, in queue order, and answers with a
:class:`Plan`. The single queue's :class:`~job_queue.scheduler.planner.Planner` and the
quota shares' :class:`~job_queue.scheduler.share_planner.SharePlanner` are the two; the
Lambda's service and the simulator both get theirs from :func:`make_planner`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from job_queue.scheduler.order import LostWork
from job_queue.scheduler.planner import DEFAULT_POLICY, Planner
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.share_planner import SharePlanner
from job_queue.scheduler.shares import Share
from job_queue.scheduler.snapshot import (
    ActiveJob,
    OutsideJob,
    Plan,
    Policy,
    WaitingJob,
    WarmPool,
)


class SchedulingPass(Protocol):
    """One pass over the queue. Offer the waiting jobs in queue order, stop once no type
    is open, then take the plan::

        planner = make_planner(active, capacity, now, policy, shares)
        for job in waiting_in_queue_order:
            planner.offer(job)
            if not planner.open_types:
                break
        plan = planner.plan()
    """

    @property
    def open_types(self) -> frozenset[str]:
        """Instance types for which a job later in the queue could still start."""

    def is_open(self, itype: str, share: str | None) -> bool:
        """Whether the waiting partition of ``itype`` (``*``: jobs that need several types)
        and ``share`` is still worth reading: a lazy reader stops reading a closed one."""

    def offer(self, job: WaitingJob) -> None:
        """Decide for the next waiting job in queue order."""

    def plan(self) -> Plan:
        """What the pass decided: the jobs to start and the jobs to preempt."""


def make_planner(
    active: Iterable[ActiveJob],
    capacity: Mapping[str, int],
    now: float,
    policy: Policy = DEFAULT_POLICY,
    shares: Sequence[Share] = (),
    pools: Iterable[WarmPool] = (),
    outside: Iterable[OutsideJob] = (),
    plans: Sequence[TrainingPlan] = (),
    lost_work: LostWork | None = None,
) -> SchedulingPass:
    """The single queue's :class:`Planner`, or with quota shares a :class:`SharePlanner`
    (whose capacity is the sum of the shares' limits); ``pools`` the idle warm pools,
    ``outside`` the jobs on capped types the queue did not start, ``plans`` the training
    plans of the capacity (single queue only: the settings refuse them with shares),
    ``lost_work`` what stopping a running job would throw away (by default, estimated from
    how the jobs declare they checkpoint)."""
    if shares:
        return SharePlanner(active, shares, now, policy, pools, outside, lost_work)
    return Planner(active, capacity, now, policy, pools, outside, plans, lost_work)


def plan(
    waiting: Iterable[WaitingJob],
    active: Iterable[ActiveJob],
    capacity: Mapping[str, int],
    now: float,
    policy: Policy = DEFAULT_POLICY,
    shares: Sequence[Share] = (),
    pools: Iterable[WarmPool] = (),
    outside: Iterable[OutsideJob] = (),
    plans: Sequence[TrainingPlan] = (),
    lost_work: LostWork | None = None,
) -> Plan:
    """Plan one pass over a queue (``waiting`` in queue order, read only as far as needed)."""
    planner = make_planner(active, capacity, now, policy, shares, pools, outside, plans, lost_work)
    for job in waiting:
        planner.offer(job)
        if not planner.open_types:
            break
    return planner.plan()
