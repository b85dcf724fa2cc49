"""The single queue's pass: which waiting jobs start and which running jobs are preempted.

Pure: no I/O, no clock. The same code runs in the Lambda and in the simulator.

Rules, in queue order (priority high to low, then submission order):

* A job whose configuration matches an idle warm pool starts on it (the oldest such pool).
  With warm affinity on (the policy's ``warm_affinity_s``), a job that would have pools
  released for it first lets the later jobs of its priority and type that match an idle
  pool start on it — ahead of it, never ahead of a higher priority, and not once it has
  waited ``warm_affinity_s`` since its submission; then it is decided as usual.
* Otherwise it starts when every instance type it needs has enough free instances.
* Otherwise idle warm pools it does not match are released for it (the oldest first, only
  as many as it needs), if that lets it start now; otherwise it may claim instances that
  stopping jobs are about to free (and pools); if that is still not enough, it preempts
  running jobs of strictly lower priority: lowest priority first, then the one whose stop
  throws away least work (how it checkpoints), then the most recently started; only as many
  as it needs, and only if they let it start. A job that has run for
  less than the policy's minimum run time is not a candidate.
* A job that can start neither now nor after those stops holds back every later job that
  needs one of its instance types, so that equal priorities stay first come, first served
  and a big job is not starved by small ones. Jobs of other types are not held back.
* A job backing off after a refused start is passed over: it holds back nobody.
* With backfill on, the first held-back job of an instance type reserves it from the time
  it could start at the latest (every running job using its whole MaxRuntimeInSeconds)
  instead of closing it: a later job may start in the free instances if it fits now and is
  bound to end before that time (EASY backfilling). Behind a reservation, jobs only
  backfill (on free instances, their own warm pool, or pools released for them); they do not
  preempt.
* With training plans, a job is counted on the best place it may start (a plan's reserved
  instances before on-demand ones; see :mod:`~job_queue.scheduler.reservations`), and the
  rules above apply to each place apart. A job that can start nowhere waits for all of them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from job_queue.models import Demand, JobState
from job_queue.scheduler import reservations
from job_queue.scheduler.instances import free_and_releasing, release, shortfall, take
from job_queue.scheduler.order import LostWork, least_lost_first, preemption_candidates
from job_queue.scheduler.pools import IdlePools, pools_to_release
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.snapshot import (
    ActiveJob,
    OutsideJob,
    Plan,
    Policy,
    Preemption,
    Release,
    WaitingJob,
    WarmPool,
)
from job_queue.scheduler.victims import MissingInstances, choose_victims

DEFAULT_POLICY = Policy()


class Planner:
    """Builds a :class:`Plan` from the active jobs and the waiting jobs offered in queue order
    (a :class:`~job_queue.scheduler.SchedulingPass`).

    Waiting jobs are offered one at a time so that the caller can stop reading the queue
    as soon as no instance type can take another job (``open_types`` is empty)::

        planner = Planner(active, capacity={"ml.p5.48xlarge": 2}, now=now)
        for job in waiting_in_queue_order:
            planner.offer(job)
            if not planner.open_types:
                break
        plan = planner.plan()
    """

    def __init__(
        self,
        active: Iterable[ActiveJob],
        capacity: Mapping[str, int],
        now: float,
        policy: Policy = DEFAULT_POLICY,
        pools: Iterable[WarmPool] = (),
        outside: Iterable[OutsideJob] = (),
        plans: Sequence[TrainingPlan] = (),
        lost_work: LostWork | None = None,
    ) -> None:
        """``lost_work`` estimates what stopping a running job throws away (by default from
        what the jobs declare alone)."""
        self._plans = tuple(plans)
        self._capacity = reservations.with_plans(capacity, self._plans, now)
        self._now = now
        self._policy = policy
        self._lost = lost_work or LostWork(now)
        active = [reservations.on_plan(job, self._plans) for job in active]
        self._pools = IdlePools(pools, now)
        self._free, self._releasing = free_and_releasing(
            self._capacity, active, self._pools.held, outside
        )
        self._preemptions = reservations.ending(active, self._plans, now, self._lost)
        ending = {p.victim.name for p in self._preemptions}
        self._running = [
            job for job in active if job.state is JobState.RUNNING and job.name not in ending
        ]
        self._sorted_candidates: list[ActiveJob] | None = None  # sorted when first needed
        self._held_types: set[str] = set()  # closed: no later job of these types starts
        self._reserved: dict[str, float] = {}  # type -> when a held job may start (backfill)
        self._started_ends: list[tuple[float, Demand]] = []  # bound ends of this pass's starts
        self._victims: set[str] = set()
        self._backfill_examined = 0
        self._starts: list[WaitingJob] = []
        self._releases: list[Release] = []
        self._warm: dict[str, WarmPool] = {}
        self._deferred: dict[str, _Deferral] = {}  # type -> jobs letting matches go first
        # job -> the plan (ARN) it was placed on, and the job as offered (demand by type)
        self._on_plans: dict[str, tuple[str, WaitingJob]] = {}
        self._alternatives: dict[str, list[WaitingJob]] = {}  # job -> other places it waits for

    @property
    def open_types(self) -> frozenset[str]:
        """Instance types that a job later in the queue could still get.

        A reserved type stays open only while it has free instances and the backfill window
        (jobs examined behind reservations in one pass) is not used up.
        """
        window_left = self._backfill_examined < self._policy.backfill_window
        return frozenset(
            itype
            for itype in self._capacity
            if itype not in self._held_types
            and (
                itype not in self._reserved
                or (window_left and self._free[itype] + self._pools.instances(itype) > 0)
            )
        )

    def is_open(self, itype: str, share: str | None = None) -> bool:
        """Whether a waiting partition of ``itype`` (``*``: jobs needing several types) is
        still worth reading, for readers that pull the queue lazily. The single queue has
        one partition per type: ``share`` (always None here) does not matter."""
        still_open = self.open_types
        if itype == "*":
            return bool(still_open)
        return any(reservations.key_type(key) == itype for key in still_open)

    def offer(self, job: WaitingJob) -> None:
        """Decide for the next waiting job in queue order."""
        if job.not_before > self._now:
            return
        job = self._place(job)
        if job is None:
            return  # it waits for a training plan that could take it
        if self._deferred and self._defers(job):
            return
        self._offer(job, may_defer=True)

    def _place(self, job: WaitingJob) -> WaitingJob | None:
        """The job counted where it should start: the first of its options (training plans
        that admit it, then on-demand) where it fits now, else the first where stops would
        make room, else the first, and it waits for all of them."""
        options = reservations.options(job, self._capacity, self._plans, self._now)
        if not options:
            return None
        chosen = options[0]
        if len(options) > 1:
            found = next((o for o in options if self._fits_now(o[1])), None)
            found = found or next((o for o in options if self._room_after_stops(o[1])), None)
            if found is None:
                self._alternatives[job.name] = [placed for _, placed in options[1:]]
            chosen = found or chosen
        arn, placed = chosen
        if arn is not None:
            self._on_plans[job.name] = (arn, job)
        return placed

    def _fits_now(self, job: WaitingJob) -> bool:
        if any(key in self._held_types for key in job.demand):
            return False
        reserved_from = min((self._reserved.get(k, math.inf) for k in job.demand), default=math.inf)
        if self._bound_end(job) > reserved_from:
            return False
        return self._pools.matching(job) is not None or not shortfall(job.demand, self._free)

    def _room_after_stops(self, job: WaitingJob) -> bool:
        if any(key in self._held_types or key in self._reserved for key in job.demand):
            return False
        missing = shortfall(job.demand, self._free)
        if pools_to_release(self._pools.of_types(missing), missing) is not None:
            return True
        uncovered = shortfall(missing, self._releasing)
        return not uncovered or self._make_room(job, uncovered) is not None

    def _offer(self, job: WaitingJob, may_defer: bool) -> None:
        if any(itype not in self._capacity for itype in job.demand):
            return  # its type lost its capacity after it was queued; it cannot start
        if any(itype in self._held_types for itype in job.demand):
            for placed in [job, *self._alternatives.pop(job.name, ())]:
                self._held_types.update(placed.demand)
            return
        pool = self._pools.matching(job)
        reserved_from = min((self._reserved.get(t, math.inf) for t in job.demand), default=math.inf)
        if reserved_from < math.inf:
            self._backfill_examined += 1
            if self._bound_end(job) <= reserved_from:
                # Backfill: done before the held job can start.
                if pool is not None:
                    self._start_on(job, pool)
                elif self._release_for(job, shortfall(job.demand, self._free)):
                    self._start(job)
            # Otherwise it waits; the first held job's reservation stands (as in EASY
            # backfilling, only that job's start is protected).
            return
        if pool is not None:
            self._start_on(job, pool)
            return

        missing = shortfall(job.demand, self._free)
        if not missing:
            self._start(job)
            return
        # Idle pools before stops under way: released, they let it start now (and a stop
        # of a job with a keep-alive leaves a pool, not a free instance).
        pools = pools_to_release(self._pools.of_types(missing), missing)
        if pools is not None:
            if may_defer and self._may_defer(job):
                (itype,) = job.demand
                self._deferred[itype] = _Deferral(job.priority, [job])
                return
            self._release(pools, job)
            self._start(job)
            return

        uncovered = shortfall(missing, self._releasing)
        victims: list[ActiveJob] = []
        if uncovered:
            found = self._make_room(job, uncovered)
            if found is None:
                self._hold(job)
                return
            self._release([h for h in found if isinstance(h, WarmPool)], job)
            victims = [h for h in found if isinstance(h, ActiveJob)]
            if not victims and not shortfall(job.demand, self._free):
                self._start(job)  # on the released pools' instances
                return

        for victim in victims:
            self._candidates().remove(victim)
            self._victims.add(victim.name)
            release(self._releasing, victim.demand)
            self._preemptions.append(Preemption.by_priority(victim, job, self._lost(victim)))
        # The job owns what is free and what is stopping, up to its demand, and starts
        # once the stops finish; later jobs get only what is left.
        take(self._free, self._releasing, job.demand)

    def _start(self, job: WaitingJob) -> None:
        take(self._free, self._releasing, job.demand)
        self._starts.append(job)
        self._started_ends.append((self._bound_end(job), job.demand))

    def _start_on(self, job: WaitingJob, pool: WarmPool) -> None:
        """Start ``job`` on an idle pool of its configuration: it keeps the pool's instances."""
        self._pools.remove(pool)
        self._warm[job.name] = pool
        self._starts.append(job)
        self._started_ends.append((self._bound_end(job), job.demand))

    def _release_for(self, job: WaitingJob, missing: Demand) -> bool:
        """Release the fewest idle pools (oldest first) whose instances, free at once, cover
        ``missing``. True if covered (nothing missing: True)."""
        if not missing:
            return True
        chosen = pools_to_release(self._pools.of_types(missing), missing)
        if chosen is None:
            return False
        self._release(chosen, job)
        return True

    def _release(self, pools: Iterable[WarmPool], job: WaitingJob) -> None:
        for pool in pools:
            self._pools.remove(pool)
            for itype, count in pool.demand.items():
                self._free[itype] += count
            self._releases.append(
                Release(pool, job.name, f"released for {job.name}, which it does not match")
            )

    def _hold(self, job: WaitingJob) -> None:
        """The job waits; later jobs of its types wait too, or, with backfill, may use the
        free instances until it could start."""
        for placed in [job, *self._alternatives.pop(job.name, ())]:
            shadow = self._latest_start(placed) if self._policy.backfill else math.inf
            if shadow == math.inf:
                self._held_types.update(placed.demand)
                continue
            for itype in placed.demand:
                self._reserved[itype] = min(self._reserved.get(itype, math.inf), shadow)

    def _latest_start(self, job: WaitingJob) -> float:
        """When the job could start at the latest: running jobs end by their max runtime,
        stopping ones now. Infinite when a job it waits for has no max runtime."""
        latest = self._now
        for itype, need in job.demand.items():
            have = self._free[itype] + self._releasing[itype] + self._pools.instances(itype)
            if have >= need:
                continue
            ends = sorted(
                [
                    (self._bound_end(a), a.demand[itype])
                    for a in self._running
                    if itype in a.demand and a.name not in self._victims
                ]
                + [(end, demand[itype]) for end, demand in self._started_ends if itype in demand]
            )
            for end, count in ends:
                have += count
                if have >= need:
                    latest = max(latest, end)
                    break
            else:
                return math.inf
        return latest

    def _bound_end(self, job: WaitingJob | ActiveJob) -> float:
        started = job.started_at if isinstance(job, ActiveJob) else self._now
        return started + self._policy.bound(job.max_runtime)

    def _make_room(
        self, job: WaitingJob, missing: Demand
    ) -> tuple[WarmPool | ActiveJob, ...] | None:
        """Idle pools of the missing types (oldest first), then, with preemption on, strictly
        lower-priority running jobs: the fewest whose release or stop frees the missing
        instances (the one victim search)."""
        candidates: Iterable[WarmPool | ActiveJob] = self._pools.of_types(missing)
        if self._policy.preemption:
            lower = itertools.takewhile(lambda c: c.priority < job.priority, self._candidates())
            running = least_lost_first(lower, self._lost, self._policy)
            candidates = itertools.chain(candidates, running)
        return choose_victims(candidates, MissingInstances(missing))

    def _candidates(self) -> list[ActiveJob]:
        if self._sorted_candidates is None:
            self._sorted_candidates = preemption_candidates(
                self._running, self._now, self._policy.min_run_s
            )
        return self._sorted_candidates

    # -- warm affinity --------------------------------------------------------------------

    def _may_defer(self, job: WaitingJob) -> bool:
        """Whether ``job``, which would have idle pools released for it, first lets later
        jobs of its priority that match them start on them."""
        return (
            self._policy.warm_affinity_s > 0
            and len(job.demand) == 1
            and self._now - job.submitted_at < self._policy.warm_affinity_s
        )

    def _defers(self, job: WaitingJob) -> bool:
        """While jobs of a type let matching jobs go first: a job of their priority starts on
        its pool ahead of them, or waits behind them (True); any other job ends the wait for
        the types it needs and is decided as usual (False)."""
        itype = next(iter(job.demand)) if len(job.demand) == 1 else None
        deferral = self._deferred.get(itype) if itype is not None else None
        if (
            deferral is not None
            and job.priority == deferral.priority
            and deferral.examined < self._policy.backfill_window
        ):
            deferral.examined += 1
            pool = self._pools.matching(job)
            if pool is not None:
                self._start_on(job, pool)  # warm affinity: ahead of earlier jobs of its priority
            else:
                deferral.jobs.append(job)
            return True
        for other in [t for t in job.demand if t in self._deferred]:
            self._end_deferral(other)
        return False

    def _end_deferral(self, itype: str) -> None:
        """The jobs that let matches go first are decided now, in queue order."""
        for job in self._deferred.pop(itype).jobs:
            self._offer(job, may_defer=False)

    def plan(self) -> Plan:
        for itype in list(self._deferred):
            self._end_deferral(itype)
        on_plans = {
            j.name: self._on_plans[j.name] for j in self._starts if j.name in self._on_plans
        }
        return Plan(
            starts=tuple(on_plans[j.name][1] if j.name in on_plans else j for j in self._starts),
            preemptions=tuple(self._preemptions),
            releases=tuple(self._releases),
            warm=dict(self._warm),
            plans={name: arn for name, (arn, _) in on_plans.items()},
        )


@dataclass
class _Deferral:
    """Jobs of one priority and type, in queue order, letting matching jobs go first."""

    priority: int
    jobs: list[WaitingJob] = field(default_factory=list)
    examined: int = 0
