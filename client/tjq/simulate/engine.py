"""The fast engine: a workload replayed through the scheduler core on a virtual clock.

It models what the queue and SageMaker do, in the order the real system does it:

* at each event — a job's SageMaker attempt ending (completed, failed at its max runtime,
  or stopped), then submissions — the queue runs one scheduling pass
  (:class:`job_queue.scheduler.Planner`, the Lambda's own code) and carries it out;
* a started attempt holds its instances at once and makes progress after
  ``start_latency``; a preempted one stops working at once and holds its instances for
  ``stop_latency``;
* a preempted job keeps its place in line and resumes from its last checkpoint (or zero);
* with a minimum run time, a pass also runs when a started job's protection ends (the
  Lambda's one-minute sweep does that, up to a minute later).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from job_queue.models import JobState, Outcome
from job_queue.scheduler import ActiveJob, Plan, Policy, Share, WaitingJob, plan, queue_order
from tjq.simulate.workload import WorkloadJob

# At equal times, attempts end, then jobs arrive, then protections end.
_ENDED, _SUBMITTED, _UNPROTECTED = 0, 1, 2


@dataclass(frozen=True)
class SimSettings:
    capacity: Mapping[str, int]  # with shares: their sum (see total_capacity)
    stop_latency: float = 0.0
    start_latency: float = 0.0
    policy: Policy = field(default_factory=Policy)
    shares: tuple[Share, ...] = ()


@dataclass
class AttemptRecord:
    """One SageMaker job run for a workload job: when it held its instances, how it ended."""

    job: str
    number: int
    start: float
    end: float | None = None  # when its instances were released
    outcome: Outcome | None = None  # COMPLETED, FAILED (its max runtime) or PREEMPTED
    work_done: float = 0.0  # seconds of progress this attempt made
    work_lost: float = 0.0  # of which thrown away by the preemption
    order: int = 0  # its end is processed, among equal times, in the order attempts started


@dataclass
class JobResult:
    spec: WorkloadJob
    state: JobState = JobState.PENDING
    first_start_s: float | None = None
    end_s: float | None = None
    preemptions: int = 0
    lost_instance_s: float = 0.0
    attempts: list[AttemptRecord] = field(default_factory=list)


@dataclass
class Decision:
    """A scheduling decision, for comparing engines: (time, "start"|"preempt", job)."""

    time: float
    action: str
    job: str


@dataclass
class SimResult:
    settings: SimSettings
    jobs: list[JobResult]
    decisions: list[Decision]
    idle_while_waiting_instance_s: float
    queue_depth: list[tuple[float, int]]  # (time, waiting jobs) after each event


# A scheduling decision: (active jobs, waiting jobs in queue order, capacity, now, policy).
Decide = Callable[[list[ActiveJob], Iterable[WaitingJob], Mapping[str, int], float, Policy], Plan]


def queue_decision(active, waiting, capacity, now, policy, shares=()) -> Plan:
    """The queue's own pass: the Lambda's planner, reading the queue only as far as needed."""
    return plan(waiting, active, capacity, now, policy, shares)


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
    decide = decide or partial(queue_decision, shares=settings.shares)
    return _Replay(jobs, settings, progress, decide).run()


class _Replay:
    def __init__(self, jobs, settings: SimSettings, progress, decide: Decide) -> None:
        self.settings = settings
        self.decide = decide
        self.capacity = dict(settings.capacity)
        self.results = [JobResult(spec) for spec in jobs]
        self.order = sorted(range(len(jobs)), key=lambda i: (jobs[i].submit_s, i))
        self.seq = {index: n for n, index in enumerate(self.order, start=1)}
        self.done_work = [0.0] * len(jobs)  # checkpointed progress kept across attempts
        self.events: list[tuple[float, int, int, int, int]] = []
        self.counter = 0
        self.waiting_keys: list[tuple[int, int]] = []  # (-priority, seq), sorted
        self.waiting: dict[tuple[int, int], int] = {}
        # How many waiting jobs need n instances of a type: for idle_while_waiting.
        self.waiting_sizes: dict[str, Counter[int]] = {t: Counter() for t in self.capacity}
        self.index_of = {spec.name: i for i, spec in enumerate(jobs)}
        self.waiting_view = [
            WaitingJob(
                job.name,
                job.priority,
                self.seq[i],
                job.demand,
                submitted_at=job.submit_s,
                max_runtime=job.max_runtime_s,
                share=job.share if settings.shares else None,
            )
            for i, job in enumerate(jobs)
        ]
        self.active: dict[int, tuple[JobState, AttemptRecord]] = {}
        # What the scheduler sees of each job, built once per change rather than per pass.
        self.active_view: dict[int, ActiveJob] = {}
        self.decisions: list[Decision] = []
        self.idle = 0.0
        self.depth: list[tuple[float, int]] = []
        self.progress = progress
        for index in self.order:
            self._push(jobs[index].submit_s, _SUBMITTED, index, 0)

    def run(self) -> SimResult:
        handled, total = 0, len(self.results)
        now = None
        while self.events:
            time, kind, _, index, attempt = heapq.heappop(self.events)
            if now is not None and time > now:
                self._account_idle(now, time)
            now = time
            if kind == _SUBMITTED:
                self._enqueue(index)
                handled += 1
                if self.progress and handled % 1000 == 0:
                    self.progress(handled, total)
            elif kind == _UNPROTECTED:
                if not self.waiting_keys or not self._is_current(index, attempt):
                    continue  # nobody waits to preempt it, or it ended already
            elif not self._end_attempt(index, attempt, now):
                continue  # a stale event: the attempt was stopped earlier
            self._schedule(now)
            self.depth.append((now, len(self.waiting_keys)))
        if self.progress:
            self.progress(total, total)
        return SimResult(self.settings, self.results, self.decisions, self.idle, self.depth)

    # -- events -----------------------------------------------------------------------------

    def _push(self, time: float, kind: int, index: int, attempt: int, order: int = 0) -> int:
        """Queue an event; ``order`` breaks ties of time (by default, first pushed first)."""
        if not order:
            self.counter += 1
            order = self.counter
        heapq.heappush(self.events, (time, kind, order, index, attempt))
        return order

    def _enqueue(self, index: int) -> None:
        key = queue_order(self.waiting_view[index])
        bisect.insort(self.waiting_keys, key)
        self.waiting[key] = index
        spec = self.results[index].spec
        self.waiting_sizes[spec.instance_type][spec.instance_count] += 1

    def _is_current(self, index: int, number: int) -> bool:
        _, attempt = self.active.get(index, (None, None))
        return attempt is not None and attempt.number == number

    def _end_attempt(self, index: int, number: int, now: float) -> bool:
        if not self._is_current(index, number):
            return False
        state, attempt = self.active[index]
        result = self.results[index]
        spec = result.spec
        attempt.end = now
        del self.active[index]
        del self.active_view[index]
        if state == JobState.PREEMPTING:
            attempt.outcome = Outcome.PREEMPTED
            result.preemptions += 1
            stopping = self.settings.stop_latency * spec.instance_count
            result.lost_instance_s += attempt.work_lost * spec.instance_count + stopping
            result.state = JobState.PREEMPTED
            self._enqueue(index)
            return True
        if attempt.work_done + self.done_work[index] >= spec.duration_s - 1e-9:
            attempt.outcome, result.state = Outcome.COMPLETED, JobState.COMPLETED
        else:
            attempt.outcome, result.state = Outcome.FAILED, JobState.FAILED  # max runtime
        result.end_s = now
        return True

    # -- a scheduling pass ------------------------------------------------------------------

    def _schedule(self, now: float) -> None:
        decided = self.decide(
            list(self.active_view.values()),
            (self.waiting_view[self.waiting[key]] for key in self.waiting_keys),
            self.capacity,
            now,
            self.settings.policy,
        )
        for preemption in decided.preemptions:
            self._preempt(self.index_of[preemption.victim.name], now)
        for waiting in decided.starts:
            self._start(self.waiting.pop(queue_order(waiting)), now)

    def _start(self, index: int, now: float) -> None:
        result = self.results[index]
        spec = result.spec
        key = queue_order(self.waiting_view[index])
        del self.waiting_keys[bisect.bisect_left(self.waiting_keys, key)]
        sizes = self.waiting_sizes[spec.instance_type]
        sizes[spec.instance_count] -= 1
        if not sizes[spec.instance_count]:
            del sizes[spec.instance_count]
        attempt = AttemptRecord(spec.name, len(result.attempts) + 1, now)
        result.attempts.append(attempt)
        result.state = JobState.RUNNING
        if result.first_start_s is None:
            result.first_start_s = now
        self.active[index] = (JobState.RUNNING, attempt)
        self.active_view[index] = self._active_job(index, JobState.RUNNING, attempt)
        self.decisions.append(Decision(now, "start", spec.name))
        remaining = spec.duration_s - self.done_work[index]
        work = remaining if spec.max_runtime_s is None else min(remaining, spec.max_runtime_s)
        attempt.work_done = work  # until a preemption says otherwise
        attempt.order = self._push(
            now + self.settings.start_latency + work, _ENDED, index, attempt.number
        )
        if self.settings.policy.min_run_s and self.settings.policy.preemption:
            self._push(now + self.settings.policy.min_run_s, _UNPROTECTED, index, attempt.number)

    def _preempt(self, index: int, now: float) -> None:
        _, attempt = self.active[index]
        spec = self.results[index].spec
        self.active[index] = (JobState.PREEMPTING, attempt)
        self.active_view[index] = self._active_job(index, JobState.PREEMPTING, attempt)
        self.decisions.append(Decision(now, "preempt", spec.name))
        worked = min(attempt.work_done, max(0.0, now - attempt.start - self.settings.start_latency))
        total = self.done_work[index] + worked
        # Work since the last checkpoint is lost (all of it without checkpoints).
        kept = (
            math.floor(total / spec.checkpoint_s) * spec.checkpoint_s if spec.checkpoint_s else 0.0
        )
        attempt.work_done = worked
        attempt.work_lost = total - kept
        self.done_work[index] = kept
        self._push(now + self.settings.stop_latency, _ENDED, index, attempt.number, attempt.order)

    # -- bookkeeping ------------------------------------------------------------------------

    def _active_job(self, index: int, state: JobState, attempt: AttemptRecord) -> ActiveJob:
        spec = self.results[index].spec
        return ActiveJob(
            spec.name,
            spec.priority,
            self.seq[index],
            spec.demand,
            state,
            attempt.start,
            max_runtime=spec.max_runtime_s,
            share=spec.share if self.settings.shares else None,
        )

    def _account_idle(self, start: float, end: float) -> None:
        if not self.waiting_keys:
            return
        free = dict(self.capacity)
        for index in self.active:
            spec = self.results[index].spec
            free[spec.instance_type] -= spec.instance_count
        for itype, sizes in self.waiting_sizes.items():
            if free[itype] > 0 and sizes and min(sizes) <= free[itype]:
                self.idle += free[itype] * (end - start)
