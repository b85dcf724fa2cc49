"""What one scheduling pass holds while it decides, and how its decisions change it.

:class:`PassState` counts, for the rules in :mod:`~job_queue.scheduler.planner`, the
instances (free, releasing, in idle pools), each share's quota (:class:`ShareLedger`), the
preemption candidates, and what the pass has decided so far. The single queue is one share,
:data:`WHOLE_QUEUE`, that holds all the capacity and neither lends nor borrows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from job_queue.models import Demand, JobState
from job_queue.scheduler import budgets, reservations
from job_queue.scheduler.holds import drained, hold_on
from job_queue.scheduler.instances import free_and_releasing, release, take
from job_queue.scheduler.order import LostWork, preemption_candidates
from job_queue.scheduler.pools import IdlePools
from job_queue.scheduler.room import Eligible, Room, instances_for
from job_queue.scheduler.shares import Share, ShareLedger, Strategy, total_capacity
from job_queue.scheduler.snapshot import (
    ActiveJob,
    Plan,
    Policy,
    Preemption,
    Release,
    Snapshot,
    WaitingJob,
    WarmPool,
)
from job_queue.scheduler.victims import Holder, choose_victims
from job_queue.scheduler.waiting_for import WaitingFor

WHOLE_QUEUE = "(queue)"  # the single queue's one share


class PassState:
    """The counts one pass decides on, and the decisions so far (see :class:`Planner`)."""

    def __init__(self, seen: Snapshot, policy: Policy, lost_work: LostWork | None) -> None:
        seen = budgets.lowered(seen)  # spent budgets' running jobs: the first victims
        now, capacity, shares, plans = seen.now, seen.capacity, seen.shares, seen.plans
        active, pools, outside = seen.active, seen.pools, seen.outside
        self._plans = tuple(plans)
        self._seen = seen
        self._now, self._policy = now, policy
        self._lost = lost_work or LostWork(now)
        shares = [share.with_reserved(self._plans, now) for share in shares]
        base = total_capacity(shares) if shares else capacity
        self._capacity = reservations.with_plans(base, self._plans, now)
        layout = tuple(shares) or (
            Share(WHOLE_QUEUE, self._capacity, Strategy.RESERVE, in_share_preemption=True),
        )
        self._shares = {share.name: share for share in layout}
        self._reserves = [s.name for s in layout if s.strategy is Strategy.RESERVE]
        active = [reservations.on_plan(job, self._plans) for job in active]
        self._pools = IdlePools(pools, now)
        self._free, self._releasing = free_and_releasing(
            self._capacity, active, self._pools.held, outside
        )
        self._preemptions = reservations.ending(active, self._plans, now, self._lost)
        ending = {p.victim.name for p in self._preemptions}
        self._preemptions += drained(
            (job for job in active if job.name not in ending), seen.holds, self._lost
        )
        ending = {p.victim.name for p in self._preemptions}  # they stop whatever this pass does
        self._active = [job for job in active if job.name not in ending]
        self._active_names = {job.name for job in active}
        self._running = [
            job for job in active if job.state is JobState.RUNNING and job.name not in ending
        ]
        # Shares are counted as they will be once the stops under way finish, so that the
        # job a stop was for finds its room again next pass and waits for the stop instead
        # of preempting more.
        holders = [a for a in active if not a.state.is_stopping and a.name not in ending]
        self._ledger = ShareLedger(
            layout, [*holders, *self._pools.held], default=None if shares else WHOLE_QUEUE
        )
        self._sorted_candidates: list[ActiveJob] | None = None  # sorted when first needed
        self._victims: set[str] = set()
        # Bound ends of this pass's starts: (end, demand, share).
        self._started_ends: list[tuple[float, Demand, str]] = []
        self._starts: list[WaitingJob] = []
        self._releases: list[Release] = []
        self._warm: dict[str, WarmPool] = {}
        self._on_plans: dict[str, tuple[str, WaitingJob]] = {}  # job -> (plan ARN, as offered)
        self._held: set[tuple[str, str]] = set()  # (share, type): no later job of it starts
        self._collecting: set[tuple[str, str]] = set()  # held, but may still borrow
        self._reserved: dict[tuple[str, str], float] = {}  # (share, type): backfill until
        self._backfill_examined = 0  # jobs examined behind reservations
        self._why: dict[str, WaitingFor] = {}  # why each job offered waits (Diagnosis)

    # -- what is still worth reading -------------------------------------------------------

    @property
    def open_types(self) -> frozenset[str]:
        """Instance types (capacity keys) that a job later in the queue could still get."""
        return frozenset(
            key
            for key in self._capacity
            if any(self._key_open(share, key) for share in self._shares.values())
        )

    def is_open(self, itype: str, share: str | None = None) -> bool:
        """Whether the waiting partition of ``itype`` (``*``: jobs needing several types) and
        ``share`` is still worth reading (for readers that pull the queue lazily): a job of it
        could still start. The single queue has one partition per type (``share`` None)."""
        known = self._share_of(share)
        if known is None:
            return False  # jobs without a (current) share do not start
        keys = (k for k in self._capacity if itype == "*" or reservations.key_type(k) == itype)
        return any(self._key_open(known, key) for key in keys)

    def _key_open(self, share: Share, key: str) -> bool:
        if hold_on(self._seen.holds, self._held_name(share)) is not None:
            return False  # an admin holds its jobs back
        if (share.name, key) in self._collecting:
            return True
        if (share.name, key) in self._held:
            return False
        if (share.name, key) in self._reserved:
            # Behind a reservation, only while instances are free and the window lasts.
            window_left = self._backfill_examined < self._policy.backfill_window
            if not (window_left and self._free[key] + self._pools.instances(key) > 0):
                return False
        return self._may_take(share, key)

    def _may_take(self, share: Share, itype: str) -> bool:
        """Whether a job of ``share`` could still get ``itype`` in this pass: from its own
        limit (free or lent out), from releasable pools, by borrowing, or by preempting."""
        ledger = self._ledger
        if ledger.idle(share.name, itype) > 0:
            return True
        if any(self._releasable(pool, share) for pool in self._pools.of_types([itype])):
            return True
        if (
            share.borrows
            and ledger.lendable(itype) > 0
            and share.borrow_cap(itype) > ledger.borrowed(share.name, itype)
        ):
            return True
        return (
            self._policy.preemption
            and share.in_share_preemption
            and ledger.in_use(share.name, itype) > 0
        )

    # -- acting within the pass ------------------------------------------------------------

    def _admit(self, job: WaitingJob, share: Share, freed: Sequence[Holder]) -> None:
        """Release the pools and stop the victims in ``freed``, then start the job — at once
        if the instances are free, else once the stops finish (it takes them now so that no
        later job does)."""
        for pool in (h for h in freed if isinstance(h, WarmPool)):
            self._release(pool, job)
        for victim in (h for h in freed if isinstance(h, ActiveJob)):
            self._candidates().remove(victim)
            self._victims.add(victim.name)
            self._ledger.give_back(victim.share, victim.demand)
            release(self._releasing, victim.demand)
            lost = self._lost(victim)
            if self._ledger.owner(victim.share) == share.name:
                self._preemptions.append(Preemption.by_priority(victim, job, lost))
            else:
                why = f"reclaimed for {job.name} of share {share.name}"
                self._preemptions.append(Preemption(victim, job.name, why, lost))
        if instances_for(self._ledger, job.demand, self._free, self._reserves_for(share)):
            self._start(job, share)
        else:
            take(self._free, self._releasing, job.demand)
            self._ledger.take(share.name, job.demand)

    def _start(self, job: WaitingJob, share: Share) -> None:
        """Start ``job`` on free instances."""
        other = self._pools.matching(job)
        if other is not None:
            # An idle pool (of another share) matches it: SageMaker starts the job on that
            # pool, whatever the queue intends. The job holds the pool's instances (the
            # pool's share no longer does); the free ones stay free.
            self._start_on(job, other, share)
            return
        take(self._free, self._releasing, job.demand)
        self._ledger.take(share.name, job.demand)
        self._started(job, share)

    def _start_on(self, job: WaitingJob, pool: WarmPool, share: Share) -> None:
        """Start ``job`` on an idle pool of its configuration: it keeps the pool's instances."""
        self._pools.remove(pool)
        self._ledger.give_back(pool.share, pool.demand)
        self._ledger.take(share.name, job.demand)
        self._warm[job.name] = pool
        self._started(job, share)

    def _started(self, job: WaitingJob, share: Share) -> None:
        self._starts.append(job)
        self._started_ends.append((self._bound_end(job), job.demand, share.name))

    def _release(self, pool: WarmPool, job: WaitingJob) -> None:
        """End an idle pool for ``job``: its instances are free at once."""
        self._pools.remove(pool)
        self._ledger.give_back(pool.share, pool.demand)
        for itype, count in pool.demand.items():
            self._free[itype] += count
        why = f"released for {job.name}" + (
            "" if pool.matches(job) else ", which it does not match"
        )
        self._releases.append(Release(pool, job.name, why))

    def _decided(self) -> Plan:
        on_plans = {
            j.name: self._on_plans[j.name] for j in self._starts if j.name in self._on_plans
        }
        started = {j.name for j in self._starts}
        return Plan(
            starts=tuple(on_plans[j.name][1] if j.name in on_plans else j for j in self._starts),
            preemptions=tuple(self._preemptions),
            releases=tuple(self._releases),
            warm=dict(self._warm),
            plans={name: arn for name, (arn, _) in on_plans.items()},
            waiting={name: why for name, why in self._why.items() if name not in started},
        )

    # -- reading the counts ----------------------------------------------------------------

    def _share_of(self, name: str | None) -> Share | None:
        """The share a job of share ``name`` counts against (None: it has none now)."""
        return self._shares.get(self._ledger.owner(name))

    def _held_name(self, share: Share) -> str | None:
        """The share's name as a hold names it (None: the single queue's one share)."""
        return None if share.name == WHOLE_QUEUE else share.name

    def _owner(self, holder: Holder) -> str | None:
        return self._ledger.owner(holder.share)

    def _own_pool(self, job: WaitingJob, share: Share) -> WarmPool | None:
        """The oldest idle pool of its share that ``job`` matches, if its share has room for
        the job once the pool is given back (a victim's pool must not keep it over its
        limit)."""
        pool = self._pools.matching(job, lambda p: self._owner(p) == share.name)
        if pool is None:
            return None
        ledger = self._ledger.copy()
        ledger.give_back(pool.share, pool.demand)
        return pool if ledger.grant(share, job.demand, borrow=False) else None

    def _matched_pool(self, job: WaitingJob, share: Share, borrow: bool) -> WarmPool | None:
        """The oldest idle pool, of any share, that ``job`` matches and whose capacity its
        share may take (``borrow``: borrowing too): SageMaker would start the job on it, so it
        starts warm rather than releasing the pool and starting cold."""
        for pool in self._releasable_pools(job, share):
            if pool.matches(job) and self._search(job, share, [pool], borrow, soon=False):
                return pool
        return None

    def _releasable(self, pool: WarmPool, share: Share) -> bool:
        """Whether a job of ``share`` may release ``pool``: its share's own, or one whose
        capacity another share may take — any but another RESERVE share's within its limit
        (a preempted job's pool may leave its share over it)."""
        owner = self._owner(pool)
        known = self._shares.get(owner)
        if owner == share.name or known is None or known.lends:
            return True
        return any(self._ledger.borrowed(owner, itype) > 0 for itype in pool.demand)

    def _releasable_pools(self, job: WaitingJob, share: Share) -> list[WarmPool]:
        return [p for p in self._pools.of_types(job.demand) if self._releasable(p, share)]

    def _instances(self, soon: bool) -> dict[str, int]:
        """Instances free now, or (``soon``) once the stops under way finish."""
        if not soon:
            return dict(self._free)
        return {itype: n + self._releasing[itype] for itype, n in self._free.items()}

    def _has_room(self, share: Share, demand: Demand, soon: bool, borrow: bool = False) -> bool:
        """The share may take ``demand`` and the instances are there (``soon``: counting the
        stops under way)."""
        return self._ledger.grant(share, demand, borrow) and instances_for(
            self._ledger, demand, self._instances(soon), self._reserves_for(share)
        )

    def _search(
        self,
        job: WaitingJob,
        share: Share,
        candidates: Iterable[Holder],
        borrow: bool = False,
        soon: bool = True,
        eligible: Eligible | None = None,
    ) -> tuple[Holder, ...] | None:
        """The fewest ``candidates`` (pools, then running jobs ``eligible`` allows) whose
        release or stop lets ``job`` take its demand — the one victim search."""
        room = Room(
            self._ledger.copy(),
            share,
            job.demand,
            self._instances(soon),
            self._reserves_for(share),
            eligible or _no_job,
            borrow,
        )
        return choose_victims(candidates, room)

    def _reserves_for(self, share: Share) -> list[str]:
        return [name for name in self._reserves if name != share.name]

    def _candidates(self) -> list[ActiveJob]:
        if self._sorted_candidates is None:
            self._sorted_candidates = preemption_candidates(
                self._running, self._now, self._policy.min_run_s
            )
        return self._sorted_candidates

    def _bound_end(self, job: WaitingJob | ActiveJob) -> float:
        started = job.started_at if isinstance(job, ActiveJob) else self._now
        return started + self._policy.bound(job.max_runtime)


def _no_job(ledger: ShareLedger, candidate: ActiveJob) -> bool:
    """For a search among idle pools only: no running job is a candidate."""
    return False
