"""The fast engine: a workload replayed through the scheduler core on a virtual clock.

It models what the queue and SageMaker do, in the order the real system does it:

* at each event — a job's SageMaker attempt ending (completed, failed at its max runtime,
  or stopped), then submissions — the queue runs one scheduling pass
  (:class:`job_queue.scheduler.Planner`, the Lambda's own code) and carries it out;
* a started attempt holds its instances at once and makes progress after
  ``start_latency``; a preempted one stops working at once and holds its instances for
  ``stop_latency``;
* a preempted job keeps its place in line and resumes from its last checkpoint (or zero; all
  its progress when it saves on stop); the queue chooses victims by the work they would
  lose, knowing when each job last saved (as the Lambda reads it from S3);
* with a minimum run time, a pass also runs when a started job's protection ends (the
  Lambda's one-minute sweep does that, up to a minute later);
* a training plan's reserved instances count while a reservation is open (a pass runs as
  one opens or stops counting); jobs on a plan leave no warm pool, and one still running
  as its reservation ends is preempted and requeued, as in the Lambda;
* an attempt of a job with a keep-alive leaves a warm pool when it ends (SageMaker's warm-pool
  quota is assumed to allow it): the pool holds the instances until it expires, is
  released (its instances free at once) or a job starts on it -- a job whose configuration
  matches always does, as SageMaker starts it there, and it makes progress after
  ``warm_start_latency``. A start with neither a pool nor free instances is refused (only a
  baseline that does not count pools plans one) and the job stays in line; a pass runs again
  a minute later (as a one-minute schedule would retry it).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial

from job_queue.models import JobState
from job_queue.scheduler import (
    ActiveJob,
    LostWork,
    Plan,
    Policy,
    Snapshot,
    WaitingJob,
    after,
    plan,
    reservations,
)
from job_queue.scheduler.fair_share import Usage
from job_queue.scheduler.instances import free_and_releasing
from job_queue.scheduler.snapshot import WarmPool
from tjq.simulate.attempt_ends import AttemptEnds
from tjq.simulate.dependents import OutOfLine
from tjq.simulate.records import (
    AttemptRecord,
    Decision,
    JobResult,
    PoolRecord,
    SimResult,
    SimSettings,
)
from tjq.simulate.spending import Spending
from tjq.simulate.waiting import Waiting
from tjq.simulate.warm_pools import WarmPools
from tjq.simulate.workload import WorkloadJob

__all__ = ["Decision", "SimResult", "SimSettings", "queue_decision", "simulate"]

# At equal times, attempts end, then jobs arrive, then protections end, then refused starts
# are retried, then reservations open or close, then attempts reach a job's total run time.
_ENDED, _SUBMITTED, _UNPROTECTED, _RETRY, _RESERVATION, _TOTAL = 0, 1, 2, 3, 4, 5
RETRY_SECONDS = 60.0


# A scheduling decision: (what the pass sees, waiting jobs in queue order, policy).
Decide = Callable[[Snapshot, Iterable[WaitingJob], Policy], Plan]


def queue_decision(
    seen: Snapshot,
    waiting: Iterable[WaitingJob],
    policy: Policy,
    saved_at: Callable[[ActiveJob], float | None] | None = None,
) -> Plan:
    """The queue's own pass: the Lambda's planner, reading the queue only as far as needed
    (``saved_at``: when a running job last saved, as the Lambda reads it)."""
    return plan(seen, waiting, policy, LostWork(seen.now, saved_at))


def simulate(
    jobs: Sequence[WorkloadJob],
    settings: SimSettings,
    progress: Callable[[int, int], None] | None = None,
    decide: Decide | None = None,
) -> SimResult:
    """Replay ``jobs`` (submission order breaks ties of submit time and priority).

    ``decide`` is the scheduling pass; the default is the queue's own (with the settings'
    quota shares), the baselines of the benchmark pass theirs.
    """
    return _Replay(jobs, settings, progress, decide).run()


class _Replay(AttemptEnds, WarmPools, Spending):
    def __init__(self, jobs, settings: SimSettings, progress, decide: Decide | None) -> None:
        self.settings = settings
        self.decide = decide or partial(queue_decision, saved_at=self._saved_at)
        self.capacity = dict(settings.capacity)
        self.results = [JobResult(spec) for spec in jobs]
        self.order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_s, i))
        self.seq = {index: n for n, index in enumerate(self.order, start=1)}
        self.done_work = [0.0] * len(jobs)  # checkpointed progress kept across attempts
        self.events: list[tuple[float, int, int, int, int]] = []
        self.counter = 0
        self.index_of = {spec.name: i for i, spec in enumerate(jobs)}
        self.waiting_view = [
            WaitingJob(
                job.name,
                job.priority,
                self.seq[i],
                self._counted(job),
                submitted_at=job.submit_s,
                max_runtime=job.max_runtime_s,
                share=job.share if settings.shares else None,
                warm_key=job.configuration,
                helpers={} if self._counted(job) else job.demand,
                checkpoint=job.checkpoint,
                submitter=job.submitter,
            )
            for i, job in enumerate(jobs)
        ]
        fair = settings.policy.fair_share is not None
        self.queue = Waiting(self.waiting_view, self.capacity, fair)
        self.out_of_line = OutOfLine(self.results)
        self.usage = Usage()  # fair share: the usage of attempts and pools that ended
        self._start_spending()
        self.pools: dict[str, tuple[WarmPool, PoolRecord]] = {}  # idle, oldest first
        self.pool_records: list[PoolRecord] = []
        self.retry_pending = False
        self.active: dict[int, tuple[JobState, AttemptRecord]] = {}
        # What the scheduler sees of each job, built once per change rather than per pass.
        self.active_view: dict[int, ActiveJob] = {}
        self.decisions: list[Decision] = []
        self.idle = 0.0
        self.depth: list[tuple[float, int]] = []
        self.progress = progress
        self.on_plan: dict[int, str] = {}  # running job -> the plan it runs on
        for index in self.order:
            self._push(jobs[index].submit_s, _SUBMITTED, index, 0)
        for training_plan in settings.plans:
            for r in training_plan.reservations:
                self._push(r.start, _RESERVATION, 0, 0)
                self._push(r.usable_until, _RESERVATION, 0, 0)

    def run(self) -> SimResult:
        handled, total = 0, len(self.results)
        now = None
        while self.events:
            time, kind, _, index, attempt = heapq.heappop(self.events)
            if now is not None and time > now:
                self._account_idle(now, time)
            now = time
            if kind == _SUBMITTED:
                if not self.out_of_line.add(index):
                    self._enqueue(index)
                handled += 1
                if self.progress and handled % 1000 == 0:
                    self.progress(handled, total)
            elif kind == _UNPROTECTED:
                if not self.queue or not self._is_current(index, attempt):
                    continue  # nobody waits to preempt it, or it ended already
            elif kind == _RETRY:
                self.retry_pending = False
            elif kind == _RESERVATION:
                pass  # a pass counts the plan's instances (or a budget's window) anew
            elif kind == _TOTAL:
                if not self._is_current(index, attempt):
                    continue  # it ended before its max-total-runtime
                self._stop(index, now, JobState.CANCELLING)  # for good: it ends failed
            elif not self._end_attempt(index, attempt, now):
                continue  # a stale event: the attempt was stopped earlier
            self._schedule(now)
            self.depth.append((now, len(self.queue) + len(self.out_of_line)))
        if self.progress:
            self.progress(total, total)
        self._expire_pools(math.inf)
        return SimResult(
            self.settings, self.results, self.decisions, self.idle, self.depth, self.pool_records
        )

    # -- events -----------------------------------------------------------------------------

    def _push(self, time: float, kind: int, index: int, attempt: int, order: int = 0) -> int:
        """Queue an event; ``order`` breaks ties of time (by default, first pushed first)."""
        if not order:
            self.counter += 1
            order = self.counter
        heapq.heappush(self.events, (time, kind, order, index, attempt))
        return order

    def _enqueue(self, index: int) -> None:
        self.queue.add(index, self._size(index))

    def _size(self, index: int) -> tuple[str, int] | None:
        """The type and count of instances a row waits for (None: an uncapped type)."""
        spec = self.results[index].spec
        return (spec.instance_type, spec.instance_count) if self._counted(spec) else None

    def _counted(self, spec: WorkloadJob) -> dict[str, int]:
        """The instances of a row that count (none, on an uncapped type)."""
        return {} if spec.instance_type in self.settings.uncapped else spec.demand

    def _is_current(self, index: int, number: int) -> bool:
        _, attempt = self.active.get(index, (None, None))
        return attempt is not None and attempt.number == number

    # -- a scheduling pass ------------------------------------------------------------------

    def _schedule(self, now: float) -> None:
        self._now = now  # for _saved_at
        ready, doomed = self.out_of_line.settle()  # the pass's first step, as the queue's
        for index in ready:
            self._enqueue(index)
        for index, why in doomed.items():
            result = self.results[index]
            result.state, result.failure_reason, result.end_s = JobState.CANCELLED, why, now
        self._expire_pools(now)
        seen = Snapshot(
            now,
            self.capacity,
            tuple(self.active_view.values()),
            tuple(pool for pool, _ in self.pools.values()),
            plans=self.settings.plans,
            shares=self.settings.shares,
            usage=self.usage,
        )
        seen = self._with_budgets(seen)
        decided = self.decide(
            seen, self.queue.in_order(seen, self.settings.policy.fair_share), self.settings.policy
        )
        self._wake_when_budgets_free(decided, lambda at: self._push(at, _RESERVATION, 0, 0))
        for release in decided.releases:
            self._end_pool(release.pool.name, now, "released")
        for preemption in decided.preemptions:
            self._preempt(self.index_of[preemption.victim.name], now)
        started = []
        for waiting in decided.starts:
            index = self.queue.index_of(waiting)
            planned = decided.warm.get(waiting.name)
            on_plan = decided.plans.get(waiting.name)
            # A job on a plan starts on neither a pool nor on-demand instances.
            pool = planned.name if planned else None if on_plan else self._matching_pool(waiting)
            # Every pass counts what jobs hold; only one blind to pools plans a start that
            # may not fit.
            # (Once this pass's earlier starts have taken their instances.)
            taken = replace(decided, starts=tuple(started))
            if pool is None and not on_plan and self.pools and not self._fits(waiting, seen, taken):
                self.results[index].refused_starts += 1  # it stays in line
                if not self.retry_pending:
                    self.retry_pending = True
                    self._push(now + RETRY_SECONDS, _RETRY, index, 0)
                continue
            self.queue.remove(index, self._size(index))
            if pool is not None:
                self._end_pool(pool, now, "reused")
            if on_plan:
                self.on_plan[index] = on_plan
            self._start(index, now, warm=pool is not None)
            started.append(waiting)
        if started or decided.preemptions:
            # What the scheduler sees next: the pass's decisions as SageMaker carried them out.
            carried = after(seen, replace(decided, starts=tuple(started)))
            self.active_view = {self.index_of[job.name]: job for job in carried.active}

    def _start(self, index: int, now: float, warm: bool = False) -> None:
        result = self.results[index]
        spec = result.spec
        latency = self.settings.warm_start_latency if warm else self.settings.start_latency
        number, plan = len(result.attempts) + 1, self.on_plan.get(index)
        attempt = AttemptRecord(spec.name, number, now, warm=warm, latency=latency, plan=plan)
        result.attempts.append(attempt)
        result.state = JobState.RUNNING
        if result.first_start_s is None:
            result.first_start_s = now
        self.active[index] = (JobState.RUNNING, attempt)
        self.decisions.append(Decision(now, "start", spec.name))
        remaining = spec.duration_s - self.done_work[index]
        work = remaining if spec.max_runtime_s is None else min(remaining, spec.max_runtime_s)
        attempt.work_done = work  # until a preemption says otherwise
        attempt.order = self._push(now + latency + work, _ENDED, index, attempt.number)
        if self.settings.policy.min_run_s and self.settings.policy.preemption:
            self._push(now + self.settings.policy.min_run_s, _UNPROTECTED, index, attempt.number)
        cap = spec.total_runtime_cap
        if cap is not None:  # the sweep stops it once its attempts ran longer than that in all
            ran = sum(a.end - a.start for a in result.attempts if a.end is not None)
            self._push(now + max(0.0, cap - ran) + 1.0, _TOTAL, index, attempt.number)

    def _preempt(self, index: int, now: float) -> None:
        self._stop(index, now, JobState.PREEMPTING)

    def _stop(self, index: int, now: float, why: JobState) -> None:
        """Stop the job's attempt: a preemption (PREEMPTING), or for good (CANCELLING)."""
        _, attempt = self.active[index]
        spec = self.results[index].spec
        self.active[index] = (why, attempt)
        if why is JobState.PREEMPTING:
            self.decisions.append(Decision(now, "preempt", spec.name))
        worked = min(attempt.work_done, max(0.0, now - attempt.start - attempt.latency))
        total = self.done_work[index] + worked
        kept = spec.kept_work(total)  # work since the last checkpoint is lost
        attempt.work_done = worked
        attempt.work_lost = total - kept
        self.done_work[index] = kept
        self._push(now + self.settings.stop_latency, _ENDED, index, attempt.number, attempt.order)

    # -- bookkeeping ------------------------------------------------------------------------

    def _saved_at(self, job: ActiveJob) -> float | None:
        """When a running job last saved (what its newest checkpoint object would say)."""
        index = self.index_of[job.name]
        _, attempt = self.active[index]
        working_since = attempt.start + attempt.latency
        return self.results[index].spec.last_saved_at(
            self.done_work[index], working_since, self._now
        )

    def _fits(self, job: WaitingJob, seen: Snapshot, taken: Plan) -> bool:
        """Whether the job's on-demand instances are free (held by neither job nor pool) once
        what ``taken`` started from ``seen`` holds its own."""
        seen = after(seen, taken)
        free = self._free(seen.now, seen.active)
        return all(count <= free[itype] for itype, count in job.demand.items())

    def _free(self, now: float, active: Iterable[ActiveJob] | None = None) -> dict[str, int]:
        """Free instances per capacity key: on-demand per type, and per plan at ``now``
        (``active``: the jobs that hold instances; by default, those of the last pass)."""
        plans = self.settings.plans
        held = self.active_view.values() if active is None else active
        active = [reservations.on_plan(job, plans) for job in held]
        capacity = reservations.with_plans(self.capacity, plans, now)
        pools = [pool for pool, _ in self.pools.values()]
        free, _ = free_and_releasing(capacity, active, pools)
        return free

    def _account_idle(self, start: float, end: float) -> None:
        if not self.queue:
            return
        for key, free in self._free(start).items():
            sizes = self.queue.sizes[reservations.key_type(key)]
            if free > 0 and sizes and min(sizes) <= free:
                self.idle += free * (end - start)
