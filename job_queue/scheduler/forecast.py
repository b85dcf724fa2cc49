"""Expected start times: the queue as it is now, played forward on the scheduler's own pass.

The replay takes the active jobs, the waiting jobs, the idle warm pools, the quota shares and
the training plans as they are, assumes nobody submits, cancels or reprioritises anything,
and runs the same pass the Lambda runs (:func:`~job_queue.scheduler.planner.plan`) each time
something would change: a job's attempt ends, a stopped job's instances free, a job's retry
back-off or minimum run time ends, a reservation opens or stops counting. It is played twice:

* **at the latest**: every attempt runs its whole ``MaxRuntimeInSeconds`` (plus the policy's
  provisioning allowance), the bound the backfill rule already trusts. Unless more urgent work
  arrives, capacity shrinks or SageMaker refuses a start, a job starts no later than this.
  No bound exists when a job it waits for has no ``MaxRuntimeInSeconds``.
* **likely**: every attempt runs as long as the queue's completed jobs of its instance type
  and priority ran on average (:class:`RunHistory`), or its bound when there is no history.

Simplifications, on purpose: an attempt that ends in the replay leaves no warm pool (the
pass would release a pool another job needs at once); a preempted job restarts its whole run
(the queue does not know how far its checkpoints got); jobs started outside the queue hold
their instances for ever.

The work is bounded: the replay plays the first :data:`HORIZON` waiting jobs of each
instance type (and share), which is all that can start before them, and at most
:data:`MAX_PASSES` passes. Jobs further back get no estimate.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from job_queue.models import Demand, JobState
from job_queue.scheduler.dependencies import Dependency, Dependent, settle
from job_queue.scheduler.fair_share import charge
from job_queue.scheduler.order import queue_order
from job_queue.scheduler.planner import plan
from job_queue.scheduler.snapshot import (
    ActiveJob,
    Policy,
    Snapshot,
    WaitingJob,
    after,
    started_names,
)

HORIZON = 100  # waiting jobs per partition (instance type, share) the replay plays
MAX_PASSES = 1000
STOP_S = 120.0  # SageMaker kills a stopped job's container 120 s after its SIGTERM
OVERDUE_S = 60.0  # a job past its expected run time is expected to end by the next sweep

# How long an attempt of a job runs in a replay (math.inf: not known).
RunTime = Callable[[WaitingJob | ActiveJob], float]


def run_key(demand: Demand, priority: int) -> tuple[str, int]:
    """The jobs whose run times are alike: the same instance type(s) and priority."""
    return "+".join(sorted(demand)), priority


@dataclass(frozen=True)
class RunHistory:
    """How long the queue's completed jobs ran (their last attempt, start to end), per
    :func:`run_key`: ``runs[key] = (completed jobs, total seconds)``."""

    runs: Mapping[tuple[str, int], tuple[int, float]]

    def count(self, job: WaitingJob | ActiveJob) -> int:
        return self.runs.get(run_key(job.demand, job.priority), (0, 0.0))[0]

    def typical(self, job: WaitingJob | ActiveJob) -> float | None:
        """The mean run time of jobs like ``job`` (None: none completed yet)."""
        count, total = self.runs.get(run_key(job.demand, job.priority), (0, 0.0))
        return total / count if count else None


@dataclass(frozen=True)
class ExpectedStart:
    """When a waiting job is expected to start (epoch seconds; None: not foreseen)."""

    at_latest: float | None
    likely: float | None
    based_on: int  # completed jobs behind the run times the likely estimate used


def partition(job: WaitingJob) -> tuple[str, str | None]:
    """The waiting partition a job is read from: its instance type (``*``: several), share."""
    return (next(iter(job.demand)) if len(job.demand) == 1 else "*", job.share)


def within_horizon(waiting: Iterable[WaitingJob], horizon: int = HORIZON) -> list[WaitingJob]:
    """The waiting jobs (in queue order) a replay plays: the first ``horizon`` of each
    instance type and share."""
    seen: Counter[tuple[str, str | None]] = Counter()
    kept = []
    for job in waiting:
        seen[partition(job)] += 1
        if seen[partition(job)] <= horizon:
            kept.append(job)
    return kept


@dataclass(frozen=True)
class OutOfLine:
    """The jobs out of line for their dependency (each with what it waits for), and the
    states of their parents that are not (as the table has them now)."""

    jobs: Sequence[tuple[WaitingJob, Dependency]] = ()
    states: Mapping[str, JobState | None] = field(default_factory=dict)


NOBODY_OUT_OF_LINE = OutOfLine()


def expected_starts(
    seen: Snapshot,
    waiting: Sequence[WaitingJob],
    history: RunHistory,
    policy: Policy,
    out_of_line: OutOfLine = NOBODY_OUT_OF_LINE,
) -> dict[str, ExpectedStart]:
    """Each waiting job's expected start from ``seen`` (``waiting`` in queue order; only
    those :func:`within_horizon` keeps are played, and jobs the replays never start are
    absent). A job out of line joins the replay's line once its parents have ended in it as
    it needs (every attempt that ends in a replay completes): its start is after theirs."""
    waiting = within_horizon(waiting)

    def likely(job: WaitingJob | ActiveJob) -> float:
        typical = history.typical(job)
        return policy.bound(job.max_runtime) if typical is None else typical

    def bound(job: WaitingJob | ActiveJob) -> float:
        return policy.bound(job.max_runtime)

    latest = _Replay(seen, waiting, bound, policy, out_of_line).run()
    usual = _Replay(seen, waiting, likely, policy, out_of_line).run()
    waiting = [*waiting, *(job for job, _ in out_of_line.jobs)]
    # The history behind the estimate: that of every job it competes with for instances.
    seen_runs: dict[tuple[str, int], int] = {}
    for job in [*seen.active, *waiting]:
        seen_runs[run_key(job.demand, job.priority)] = history.count(job)
    based_on = {
        itype: sum(n for (label, _), n in seen_runs.items() if itype in label.split("+"))
        for itype in {t for job in waiting for t in job.demand}
    }
    expected = {}
    for job in waiting:
        at_latest, likely = latest.get(job.name), usual.get(job.name)
        if at_latest is not None and likely is not None:
            likely = min(likely, at_latest)  # jobs like it ran longer than their bound allows
        if at_latest is not None or likely is not None:
            expected[job.name] = ExpectedStart(
                at_latest, likely, max(based_on[t] for t in job.demand)
            )
    return expected


class _Replay:
    """One replay on a virtual clock: which waiting job starts when."""

    def __init__(
        self,
        seen: Snapshot,
        waiting: Sequence[WaitingJob],
        run_time: RunTime,
        policy: Policy,
        out_of_line: OutOfLine,
    ) -> None:
        self.seen = seen
        self.run_time = run_time
        self.policy = policy
        self.waiting = sorted(((queue_order(j), j) for j in waiting), key=lambda pair: pair[0])
        self.out_of_line = list(out_of_line.jobs)
        self.states = dict(out_of_line.states)  # of the parents, as the replay goes on
        self.started: dict[str, float] = {}
        self.wanted = {job.name for job in waiting} | {job.name for job, _ in self.out_of_line}
        # When each active job ends (a stopping one frees its instances soon).
        self.ends: dict[str, float] = {}
        for job in seen.active:
            if job.state.is_stopping:
                self.ends[job.name] = seen.now + STOP_S
            else:
                end = job.started_at + run_time(job)
                self.ends[job.name] = max(end, seen.now + OVERDUE_S)

    def run(self) -> dict[str, float]:
        for _ in range(MAX_PASSES):
            self._pass()
            if self.wanted <= self.started.keys():
                break
            later = self._next_change()
            if later is None:
                break
            self.seen = self.seen.at(later)
            self._end_attempts()
        return self.started

    def _settle(self) -> None:
        """The jobs out of line whose parents ended in the replay as they need join its line
        (the pass's own first step); those whose dependency can never hold drop out."""
        if not self.out_of_line:
            return
        known = dict(self.states)
        known.update((job.name, job.state) for job in self.seen.active)
        known.update((job.name, job.state) for _, job in self.waiting)
        settled = settle([Dependent(job.name, on) for job, on in self.out_of_line], known)
        ready, doomed = set(settled.ready), set(settled.doomed)
        for job, _ in self.out_of_line:
            if job.name in ready:
                bisect.insort(self.waiting, (queue_order(job), job), key=lambda pair: pair[0])
        self.out_of_line = [(j, on) for j, on in self.out_of_line if j.name not in ready | doomed]

    def _pass(self) -> None:
        self._settle()
        now = self.seen.now
        decided = plan(self.seen, (job for _, job in self.waiting), self.policy)
        self.seen = after(self.seen, decided)
        for preemption in decided.preemptions:
            self.ends[preemption.victim.name] = now + STOP_S
        if decided.starts:
            started = started_names(decided)
            self.waiting = [(key, j) for key, j in self.waiting if j.name not in started]
        for job in decided.starts:
            self.started.setdefault(job.name, now)
            self.ends[job.name] = now + self.run_time(job)

    def _next_change(self) -> float | None:
        """The earliest time after now at which a pass could decide something new."""
        now = self.seen.now
        times = list(self.ends.values())
        times += [job.not_before for _, job in self.waiting]
        if self.policy.min_run_s and self.policy.preemption:
            times += [
                job.started_at + self.policy.min_run_s
                for job in self.seen.active
                if job.state is JobState.RUNNING
            ]
        times += [p.next_change(now) or math.inf for p in self.seen.plans]
        later = min((t for t in times if t > now), default=math.inf)
        return None if later == math.inf else later

    def _end_attempts(self) -> None:
        now = self.seen.now
        ended = {name for name, end in self.ends.items() if end <= now}
        if not ended:
            return
        for job in self.seen.active:
            if job.name not in ended:
                continue
            del self.ends[job.name]
            if job.state is not JobState.PREEMPTING:  # it ended as the replay assumes
                cancelled = job.state is JobState.CANCELLING
                self.states[job.name] = JobState.CANCELLED if cancelled else JobState.COMPLETED
            # A job the queue was read with (requeued after the snapshot was read) is in
            # line already: it goes back only once.
            if job.state is JobState.PREEMPTING and all(
                w.name != job.name for _, w in self.waiting
            ):
                back = WaitingJob(
                    job.name,
                    job.priority,
                    job.seq,
                    job.demand,
                    state=JobState.PREEMPTED,
                    max_runtime=job.max_runtime,
                    share=job.share,
                    helpers=job.helpers,
                    checkpoint=job.checkpoint,
                    submitter=job.submitter,
                )
                bisect.insort(self.waiting, (queue_order(back), back), key=lambda pair: pair[0])
        usage, fair = self.seen.usage, self.policy.fair_share
        for job in self.seen.active:
            if job.name in ended:  # its use counts against its submitter from now on
                usage = charge(usage, job, job.started_at, now, fair)
        active = tuple(job for job in self.seen.active if job.name not in ended)
        self.seen = replace(self.seen, active=active, usage=usage)
