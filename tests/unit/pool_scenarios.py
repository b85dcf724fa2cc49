"""The jobs, pools and scenario check of the warm-pool scheduling scenarios: every decision is
checked, the inputs are never changed, and no start goes over the capacity."""

import copy
from dataclasses import dataclass, field

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, WaitingJob, plan
from job_queue.scheduler.snapshot import Snapshot, WarmPool

P5 = "ml.p5.48xlarge"
NOW = 10_000.0


def waiting(
    name, priority=0, instances=1, key="a", seq=None, max_runtime=None, share=None, waited=60
):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq if seq is not None else sum(map(ord, name)),
        demand={P5: instances},
        max_runtime=max_runtime,
        share=share,
        warm_key=key,
        submitted_at=NOW - waited,
    )


def running(name, priority=0, instances=1, started=0.0, state=JobState.RUNNING, share=None):
    return ActiveJob(
        name=name,
        priority=priority,
        seq=len(name),
        demand={P5: instances},
        state=state,
        started_at=started,
        max_runtime=1000,
        share=share,
    )


def pool(name, key="a", instances=1, since=NOW - 100, expires=NOW + 500, share=None):
    return WarmPool(
        name=f"{name}-job",
        job=name,
        demand={P5: instances},
        key=key,
        since=since,
        expires_at=expires,
        share=share,
    )


@dataclass
class Scenario:
    title: str
    waiting: list
    pools: list
    active: list = field(default_factory=list)
    capacity: int = 2
    starts: list = field(default_factory=list)
    warm: dict = field(default_factory=dict)  # job -> the pool (by job that left it)
    released: list = field(default_factory=list)
    preempted: list = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)
    shares: tuple = ()


def check(s: Scenario) -> None:
    before = copy.deepcopy((s.waiting, s.active, s.pools))
    capacity = {P5: s.capacity}
    result = plan(Snapshot(NOW, capacity, s.active, s.pools, shares=s.shares), s.waiting, s.policy)
    assert [j.name for j in result.starts] == s.starts
    assert {name: p.job for name, p in result.warm.items()} == s.warm
    assert [r.pool.job for r in result.releases] == s.released
    assert [p.victim.name for p in result.preemptions] == s.preempted
    for release in result.releases:
        assert release.for_job in {j.name for j in s.waiting} and release.reason
    assert (s.waiting, s.active, s.pools) == before, "input was mutated"
    held = sum(a.demand[P5] for a in s.active) + sum(
        p.demand[P5] for p in s.pools if p.expires_at > NOW
    )
    cold = sum(j.demand[P5] for j in result.starts if j.name not in result.warm)
    released = sum(r.pool.demand[P5] for r in result.releases)
    stopping = sum(p.victim.demand[P5] for p in result.preemptions)
    assert held - released - stopping + cold <= s.capacity or not cold, "over capacity"
