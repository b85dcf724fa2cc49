"""Why a job the pass does not start waits: the pass's own reading of its counts, at the
moment it decides (:class:`Diagnosis`, a step of :class:`~job_queue.scheduler.planner.Planner`).

The codes are :class:`~job_queue.scheduler.waiting_for.Reason`; the checks go from the most
particular to the most general:

1. ``min-runtime``: the lower-priority jobs it would preempt have not run long enough yet;
2. ``borrow-limit`` / ``share-limit`` (with quota shares): its share's own limit is used, and
   it may borrow no more (or nothing is lent);
3. ``reserved-elsewhere``: instances (or idle pools) it could use belong to a RESERVE share;
4. ``higher-priority`` / ``queue-order``: the jobs that hold its instances, or started on
   them in this pass — of higher priority, or of its own (first come, first served) or lower
   (never preempted: preemption is off, or its share does not preempt within itself).

A job behind the first held job of its share and instances waits behind it
(``higher-priority``, ``fair-share`` or ``queue-order``, as that job compares with it), or,
with backfill, is ``held-for`` it when it could end too late.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

from job_queue.scheduler import waiting_for
from job_queue.scheduler.order import least_lost_first, preemption_order
from job_queue.scheduler.pass_state import PassState
from job_queue.scheduler.reservations import key_type
from job_queue.scheduler.room import instances_for
from job_queue.scheduler.shares import Share, ShareLedger
from job_queue.scheduler.snapshot import ActiveJob, WaitingJob
from job_queue.scheduler.waiting_for import Reason, WaitingFor, iso, named


class Diagnosis(PassState):
    """The reasons of the pass's waiting jobs, and the first job held for each share and
    capacity key (the head the later jobs of that key wait behind)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._heads: dict[tuple[str, str], WaitingJob] = {}

    def _waits(self, job: WaitingJob, why: WaitingFor) -> None:
        """``job`` does not start in this pass, for ``why`` (a later decision replaces it);
        it is first in line unless a job held before it waits for any of its instances."""
        share = self._share_of(job.share)
        ahead = share is not None and any(
            (head := self._heads.get((share.name, key))) is not None and head.name != job.name
            for key in job.demand
        )
        self._why[job.name] = replace(why, first=not ahead)

    def _heads_at(self, job: WaitingJob, share: Share) -> None:
        for key in job.demand:
            self._heads.setdefault((share.name, key), job)

    def _head_of(self, job: WaitingJob, share: Share) -> WaitingJob | None:
        """The first job held for any of ``job``'s instances in its share (None: none yet)."""
        keys = ((share.name, key) for key in job.demand)
        return next((self._heads[k] for k in keys if k in self._heads), None)

    def _behind_head(self, job: WaitingJob, share: Share) -> WaitingFor:
        """``job`` waits behind the first held job of its share and instances."""
        head = self._head_of(job, share)
        if head is None or head.name == job.name:
            return self._diagnose(job, share)
        return waiting_for.behind(job, head, self._policy.fair_share is not None)

    def _held_for(self, job: WaitingJob, share: Share, reserved_from: float) -> WaitingFor:
        """Backfill: ``job`` could end after the held job ahead of it could start."""
        head = self._head_of(job, share)
        ahead = f"{head.name}, first in line for its instances," if head else "the job ahead"
        if job.max_runtime is None:
            why = "it has no MaxRuntimeInSeconds, so it could run past that"
        else:
            why = f"its MaxRuntimeInSeconds ({math.ceil(job.max_runtime)} s) would end after that"
        message = f"held for {ahead} which may start at {iso(reserved_from)} at the latest: {why}"
        jobs = (head.name,) if head else ()
        return WaitingFor(Reason.HELD_FOR, message, jobs, until=reserved_from, share=job.share)

    def _diagnose(self, job: WaitingJob, share: Share) -> WaitingFor:
        """Why ``job``, first in line for its instances, cannot start now."""
        why = (
            self._min_runtime(job, share)
            or self._over_quota(job, share)
            or self._reserved_elsewhere(job, share)
            or self._holders(job, share)
        )
        return waiting_for.with_plans_said(why, job, self._plans, self._now)

    def _min_runtime(self, job: WaitingJob, share: Share) -> WaitingFor | None:
        policy = self._policy
        if not (policy.preemption and share.in_share_preemption and policy.min_run_s > 0):
            return None
        running = [c for c in self._running if c.name not in self._victims]

        def lower_in_share(ledger: ShareLedger, candidate: ActiveJob) -> bool:
            return (
                ledger.owner(candidate.share) == share.name
                and candidate.priority < job.priority
                and any(itype in job.demand for itype in candidate.demand)
            )

        lower = sorted((c for c in running if c.priority < job.priority), key=preemption_order)
        candidates = itertools.chain(
            self._releasable_pools(job, share), least_lost_first(lower, self._lost, policy)
        )
        found = self._search(job, share, candidates, eligible=lower_in_share)
        protected = [
            v
            for v in found or ()
            if isinstance(v, ActiveJob) and self._now - v.started_at < policy.min_run_s
        ]
        if not protected:
            return None
        ends = min(v.started_at + policy.min_run_s for v in protected)
        message = (
            f"it would preempt {named(protected)}, which may not be preempted before "
            f"{iso(ends)} (minimum run time {policy.min_run_s:g} s)"
        )
        names = tuple(v.name for v in protected)
        return WaitingFor(Reason.MIN_RUNTIME, message, names, until=ends, share=job.share)

    def _over_quota(self, job: WaitingJob, share: Share) -> WaitingFor | None:
        if not self._seen.shares:
            return None  # the single queue's quota is the instances themselves
        ledger = self._ledger
        short = [key for key, n in job.demand.items() if n > ledger.idle(share.name, key)]
        if not short:
            return None  # its limit has room: lent out, or the instances are the trouble
        key = short[0]
        need = job.demand[key] - ledger.own_room(share, key)
        cap, borrowed = share.borrow_cap(key), ledger.borrowed_of_type(share.name, key)
        if share.borrows and ledger.lendable(key) >= need and borrowed + need > cap:
            message = (
                f"its share {share.name} borrows {borrowed} {key_type(key)} and may borrow at "
                f"most {cap:g} (borrow_limit {share.borrow_limit}%)"
            )
            return WaitingFor(Reason.BORROW_LIMIT, message, share=share.name)
        kept = self._kept(share, key) if share.borrows else []  # else: it could not borrow them
        if kept:
            message = (
                f"its share {share.name} holds its limit of {ledger.limit(share.name, key)} "
                f"{key}, and the idle ones are share {', '.join(kept)}'s, which keeps them for "
                "its own jobs (RESERVE)"
            )
            return WaitingFor(Reason.RESERVED_ELSEWHERE, message, share=kept[0])
        holders = [a for a in self._holding() if self._owner(a) == share.name and key in a.demand]
        limit = ledger.limit(share.name, key)
        if limit == 0:
            message = f"its share {share.name} has no {key} of its own"
        else:
            message = (
                f"its share {share.name} holds {ledger.in_use(share.name, key)} of its limit of "
                f"{limit} {key}" + (f" ({named(holders)})" if holders else "")
            )
        message += (
            ", and nothing idle is lent to borrow"
            if share.borrows
            else f" and does not borrow ({share.strategy})"
        )
        names = tuple(a.name for a in holders)
        return WaitingFor(Reason.SHARE_LIMIT, message, names, share=share.name)

    def _kept(self, share: Share, key: str) -> list[str]:
        """The RESERVE shares (other than ``share``) with idle instances of ``key``: free
        within their limit, or in their idle warm pools."""
        pools = {self._owner(p) for p in self._pools.of_types([key])}
        return [
            name
            for name in self._reserves_for(share)
            if self._ledger.idle(name, key) > 0 or name in pools
        ]

    def _reserved_elsewhere(self, job: WaitingJob, share: Share) -> WaitingFor | None:
        """Its share may take the instances, but the free ones are RESERVE shares' idle
        capacity (a job without a current share holds some of theirs)."""
        kept = sorted({name for key in job.demand for name in self._kept(share, key)})
        instances = self._instances(soon=True)
        if not kept or not instances_for(self._ledger, job.demand, instances, []):
            return None
        message = (
            f"the idle instances it needs are share {', '.join(kept)}'s, which keeps them "
            "for its own jobs (RESERVE)"
        )
        return WaitingFor(Reason.RESERVED_ELSEWHERE, message, share=kept[0])

    def _holders(self, job: WaitingJob, share: Share) -> WaitingFor:
        def uses(holder: ActiveJob | WaitingJob) -> bool:
            return any(key in job.demand for key in holder.demand)

        holding = [*filter(uses, self._holding()), *filter(uses, self._starts)]
        higher = sorted((h for h in holding if h.priority > job.priority), key=_by_priority)
        if higher:
            message = f"its instances are held by jobs of higher priority: {named(higher, True)}"
            names = tuple(h.name for h in higher)
            return WaitingFor(Reason.HIGHER_PRIORITY, message, names, share=job.share)
        outside = [o for o in self._seen.outside if any(k in job.demand for k in o.demand)]
        if not holding and outside:
            message = f"its instances are held by jobs started outside the queue: {named(outside)}"
            return WaitingFor(Reason.QUEUE_ORDER, message, tuple(o.name for o in outside))
        if not holding:
            message = "its instances are not free yet (idle warm pools it may not release)"
            return WaitingFor(Reason.QUEUE_ORDER, message, share=job.share)
        message = f"its instances are in use by {named(holding)}"
        if any(h.priority < job.priority for h in holding):
            message += (
                "; preemption is off"
                if not self._policy.preemption
                else f"; share {share.name} does not preempt within itself"
            )
        else:
            message += " (first come, first served)"
        names = tuple(h.name for h in holding)
        return WaitingFor(Reason.QUEUE_ORDER, message, names, share=job.share)

    def _holding(self) -> list[ActiveJob]:
        """Jobs that hold instances and keep them after this pass (neither stopping nor
        preempted by it)."""
        return [
            job
            for job in self._active
            if not job.state.is_stopping and job.name not in self._victims
        ]


def _by_priority(job: ActiveJob | WaitingJob) -> tuple[int, int]:
    return -job.priority, job.seq
