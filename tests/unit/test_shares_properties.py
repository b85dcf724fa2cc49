"""Quota shares on random workloads (hypothesis): every scheduling pass of a replay keeps the
promises the shares make, whatever the layout and the jobs — warm pools included."""

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from tjq.simulate.engine import SimSettings, queue_decision, simulate
from tjq.simulate.workload import WorkloadJob

from job_queue.models import JobState
from job_queue.scheduler import (
    ActiveJob,
    Planner,
    Policy,
    Share,
    ShareLedger,
    Snapshot,
    Strategy,
    total_capacity,
)

TYPES = ("ml.g5.xlarge", "ml.p5.48xlarge")


@st.composite
def layouts(draw) -> tuple[Share, ...]:
    count = draw(st.integers(1, 4))
    shares = []
    for i in range(count):
        strategy = draw(st.sampled_from(list(Strategy)))
        capacity = {
            t: draw(st.integers(0, 3)) for t in draw(st.sets(st.sampled_from(TYPES), min_size=1))
        }
        borrow_limit = (
            draw(st.sampled_from([-1, 0, 50, 100, 200]))
            if strategy is Strategy.LEND_AND_BORROW
            else -1
        )
        shares.append(Share(f"S{i}", capacity, strategy, borrow_limit, draw(st.booleans())))
    if not any(total_capacity(shares).values()):
        shares[0] = Share("S0", {TYPES[0]: 1}, shares[0].strategy, shares[0].borrow_limit)
    return tuple(shares)


@st.composite
def workloads(draw, shares: tuple[Share, ...], pools: bool = False) -> list[WorkloadJob]:
    capacity = total_capacity(shares)
    jobs = []
    for i in range(draw(st.integers(1, 40))):
        share = draw(st.sampled_from(shares))
        possible = [t for t in capacity if capacity[t] and min(capacity[t], share.most(t)) >= 1]
        if not possible:
            continue
        itype = draw(st.sampled_from(possible))
        most = int(min(capacity[itype], share.most(itype)))
        jobs.append(
            WorkloadJob(
                name=f"j{i}",
                submit_s=draw(st.integers(0, 600)),
                duration_s=draw(st.integers(1, 400)),
                priority=draw(st.integers(0, 3)),
                instance_type=itype,
                instance_count=draw(st.integers(1, most)),
                share=share.name,
                keep_alive_s=draw(st.sampled_from([None, 0, 50, 300])) if pools else None,
                warm_key=draw(st.sampled_from([None, "a", "b"])) if pools else None,
            )
        )
    return jobs


@dataclass
class Violations:
    found: list

    def check(self, condition: bool, what: str) -> None:
        if not condition:
            self.found.append(what)


def checked_decision(shares, violations: Violations):
    """The queue's own pass, with the promises checked on what it sees and decides."""
    by_name = {s.name: s for s in shares}
    reserve = [s for s in shares if s.strategy is Strategy.RESERVE]
    capacity = total_capacity(shares)

    def decide(seen: Snapshot, waiting, policy):
        active, pools, now = seen.active, seen.pools, seen.now
        waiting = list(waiting)
        plan = queue_decision(seen, waiting, policy)
        victims = {p.victim.name for p in plan.preemptions}
        gone = {r.pool.name for r in plan.releases} | {p.name for p in plan.warm.values()}
        kept = [p for p in pools if p.name not in gone and p.expires_at > now]
        # What holds instances once this pass's decisions are carried out. A share's jobs
        # keep within its limits; a pool a preempted job left may not (it is released for
        # any job that needs its instances), so the limits are checked on jobs.
        holders = [a for a in active if a.name not in victims and not a.state.is_stopping]
        ledger = ShareLedger(shares, [*holders, *_as_active(plan.starts)])
        physical = ShareLedger(shares, [*active, *kept, *_as_active(plan.starts)])
        for itype, total in capacity.items():
            held = sum(physical.in_use(s.name, itype) for s in shares)
            violations.check(held <= total, f"{now}: {held} x {itype} held of {total}")
            others = sum(
                physical.in_use(s.name, itype) for s in shares if s.strategy is not Strategy.RESERVE
            )
            reserved = sum(s.limit(itype) for s in reserve)
            violations.check(
                others <= total - reserved, f"{now}: RESERVE capacity of {itype} used by others"
            )
            for share in shares:
                most = share.most(itype)
                violations.check(
                    ledger.in_use(share.name, itype) <= most,
                    f"{now}: {share.name} holds {ledger.in_use(share.name, itype)} x {itype}",
                )
        # Reclaim only for a waiting job that fits within its own share's limit.
        before = ShareLedger(shares, [a for a in active if not a.state.is_stopping])
        preemptors = {job.name: job for job in waiting}
        for preemption in plan.preemptions:
            job = preemptors[preemption.preemptor]
            if preemption.victim.share == job.share:
                violations.check(
                    by_name[job.share].in_share_preemption
                    and preemption.victim.priority < job.priority,
                    f"{now}: in-share preemption of {preemption.victim.name} not allowed",
                )
                continue
            own_victims = [p.victim for p in plan.preemptions if p.victim.share == job.share]
            for itype, count in job.demand.items():
                freed = sum(v.demand.get(itype, 0) for v in own_victims)
                violations.check(
                    count <= before.idle(job.share, itype) + freed,
                    f"{now}: {job.name} reclaimed without fitting its share {job.share}",
                )
        return plan

    return decide


def _as_active(starts):
    return [
        ActiveJob(s.name, s.priority, s.seq, s.demand, JobState.STARTING, 0.0, share=s.share)
        for s in starts
    ]


@settings(max_examples=400, deadline=None)
@given(
    data=st.data(),
    stop=st.sampled_from([0.0, 30.0]),
    preemption=st.booleans(),
    pools=st.booleans(),
)
def test_shares_keep_their_promises_on_random_workloads(data, stop, preemption, pools):
    shares = data.draw(layouts())
    jobs = data.draw(workloads(shares, pools))
    if not jobs:
        return
    violations = Violations([])
    run = SimSettings(
        total_capacity(shares),
        stop_latency=stop,
        policy=Policy(preemption=preemption),
        shares=shares,
    )
    result = simulate(jobs, run, decide=checked_decision(shares, violations))
    assert violations.found == []
    # Nothing queued is lost: every job either ran to its end or is still waiting.
    assert all(job.state in ("completed", "pending", "preempted") for job in result.jobs)
    # The queue's own pass counts pools: SageMaker never has to refuse one of its starts.
    assert all(job.refused_starts == 0 for job in result.jobs)


def _reading_everything(shares):
    def decide(seen: Snapshot, waiting, policy):
        planner = Planner(seen, policy)
        for job in waiting:
            planner.offer(job)
        return planner.plan()

    return decide


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_reading_the_queue_only_as_far_as_a_share_could_start_a_job_changes_nothing(data):
    shares = data.draw(layouts())
    jobs = data.draw(workloads(shares, pools=data.draw(st.booleans())))
    if not jobs:
        return
    run = SimSettings(total_capacity(shares), stop_latency=30.0, shares=shares)
    lazy = simulate(jobs, run)
    full = simulate(jobs, run, decide=_reading_everything(shares))
    assert lazy.decisions == full.decisions
