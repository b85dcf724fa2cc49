"""The scheduling pass with quota shares.

Rules of a pass (:class:`SharePlanner`), in queue order (priority, then submission):

0. A job whose configuration matches an idle warm pool its own share left starts on it, if
   its share has room for it without that pool (a victim's pool does not keep a share over
   its limit). (One
   admitted by the rules below that matches another share's pool starts on that one: it is
   what SageMaker does; the pool's instances then count for the job's share.)
1. Otherwise it uses its share's own idle capacity (its limit minus what its jobs and pools
   hold, unless that idle capacity is lent out) — releasing idle warm pools that it does not
   match if that is what it takes (its share's own, or any but another RESERVE share's; a
   pool counts for the share of the job that left it), the oldest first, only as many as it
   needs, before anything is preempted (in rules 2 to 4, too, pools go before jobs).
2. If its share's idle capacity is lent out and the job fits within its share's limit, it
   **reclaims**: jobs running on borrowed capacity are preempted, lowest priority first, then
   the most recently started, only as many as it needs — whatever their priority.
3. A ``LEND_AND_BORROW`` job that could borrow idle lent capacity does so, but only after
   every job has had its own share's capacity in this pass, so that a borrower never takes
   what a lender's own job could use (and never starts a reclaim-borrow loop).
4. Otherwise, with ``in_share_preemption`` on, it may preempt strictly lower-priority running
   jobs of its own share (the single queue's rule, within the share).
5. Otherwise it waits, and later jobs of its share and instance types wait behind it (FIFO
   within a share). Jobs of other shares go on.

A job started by reclaiming runs within its share's limit, so it is never on borrowed
capacity and can never be reclaimed by the job it displaced.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from job_queue.models import Demand
from job_queue.scheduler.instances import free_and_releasing, release, take
from job_queue.scheduler.order import LostWork, least_lost_first, preemption_candidates
from job_queue.scheduler.pools import IdlePools
from job_queue.scheduler.shares import LedgerRoom, Share, ShareLedger, Strategy, total_capacity
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
from job_queue.scheduler.victims import Holder, choose_victims


class SharePlanner:
    """The scheduling pass with quota shares (a :class:`~job_queue.scheduler.SchedulingPass`).

    Example::

        planner = SharePlanner(active, shares, now=now)
        for job in waiting_in_queue_order:
            planner.offer(job)
        plan = planner.plan()
    """

    def __init__(
        self,
        active: Iterable[ActiveJob],
        shares: Sequence[Share],
        now: float,
        policy: Policy,
        pools: Iterable[WarmPool] = (),
        outside: Iterable[OutsideJob] = (),
        lost_work: LostWork | None = None,
    ) -> None:
        active = list(active)
        self._lost = lost_work or LostWork(now)
        self._now = now
        self._policy = policy
        self._shares = {share.name: share for share in shares}
        self._capacity = total_capacity(shares)
        self._pools = IdlePools(pools, now)
        self._free, self._releasing = free_and_releasing(
            self._capacity, active, self._pools.held, outside
        )
        # Shares are counted as they will be once the stops under way finish, so that the
        # job a stop was for finds its room again next pass and waits for the stop instead
        # of preempting more.
        holders = [*(a for a in active if not a.state.is_stopping), *self._pools.held]
        self._ledger = ShareLedger(shares, holders)
        self._candidates = preemption_candidates(active, now, policy.min_run_s)
        self._held: set[tuple[str, str]] = set()  # (share, type): closed to own capacity
        self._collecting: set[tuple[str, str]] = set()  # held, but may still borrow (rule 3)
        self._collected: dict[tuple[str, str], int] = {}
        self._borrowers: list[WaitingJob] = []  # in queue order
        self._starts: list[WaitingJob] = []
        self._preemptions: list[Preemption] = []
        self._releases: list[Release] = []
        self._warm: dict[str, WarmPool] = {}

    @property
    def open_types(self) -> frozenset[str]:
        """Instance types for which some share could still take a later job: the caller
        stops reading a type's queue once none could."""
        return frozenset(
            itype
            for itype in self._capacity
            if any(
                (name, itype) in self._collecting
                or ((name, itype) not in self._held and self._may_take(share, itype))
                for name, share in self._shares.items()
            )
        )

    def _may_take(self, share: Share, itype: str) -> bool:
        """Whether a job of ``share`` could still get ``itype`` in this pass: from its own
        limit (free or lent out), by borrowing, or by preempting within the share."""
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

    def is_open(self, itype: str, share: str | None) -> bool:
        """Whether the waiting partition of ``itype`` (``*``: jobs needing several types)
        and ``share`` is still worth reading: a job of it could still start."""
        known = self._shares.get(share) if share is not None else None
        if known is None:
            return False  # jobs without a (current) share do not start
        types = self._capacity if itype == "*" else (itype,) if itype in self._capacity else ()
        return any(
            (share, t) in self._collecting
            or ((share, t) not in self._held and self._may_take(known, t))
            for t in types
        )

    def offer(self, job: WaitingJob) -> None:
        """Decide for the next waiting job in queue order (rules 1, 2, 4 and 5; a job that
        may borrow is put aside for rule 3)."""
        share = self._shares.get(job.share) if job.share is not None else None
        if job.not_before > self._now or share is None:
            return  # backing off, or its share no longer exists: it cannot start
        if any(itype not in self._capacity for itype in job.demand):
            return
        keys = [(share.name, itype) for itype in job.demand]
        if any(key in self._held for key in keys):
            if all(key in self._collecting for key in keys):
                self._collect(job, keys)
            else:
                self._held.update(keys)
                self._collecting.difference_update(keys)
            return
        pool = self._pools.matching(job, share.name)
        if pool is not None and self._may_start_on(pool, share, job):
            self._pools.remove(pool)  # the pool's instances stay with its share, for this job
            self._warm[job.name] = pool
            self._starts.append(job)
            return
        if self._admits(job, share, borrow=False):
            return
        victims = self._reclaim(job, share) if self._policy.preemption else None
        if victims is not None:
            self._admit(job, share, victims)
            return
        self._held.update(keys)
        if (
            self._ledger.grant(share, job.demand, borrow=True) and self._covered(share, job.demand)
        ) or self._choose(job, share, _no_job, borrow=True) is not None:
            # It may borrow, but only after every share's own jobs have had their capacity.
            self._collecting.update(keys)
            self._collect(job, keys)
            return
        victims = self._preempt_in_share(job, share)
        if victims is not None:
            self._held.difference_update(keys)
            self._admit(job, share, victims)

    def plan(self) -> Plan:
        """Rule 3: the jobs put aside to borrow, in queue order (a share's first job that
        cannot borrow after all may still preempt within its share, rule 4, or holds back the
        share's later jobs)."""
        closed: set[tuple[str, str]] = set()
        for job in self._borrowers:
            share = self._shares[job.share]
            keys = [(share.name, itype) for itype in job.demand]
            if any(key in closed for key in keys):
                continue
            if self._admits(job, share, borrow=True):
                continue
            victims = self._preempt_in_share(job, share)
            if victims is not None:
                self._admit(job, share, victims)
            else:
                closed.update(keys)
        return Plan(
            starts=tuple(self._starts),
            preemptions=tuple(self._preemptions),
            releases=tuple(self._releases),
            warm=dict(self._warm),
        )

    def _collect(self, job: WaitingJob, keys: list[tuple[str, str]]) -> None:
        self._borrowers.append(job)
        for key in keys:
            self._collected[key] = self._collected.get(key, 0) + job.demand[key[1]]
            if self._collected[key] > self._ledger.lendable(key[1]):
                self._collecting.discard(key)  # later jobs of the share could not borrow

    # -- preemption ----------------------------------------------------------------------

    def _reclaim(self, job: WaitingJob, share: Share) -> tuple[Holder, ...] | None:
        """Jobs on borrowed capacity to stop (and idle pools to release) so that ``job`` gets
        its share's own capacity."""
        own_pools = [p for p in self._pools.of_types(job.demand) if p.share == share.name]
        if not all(
            count <= self._ledger.idle(share.name, t) + sum(p.demand.get(t, 0) for p in own_pools)
            for t, count in job.demand.items()
        ):
            return None

        def on_borrowed(ledger: ShareLedger, candidate: ActiveJob) -> bool:
            return candidate.share != share.name and any(
                ledger.borrowed(candidate.share, itype) > 0 and itype in job.demand
                for itype in candidate.demand
            )

        return self._choose(job, share, on_borrowed)

    def _preempt_in_share(self, job: WaitingJob, share: Share) -> tuple[Holder, ...] | None:
        if not (self._policy.preemption and share.in_share_preemption):
            return None

        def lower_in_share(ledger: ShareLedger, candidate: ActiveJob) -> bool:
            return (
                candidate.share == share.name
                and candidate.priority < job.priority
                and any(itype in job.demand for itype in candidate.demand)
            )

        return self._choose(job, share, lower_in_share)

    def _admits(self, job: WaitingJob, share: Share, borrow: bool) -> bool:
        """Admit the job if its share may take its demand (with ``borrow``, by borrowing):
        on free instances; else on idle pools released for it, if that lets it start now;
        else once the stops under way finish. False if none of these is enough."""
        grant = self._ledger.grant(share, job.demand, borrow=borrow)
        nothing_stopping = dict.fromkeys(self._releasing, 0)
        if grant and self._covered(share, job.demand, nothing_stopping):
            self._admit(job, share, ())
            return True
        released = self._choose(job, share, _no_job, borrow=borrow, soon=False)
        if released is not None:
            self._admit(job, share, released)
            return True
        if grant and self._covered(share, job.demand):
            self._admit(job, share, ())
            return True
        return False

    def _choose(
        self, job: WaitingJob, share: Share, eligible, borrow: bool = False, soon: bool = True
    ) -> tuple[Holder, ...] | None:
        """The fewest idle pools the job may release, then eligible running jobs, whose
        release or stop lets ``job`` take its demand (from its own share; with ``borrow``, by
        borrowing too) — the one victim search, :func:`choose_victims`."""
        pools = [p for p in self._pools.of_types(job.demand) if self._releasable(p, share)]
        if eligible is _no_job:
            if not pools:
                return None
            candidates: Iterable[Holder] = pools
        else:
            running = least_lost_first(self._candidates, self._lost, self._policy)
            candidates = itertools.chain(pools, running)

        def fits(ledger: ShareLedger, freed: list[Holder]) -> bool:
            return self._fits(ledger, share, job.demand, freed, borrow, soon)

        return choose_victims(candidates, LedgerRoom(self._ledger.copy(), fits, eligible))

    def _may_start_on(self, pool: WarmPool, share: Share, job: WaitingJob) -> bool:
        """Whether the share has room of its own for ``job`` once ``pool`` is given back: a
        pool that keeps its share over its limit (a victim's, say) must not keep it there."""
        ledger = self._ledger.copy()
        ledger.give_back(pool.share, pool.demand)
        return ledger.grant(share, job.demand, borrow=False)

    def _releasable(self, pool: WarmPool, share: Share) -> bool:
        """Whether a job of ``share`` may release ``pool``: its share's own, or one whose
        capacity another share may take — any but another RESERVE share's within its limit
        (a preempted job's pool may leave its share over it)."""
        owner = self._shares.get(pool.share) if pool.share is not None else None
        if pool.share == share.name or owner is None or owner.lends:
            return True
        return any(self._ledger.borrowed(pool.share, itype) > 0 for itype in pool.demand)

    def _fits(
        self,
        ledger: ShareLedger,
        share: Share,
        demand: Demand,
        freed,
        borrow: bool = False,
        soon: bool = True,
    ) -> bool:
        """The share may take ``demand`` once ``freed`` are released or stopped, and the
        instances are there — free now, or (``soon``) once the stops under way finish."""
        releasing = dict(self._releasing) if soon else dict.fromkeys(self._releasing, 0)
        for holder in freed:  # pools free at once, stopped jobs soon: both count here
            release(releasing, holder.demand)
        return ledger.grant(share, demand, borrow=borrow) and self._covered(
            share, demand, releasing, ledger
        )

    # -- bookkeeping ---------------------------------------------------------------------

    def _covered(
        self,
        share: Share,
        demand: Demand,
        releasing: Mapping[str, int] | None = None,
        ledger: ShareLedger | None = None,
    ) -> bool:
        """Enough instances are free, or about to free, once the idle capacity of RESERVE
        shares (other than the job's own) is set aside."""
        releasing = self._releasing if releasing is None else releasing
        return all(
            count <= self._free[t] + releasing[t] - self._reserved(share, t, ledger)
            for t, count in demand.items()
        )

    def _reserved(self, share: Share, itype: str, ledger: ShareLedger | None = None) -> int:
        ledger = ledger or self._ledger
        return sum(
            ledger.idle(name, itype)
            for name, other in self._shares.items()
            if other.strategy is Strategy.RESERVE and name != share.name
        )

    def _admit(self, job: WaitingJob, share: Share, freed: Sequence[Holder]) -> None:
        """Release the pools and stop the victims in ``freed``, then start the job — at once
        if the instances are free, else once the stops finish (it takes them now so that no
        later job does)."""
        for pool in (h for h in freed if isinstance(h, WarmPool)):
            self._pools.remove(pool)
            self._ledger.give_back(pool.share, pool.demand)
            for itype, count in pool.demand.items():
                self._free[itype] += count
            self._releases.append(Release(pool, job.name, f"released for {job.name}"))
        for victim in (h for h in freed if isinstance(h, ActiveJob)):
            self._candidates.remove(victim)
            self._ledger.give_back(victim.share, victim.demand)
            release(self._releasing, victim.demand)
            self._preemptions.append(
                Preemption(
                    victim,
                    job.name,
                    f"reclaimed for {job.name} of share {share.name}",
                    self._lost(victim),
                )
                if victim.share != share.name
                else Preemption.by_priority(victim, job, self._lost(victim))
            )
        starts_now = all(
            count <= self._free[t] - self._reserved(share, t) for t, count in job.demand.items()
        )
        self._ledger.take(share.name, job.demand)
        other = self._pools.matching(job) if starts_now else None
        if other is not None:
            # Another share's idle pool matches it: SageMaker starts the job on that pool,
            # whatever the queue intends. The job holds the pool's instances (the pool's
            # share no longer does); the free ones stay free.
            self._pools.remove(other)
            self._ledger.give_back(other.share, other.demand)
            self._warm[job.name] = other
        else:
            take(self._free, self._releasing, job.demand)
        if starts_now:
            self._starts.append(job)


def _no_job(ledger: ShareLedger, candidate: ActiveJob) -> bool:
    """For a search among idle pools only: no running job is a candidate."""
    return False
