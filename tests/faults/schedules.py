"""Seeded fault schedules: an hour of a team's use of the queue (submissions, cancels,
priority changes, two invocations at once) while DynamoDB and SageMaker go away for minutes,
EventBridge drops, duplicates and delays events, invocations die at random calls and the
containers' clocks disagree by seconds; then calm, and the invariants.

A schedule is a function of its seed alone: ``python -m tests.faults --seed N`` replays it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from tjq.local.calls import api_event

from job_queue import tags
from tests.faults.moments import FAIR, KEEP_POOLS, TEAMS, job
from tests.faults.wire import Outage
from tests.faults.world import SWEEP, EventFaults, World

HOUR = 3600.0
# The layouts a schedule runs in: a single queue, one that keeps warm pools, two teams, and
# fair share among three submitters (whose order is not first come, first served).
LAYOUTS = (
    ("single queue", {}),
    ("warm pools", KEEP_POOLS),
    ("two teams' shares", {"shares": TEAMS, "strict_order": False}),
    ("fair share", {**FAIR, "strict_order": False}),
)
SUBMITTERS = ("alice", "bob", "carol")
_OUTAGES = (
    ("dynamodb", frozenset()),
    ("dynamodb", frozenset({"transact_write_items"})),
    ("sagemaker", frozenset()),
    ("sagemaker", frozenset({"create_training_job"})),
)


@dataclass(frozen=True)
class Schedule:
    """What one seed ran, and what came of it."""

    seed: int
    layout: str
    jobs: int
    violations: tuple[str, ...]
    recovery_s: float
    faults: dict

    @property
    def replay(self) -> str:
        return f"python -m tests.faults --seed {self.seed}"


def run(seed: int) -> Schedule:
    rng = random.Random(seed)
    layout, options = rng.choice(LAYOUTS)
    faults = EventFaults(drop=0.05, duplicate=0.1, delay_s=rng.choice((0.0, 30.0, 90.0)))
    world = World(seed, events=faults, skew_s=5.0, **options)
    try:
        world.kill_chance = 0.03
        for _ in range(rng.randint(1, 3)):
            service, only = rng.choice(_OUTAGES)
            start = rng.uniform(0, HOUR)
            world.wire.outages.append(
                Outage(
                    service,
                    start + world.clock(),
                    start + world.clock() + rng.uniform(60, 600),
                    only,
                )
            )
        fair = "policy" in options
        shares = [s.name for s in options.get("shares", ())]
        names = _play(world, rng, shares, SUBMITTERS if fair else ())
        recovery = world.calm()
        return Schedule(
            seed, layout, names, tuple(world.violations), recovery, dict(world.wire.injected)
        )
    finally:
        world.close()


def _play(world: World, rng: random.Random, shares: list[str], submitters=()) -> int:
    """An hour of use: a job every few minutes (of one of ``submitters``, if any; some
    waiting for an earlier one), some cancelled or reprioritised, now and then a submission
    that overlaps the sweep."""
    start, count = world.clock(), rng.randint(6, 12)
    times = sorted(rng.uniform(0, HOUR) for _ in range(count))
    for i, at in enumerate(times):
        world.run_until(start + at)
        name = f"job-{i}"
        request = job(
            name,
            priority=rng.randint(0, 4),
            count=rng.choice((1, 1, 2)),
            run_seconds=rng.choice((120, 300, 900)),
            share=rng.choice(shares) if shares else None,
        )
        if submitters:
            who = rng.choice(submitters)
            request["Tags"].append({"Key": tags.FAIR_SHARE_ID, "Value": who})
        if i and rng.random() < 0.25:  # it waits for an earlier job (afterok mostly)
            kind = rng.choice(("afterok", "afterok", "after", "afternotok"))
            parent = f"job-{rng.randrange(i)}"
            request["Tags"].append({"Key": tags.DEPENDS_ON, "Value": f"{kind}:{parent}"})
        if rng.random() < 0.2:
            world.names.add(name)
            event = api_event("POST", "/add-job", json.dumps(request))
            for invocation in world.overlapping([(event, f"POST {name}"), (SWEEP, "sweep")]):
                answer = invocation.result
                if isinstance(answer, dict) and answer.get("statusCode") in (200, 201):
                    world.accepted.add(name)
        else:
            world.submit(request)
        if i and rng.random() < 0.15:
            world.request("DELETE", f"/jobs/job-{rng.randrange(i)}")
        elif i and rng.random() < 0.2:
            body = {"priority": rng.randint(0, 6)}
            world.request("PUT", f"/jobs/job-{rng.randrange(i)}/priority", body)
    world.run_until(start + HOUR)
    return count
