"""The scheduling pass: which waiting jobs start, which running jobs are preempted, and which
idle warm pools are released.

Pure: no I/O, no clock. The same code runs in the Lambda and in the simulator, and it is one
pass for every layout. With quota shares, each job belongs to a share
(:mod:`~job_queue.scheduler.shares`); the single queue is one share that holds all the
capacity and neither lends nor borrows, so the quota steps below never refuse it anything the
instances allow.

Rules, in queue order (priority high to low, then submission order; with fair share, then
the submitter who used least lately: :mod:`~job_queue.scheduler.fair_share`), for each job:

0. **Nothing capped.** A job that needs no instances of a capped type (a CPU job on uncapped
   types only) starts at once: nothing counts it, and nothing holds it back.
1. **Warm pool.** A job whose configuration matches an idle warm pool its own share left
   starts on it (the oldest), if its share has room for it without that pool.
2. **Own capacity.** Otherwise it starts on free instances if its share's limit has room (a
   lender's room is what it has not lent out); else on another share's idle pool that it
   matches, if its share may take that pool's capacity; else on idle pools released for it
   (pools it does not match: its share's own, or any but another RESERVE share's, the oldest
   first, only as many as it needs) if that lets it start now; else it takes instances that
   stops under way are about to free, and starts when they are.
3. **Reclaim.** If its share's idle capacity is lent out and the job fits within its share's
   limit, jobs running on borrowed capacity are preempted (pools first, then jobs lowest
   priority first, then least lost work, then most recently started; only as many as it
   needs), whatever their priority.
4. **Borrow.** A ``LEND_AND_BORROW`` job that could borrow idle lent capacity does so, but
   only at the end of the pass, after every job has had its own share's capacity: a
   borrower never takes what a lender's own job could use. Borrowers go in queue order
   (with fair share: the share that used least per instance of its limit lately first).
5. **Make room.** Otherwise idle pools are released and (with preemption on, and in a quota
   share with ``in_share_preemption``) running jobs of its own share of strictly lower
   priority are preempted: the fewest that let it start (the one victim search,
   :mod:`~job_queue.scheduler.victims`; order as in rule 3). A job that has run for less
   than the policy's minimum run time is not a candidate.
6. **Hold.** Otherwise it waits, and later jobs of its share that need one of its instance
   types wait behind it (first come, first served within a share and a type; a big job is
   not starved by small ones). Other shares and types go on.

Steps that change rules 1 to 6 where the policy or the layout asks for them:

* **Dependencies.** Before a pass reads the queue, the jobs out of line until their
  dependency holds are settled (:func:`~job_queue.scheduler.dependencies.settle`, the same
  in the Lambda, the expected-start replay and the simulator): those it now holds for join
  the line at their place, those it never can are cancelled. The pass never sees a job that
  waits for its parents, so such a job holds back nobody.

* **Held.** While an admin holds the queue or a job's share, the job waits (and nothing of
  it is read further); drained, its running jobs are stopped and requeued as well
  (:mod:`~job_queue.scheduler.holds`).

* **Moved on.** A job the queue shows waiting that the snapshot holds as active (the queue
  was read after an overlapping pass preempted it) is left to the next pass: this one counts
  it on the instances the snapshot says it holds.
* **Backing off.** A job whose start was refused is passed over until it may retry: it holds
  back nobody.
* **Backfill.** With backfill on, the first held job of a share and type reserves it, instead
  of closing it, from the time the instances it needs are there at the latest (every running
  job, of any share, using its whole MaxRuntimeInSeconds): a later job of that share and type
  may start on its share's own capacity (free instances, its own warm pool, or pools released
  for it) if it fits now and is bound to end before that time (EASY backfilling), so it
  cannot delay the held job. Behind a reservation, jobs only backfill; they neither reclaim,
  borrow nor preempt. Jobs of other shares are not held back: they start on their own
  share's capacity, which the held job could not have, or borrow what a reclaim would give
  back to it.
* **Warm affinity.** With the policy's ``warm_affinity_s``, a job that would have pools
  released for it first lets the later jobs of its share, priority and type that match an
  idle pool (its share's, or another's that its share may take) start on it — ahead of it,
  never ahead of a higher priority, and not once it has waited ``warm_affinity_s`` since its
  submission; then it is decided as usual. A borrower (rule 4) that would release a pool
  that a job of its share and priority held behind it matches lets that job start on the
  pool instead, and waits.
* **Training plans.** A job is counted on the best place it may start (a plan's reserved
  instances before on-demand ones; see :mod:`~job_queue.scheduler.reservations`), and the
  rules apply to each place apart; a job that can start nowhere waits for all of them. A job
  on a plan whose reservation stops counting is stopped ("reservation ending").
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

from job_queue.scheduler import affinity, fair_share, waiting_for
from job_queue.scheduler.affinity import Deferral, WarmAffinity
from job_queue.scheduler.backfill import Backfill
from job_queue.scheduler.budgets import BudgetStep, Standing
from job_queue.scheduler.diagnosis import Diagnosis
from job_queue.scheduler.holds import hold_on
from job_queue.scheduler.order import LostWork, least_lost_first
from job_queue.scheduler.pass_state import WHOLE_QUEUE
from job_queue.scheduler.placement import Placement
from job_queue.scheduler.shares import Share, ShareLedger
from job_queue.scheduler.snapshot import (
    ActiveJob,
    Plan,
    Policy,
    Snapshot,
    WaitingJob,
)
from job_queue.scheduler.victims import Holder
from job_queue.scheduler.waiting_for import Reason, WaitingFor

DEFAULT_POLICY = Policy()

__all__ = ["DEFAULT_POLICY", "WHOLE_QUEUE", "Planner", "explain", "plan"]


class Planner(BudgetStep, WarmAffinity, Backfill, Placement, Diagnosis):
    """Builds a :class:`Plan` from the active jobs and the waiting jobs offered in queue order.

    Waiting jobs are offered one at a time so that the caller can stop reading the queue
    as soon as no instance type can take another job (``open_types`` is empty)::

        planner = Planner(Snapshot(now, {"ml.p5.48xlarge": 2}, active))
        for job in waiting_in_queue_order:
            planner.offer(job)
            if not planner.open_types:
                break
        plan = planner.plan()

    With quota shares in the snapshot, the capacity is the sum of the shares' limits.
    """

    def __init__(
        self, seen: Snapshot, policy: Policy = DEFAULT_POLICY, lost_work: LostWork | None = None
    ) -> None:
        """``lost_work`` estimates what stopping a running job throws away (by default from
        what the jobs declare alone)."""
        super().__init__(seen, policy, lost_work)
        self._collected: dict[tuple[str, str], int] = {}
        self._borrowers: list[WaitingJob] = []  # in queue order
        self._lowered: list[tuple[WaitingJob, Standing]] = []  # spent budgets: decided last
        self._lowering = False  # deciding them now

    # -- the pass --------------------------------------------------------------------------

    def offer(self, job: WaitingJob) -> None:
        """Decide for the next waiting job in queue order."""
        if job.name in self._active_names:
            # The queue was read after the snapshot: the job has moved on since (an overlapping
            # pass preempted it). The next pass sees it as it is; this one counts it as active.
            return
        hold = hold_on(self._seen.holds, job.share)
        if hold is not None:  # an admin holds the queue, or the job's share
            self._waits(job, hold.waiting_for())
            return
        if job.not_before > self._now:  # backing off after a refused start
            self._waits(job, waiting_for.backing_off(job.not_before, job.last_error, self._now))
            return
        if not job.demand:
            self._starts.append(job)  # rule 0: nothing counts it, nothing holds it back
            return
        share = self._share_of(job.share)
        if share is None:
            gone = f"its share {job.share} is no longer one of the queue's shares"
            self._waits(job, WaitingFor(Reason.NO_CAPACITY, gone, share=job.share))
            return
        if self._budget_step(job):
            return
        placed = self._place(job, share)
        if placed is None:  # it waits for a training plan that could take it
            typed = [p for p in self._plans if p.instance_type in job.demand]
            self._waits(job, waiting_for.not_on_plans(job, typed, self._now))
            return
        if self._deferred and self._defers(placed, share):
            return
        self._offer(placed, share, may_defer=True)

    def _offer(self, job: WaitingJob, share: Share, may_defer: bool) -> None:
        lost = [itype for itype in job.demand if itype not in self._capacity]
        if lost:  # its type lost its capacity after it was queued; it cannot start
            gone = f"the queue has no capacity of {', '.join(lost)} any more"
            self._waits(job, WaitingFor(Reason.NO_CAPACITY, gone))
            return
        keys = [(share.name, itype) for itype in job.demand]
        if any(key in self._held for key in keys):
            if all(key in self._collecting for key in keys) and not self._lowering:
                self._collect(job, keys)  # behind a borrower: it may borrow too
            else:
                self._close(job, share)
            return
        pool = self._own_pool(job, share)
        reserved_from = min((self._reserved.get(k, math.inf) for k in keys), default=math.inf)
        if reserved_from < math.inf:
            self._backfill(job, share, pool, reserved_from)
            return
        if pool is not None:
            self._start_on(job, pool, share)
            return
        if self._admits(job, share, borrow=False, may_defer=may_defer and not self._lowering):
            return
        if self._lowering:  # a spent budget's job: only what nobody else wants, no preempting
            if not (share.borrows and self._admits(job, share, borrow=True, may_defer=False)):
                self._hold(job, share)
            return
        victims = self._reclaim(job, share)
        if victims is not None:
            self._admit(job, share, victims)
            return
        if self._may_borrow(job, share):
            self._heads_at(job, share)
            self._held.update(keys)
            self._collecting.update(keys)
            self._collect(job, keys)
            return
        found = self._make_room(job, share)
        if found is not None:
            self._admit(job, share, found)
            return
        self._hold(job, share)

    def plan(self) -> Plan:
        """What the pass decided. The jobs that let warm matches go first are decided, then
        the jobs put aside to borrow (rule 4), in queue order: a share's first job that
        cannot borrow after all may still make room (rule 5), or holds back the later ones."""
        for key in list(self._deferred):
            self._end_deferral(key)
        closed: set[tuple[str, str]] = set()
        for job in self._borrowing_order():
            share = self._shares[self._ledger.owner(job.share)]
            keys = [(share.name, itype) for itype in job.demand]
            if any(key in closed for key in keys):
                self._waits(job, self._behind_head(job, share))
                continue
            if self._warm_instead(job, share):
                closed.update(keys)
                continue
            if self._admits(job, share, borrow=True, may_defer=False):
                continue
            found = self._make_room(job, share)
            if found is not None:
                self._admit(job, share, found)
            else:
                self._waits(job, self._diagnose(job, share))
                closed.update(keys)
        self._decide_lowered()
        return self._decided()

    def _borrowing_order(self) -> list[WaitingJob]:
        """The jobs put aside to borrow, in queue order; with fair share, the shares that
        used least per instance of their limit lately first."""
        if self._policy.fair_share is None:
            return self._borrowers
        standing = fair_share.standings(self._seen, self._policy.fair_share)
        return sorted(
            self._borrowers,
            key=lambda job: standing.of_share(self._shares[self._ledger.owner(job.share)]),
        )

    # -- rules 2 to 6 ----------------------------------------------------------------------

    def _admits(self, job: WaitingJob, share: Share, borrow: bool, may_defer: bool) -> bool:
        """Rule 2 (with ``borrow``, rule 4): start the job if its share may take its demand, on
        free instances; else on idle pools released for it, if that lets it start now; else
        once the stops under way finish. False if none of these is enough."""
        demand = job.demand
        if self._has_room(share, demand, soon=False, borrow=borrow):
            self._start(job, share)
            return True
        pool = self._matched_pool(job, share, borrow)
        if pool is not None:
            self._start_on(job, pool, share)
            return True
        pools = self._search(job, share, self._releasable_pools(job, share), borrow, soon=False)
        if pools is not None:
            if may_defer and affinity.may_defer(job, self._policy, self._now):
                self._deferred[share.name, next(iter(demand))] = Deferral(job.priority, [job])
            else:
                self._admit(job, share, pools)
            return True
        if self._has_room(share, demand, soon=True, borrow=borrow):
            self._admit(job, share, ())
            return True
        return False

    def _reclaim(self, job: WaitingJob, share: Share) -> tuple[Holder, ...] | None:
        """Rule 3: jobs on borrowed capacity to stop (and idle pools to release) so that
        ``job`` gets its share's own capacity."""
        if not self._policy.preemption:
            return None
        own_pools = [p for p in self._pools.of_types(job.demand) if self._owner(p) == share.name]
        if not all(
            count <= self._ledger.idle(share.name, t) + sum(p.demand.get(t, 0) for p in own_pools)
            for t, count in job.demand.items()
        ):
            return None

        def on_borrowed(ledger: ShareLedger, candidate: ActiveJob) -> bool:
            return ledger.owner(candidate.share) != share.name and any(
                itype in job.demand and ledger.borrowed(candidate.share, itype) > 0
                for itype in candidate.demand
            )

        # Only jobs on borrowed capacity now can be (taking victims only lowers borrowing).
        borrowers = [c for c in self._candidates() if on_borrowed(self._ledger, c)]
        candidates = itertools.chain(
            self._releasable_pools(job, share),
            least_lost_first(borrowers, self._lost, self._policy),
        )
        return self._search(job, share, candidates, eligible=on_borrowed)

    def _may_borrow(self, job: WaitingJob, share: Share) -> bool:
        """Rule 4: the job could borrow lent capacity (on instances free or about to free, or
        on idle pools released for it)."""
        if not share.borrows:
            return False
        if self._has_room(share, job.demand, soon=True, borrow=True):
            return True
        pools = self._releasable_pools(job, share)
        return self._search(job, share, pools, borrow=True) is not None

    def _make_room(self, job: WaitingJob, share: Share) -> tuple[Holder, ...] | None:
        """Rule 5: idle pools (oldest first), then, with preemption on, strictly
        lower-priority running jobs of its share: the fewest that let it start."""
        candidates: Iterable[Holder] = self._releasable_pools(job, share)
        if self._policy.preemption and share.in_share_preemption:
            lower = itertools.takewhile(lambda c: c.priority < job.priority, self._candidates())
            running = least_lost_first(lower, self._lost, self._policy)
            candidates = itertools.chain(candidates, running)

        def lower_in_share(ledger: ShareLedger, candidate: ActiveJob) -> bool:
            return (
                ledger.owner(candidate.share) == share.name
                and candidate.priority < job.priority
                and any(itype in job.demand for itype in candidate.demand)
            )

        return self._search(job, share, candidates, eligible=lower_in_share)

    def _hold(self, job: WaitingJob, share: Share) -> None:
        """Rule 6: the job waits; later jobs of its share and types wait too, or, with
        backfill, may use its share's free instances until it could start."""
        self._waits(job, self._diagnose(job, share))
        for placed in [job, *self._alternatives.pop(job.name, ())]:
            self._heads_at(placed, share)
            keys = [(share.name, itype) for itype in placed.demand]
            shadow = self._latest_start(placed) if self._policy.backfill else math.inf
            if shadow == math.inf:
                self._held.update(keys)
                continue
            for key in keys:
                self._reserved[key] = min(self._reserved.get(key, math.inf), shadow)

    def _close(self, job: WaitingJob, share: Share) -> None:
        """A job behind a held one: its types close for its share (at every place it waits)."""
        if self._policy.warm_affinity_s and len(job.demand) == 1:
            behind = self._behind.setdefault((share.name, next(iter(job.demand))), [])
            if len(behind) < self._policy.affinity_window:
                behind.append(job)  # it may take a pool a borrower ahead would release
        self._waits(job, self._behind_head(job, share))
        for placed in [job, *self._alternatives.pop(job.name, ())]:
            keys = [(share.name, itype) for itype in placed.demand]
            self._held.update(keys)
            self._collecting.difference_update(keys)

    def _collect(self, job: WaitingJob, keys: list[tuple[str, str]]) -> None:
        self._borrowers.append(job)
        for key in keys:
            self._collected[key] = self._collected.get(key, 0) + job.demand[key[1]]
            if self._collected[key] > self._ledger.lendable(key[1]):
                self._collecting.discard(key)  # later jobs of the share could not borrow


def plan(
    seen: Snapshot,
    waiting: Iterable[WaitingJob],
    policy: Policy = DEFAULT_POLICY,
    lost_work: LostWork | None = None,
) -> Plan:
    """Plan one pass over a queue (``waiting`` in queue order, read only as far as needed;
    with fair share, all of it is read to be put in fair-share order)."""
    planner = Planner(seen, policy, lost_work)
    for job in fair_share.fair_order(waiting, seen, policy.fair_share):
        planner.offer(job)
        if not planner.open_types:
            break
    return planner.plan()


def explain(
    seen: Snapshot,
    waiting: Iterable[WaitingJob],
    policy: Policy = DEFAULT_POLICY,
    lost_work: LostWork | None = None,
) -> dict[str, WaitingFor]:
    """Why each of ``waiting`` (in queue order) does not start in the pass over ``seen``:
    the pass itself, offered every job rather than only as far as one could still start."""
    planner = Planner(seen, policy, lost_work)
    for job in fair_share.fair_order(waiting, seen, policy.fair_share):
        planner.offer(job)
    return dict(planner.plan().waiting)
