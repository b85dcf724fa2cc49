"""Baselines the benchmark compares the queue with, as scheduling passes for the engine.

* :func:`fifo` — a plain capped queue: first come, first served, no priorities, no
  preemption (run it on the workload with every priority set to 0, see :func:`unprioritised`);
* :func:`blog_decision` — the AWS blog's ``manage_queue``, reimplemented: it caps its view of
  the queue at the capacity, counts stopping jobs as about to free slots, and preempts the
  lowest-priority running jobs (the most recently created first among equals) pairwise
  against the waiting jobs. It counts jobs, not instances: one instance type, one instance
  per job. One simplification favours it: a job it preempted is not restarted before its
  stop finishes (the blog would restart it at once, under a new name).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from itertools import islice

from job_queue.models import JobState
from job_queue.scheduler import Plan, Policy, Preemption, Snapshot, WaitingJob
from tjq.simulate.engine import queue_decision
from tjq.simulate.workload import WorkloadJob

NO_PREEMPTION = Policy(preemption=False, backfill=False)  # a plain capped queue


def fifo(seen: Snapshot, waiting: Iterable[WaitingJob], policy: Policy) -> Plan:
    return queue_decision(seen, waiting, NO_PREEMPTION)


def unprioritised(jobs: list[WorkloadJob]) -> list[WorkloadJob]:
    """The same jobs with one priority for all (for :func:`fifo`)."""
    return [replace(job, priority=0) for job in jobs]


def blog_decision(seen: Snapshot, waiting: Iterable[WaitingJob], policy: Policy) -> Plan:
    # The blog counts running jobs only: warm pools are invisible to it (SageMaker then
    # starts a matching job on one, and refuses a start that finds no instance free).
    (max_capacity,) = seen.capacity.values()
    active = seen.active
    pending = list(islice(waiting, max_capacity))
    if not pending:
        return Plan()
    running = [job for job in active if not job.state.is_stopping]
    total_stopping = sum(1 for job in active if job.state.is_stopping)
    free_slots = max_capacity - len(running) - total_stopping
    to_start = max(0, min(len(pending), free_slots))
    starts = pending[:to_start]
    still_pending = pending[to_start:]
    test_for_preemption = len(still_pending) - total_stopping
    if test_for_preemption <= 0:
        return Plan(starts=tuple(starts))
    test_priority = still_pending[total_stopping:]
    # ListTrainingJobs lists the newest first; the blog's sort by priority keeps that order.
    newest_first = sorted(
        (job for job in running if job.state == JobState.RUNNING), key=lambda j: -j.started_at
    )
    sorted_running = sorted(newest_first, key=lambda job: job.priority)
    preemptions = []
    index = 0
    while (
        index < test_for_preemption
        and index < len(sorted_running)
        and index < len(test_priority)
        and test_priority[index].priority > sorted_running[index].priority
    ):
        victim = sorted_running[index]
        preemptions.append(Preemption(victim, test_priority[index].name, "blog baseline"))
        index += 1
    return Plan(starts=tuple(starts), preemptions=tuple(preemptions))
