"""Warm pools: a week of one Philly virtual cluster through the queue with and without pools,
with warm affinity, and through the blog's algorithm with keep-alive on (which does not count
pools). Part of `make bench` (bench/run.py).

The reference setting of the issue that asked for pools: a cold start takes 300 s, one on a
warm pool 30 s, a stop 60 s; the queue keeps pools 600 s; the blog is tried at 60 s and 600 s.
Jobs are spread over 8 team configurations by a Zipf draw (bench/make_workloads.py). A start
the blog makes that finds neither a pool nor a free instance is refused by SageMaker and
retried a minute later (the engine's model of a one-minute schedule).
"""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import replace

from billing import BILLED_HEADERS, BILLED_NOTE, billed, billed_cells
from quality import HERE
from tabulate import tabulate
from tjq.simulate.baselines import blog_decision
from tjq.simulate.engine import SimSettings, queue_decision, simulate
from tjq.simulate.metrics import report
from tjq.simulate.workload import read_workload

from job_queue.scheduler import Policy, Share, Strategy
from job_queue.scheduler.reservations import Reservation, TrainingPlan

WORKLOAD = "philly-6214e9-week"
P5 = "ml.p5.48xlarge"
COLD, WARM, STOP, KEEP_ALIVE = 300.0, 30.0, 60.0, 600.0
DAY = 86400.0


# The same week split between two teams that lend each other what they do not use: each
# job's team is a seeded draw; limits 22 and 21 of the 43 instances. The jobs keep their
# configurations (the teams train under one role, as in AWS's quota-share post), so a pool
# matches the jobs of either team of its configuration.
TEAMS = {"team-a": 22, "team-b": 21}


def team_shares(plan: TrainingPlan | None = None) -> tuple[Share, ...]:
    """The two teams; with ``plan``, team-b's instances are the plan's reservation."""
    return tuple(
        Share(
            name,
            {P5: 0 if plan and name == "team-b" else limit},
            Strategy.LEND_AND_BORROW,
            in_share_preemption=True,
            plans=((P5, plan.arn),) if plan and name == "team-b" else (),
        )
        for name, limit in TEAMS.items()
    )


# team-b's 21 instances reserved for the whole replay (60 days) instead of on demand.
TEAM_B_PLAN = TrainingPlan(
    "arn:aws:sagemaker:sim:000000000000:training-plan/team-b",
    P5,
    "Active",
    (Reservation(TEAMS["team-b"], 0.0, 60 * DAY),),
)


def with_teams(jobs):
    draw = random.Random(20261202)
    teams = [draw.choice(list(TEAMS)) for _ in jobs]
    return [replace(job, share=team) for job, team in zip(jobs, teams, strict=True)]


def runs() -> dict:
    """(label, keep-alive, policy, the blog's pass or None[, shares, plans]) of each run."""
    return {
        "blog, no pools": (0.0, Policy(), blog_decision),
        "blog, keep-alive 60 s (pools not counted)": (60.0, Policy(), blog_decision),
        "blog, keep-alive 600 s (pools not counted)": (600.0, Policy(), blog_decision),
        "queue, cold starts only": (0.0, Policy(), None),
        "queue, pools, strict order": (KEEP_ALIVE, Policy(), None),
        "queue, pools, warm affinity 1 day": (KEEP_ALIVE, Policy(warm_affinity_s=DAY), None),
        "queue, pools, warm affinity unbounded": (
            KEEP_ALIVE,
            Policy(warm_affinity_s=math.inf),
            None,
        ),
        "two lending shares, pools, strict order": (KEEP_ALIVE, Policy(), None, team_shares()),
        "two lending shares, pools, warm affinity unbounded": (
            KEEP_ALIVE,
            Policy(warm_affinity_s=math.inf),
            None,
            team_shares(),
        ),
        "two lending shares, team-b on a training plan, warm affinity unbounded": (
            KEEP_ALIVE,
            Policy(warm_affinity_s=math.inf),
            None,
            team_shares(TEAM_B_PLAN),
            (TEAM_B_PLAN,),
        ),
    }


class WantedReleases:
    """The queue's own pass, counting the pools it releases that a job of the highest waiting
    priority matched (a warm start given away): it reads, after each pass that releases a
    pool, the rest of the head priority's jobs, which the pass itself may not have read."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, seen, waiting, policy):
        read: list = []
        waiting = iter(waiting)
        plan = queue_decision(seen, _recorded(waiting, read), policy)
        if plan.releases:
            started = {job.name for job in plan.starts}
            left = [job for job in read if job.name not in started]
            head = max((job.priority for job in left), default=None)
            for job in waiting if head is not None else ():
                if job.priority != head:
                    break
                left.append(job)
            heads = [job for job in left if job.priority == head]
            self.count += sum(any(r.pool.matches(job) for job in heads) for r in plan.releases)
        return plan


def _recorded(jobs, read: list):
    for job in jobs:
        read.append(job)
        yield job


def warm_pools() -> dict:
    meta = json.loads((HERE / "workloads" / "workloads.json").read_text())[WORKLOAD]
    capacity = meta["capacity"]
    jobs = read_workload(HERE / "workloads" / f"{WORKLOAD}.csv", capacity)
    base = SimSettings(capacity, stop_latency=STOP, start_latency=COLD, warm_start_latency=WARM)
    results = {}
    teams = with_teams(jobs)
    for label, (keep_alive, policy, decide, *layout) in runs().items():
        shared, plans = (*layout, (), ())[:2]
        settings = replace(base, keep_alive_s=keep_alive, policy=policy, shares=shared, plans=plans)
        counted = WantedReleases() if decide is None else None
        replayed = teams if shared else jobs
        replay = simulate(replayed, settings, decide=decide or counted)
        answer = report(replay)
        metrics = answer["metrics"]
        by_key: dict[str, list[float]] = {}
        for row, job in zip(answer["jobs"], jobs, strict=True):
            if row["wait_s"] is not None:
                by_key.setdefault(job.warm_key, []).append(row["wait_s"])
        results[label] = {
            **{key: metrics[key] for key in REPORTED},
            "released_pools_a_head_job_matched": None if counted is None else counted.count,
            "mean_jct_s": metrics["jct_s"]["mean"],
            "billed": billed(replay),
            "wait_s_by_configuration": {
                key: {"mean": statistics.fmean(waits), "max": max(waits)}
                for key, waits in sorted(by_key.items(), key=lambda item: int(item[0][5:]))
            },
        }
    return {"source": meta["source"], "capacity": capacity, "runs": results}


REPORTED = (
    "progress_s_by_priority",
    "cold_starts",
    "warm_starts",
    "provisioning_instance_s",
    "warm_pool_instance_s",
    "refused_starts",
    "released_pools",
    "utilization",
)


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def warm_pools_table(result: dict) -> str:
    pool = ", ".join(f"{n} x {t}" for t, n in result["capacity"].items())
    baseline = result["runs"]["blog, no pools"]
    rows = []
    for label, run in result["runs"].items():
        top = run["progress_s_by_priority"][max(run["progress_s_by_priority"], key=int)]
        rows.append(
            (
                label,
                f"{top['p95']:.0f} s",
                f"{run['mean_jct_s'] / 3600:.2f} h",
                f"{run['mean_jct_s'] / baseline['mean_jct_s'] - 1:+.0%}",
                f"{run['cold_starts']:,}",
                f"{run['warm_starts']:,}",
                f"{run['provisioning_instance_s'] / 3600:,.0f}",
                f"{run['provisioning_instance_s'] / baseline['provisioning_instance_s'] - 1:+.0%}",
                f"{run['warm_pool_instance_s'] / 3600:,.0f}",
                f"{run['refused_starts']:,}",
                _count(run["released_pools"]),
                _count(run["released_pools_a_head_job_matched"]),
                *billed_cells(run["billed"], baseline["billed"]),
            )
        )
    table = tabulate(
        rows,
        tablefmt="github",
        disable_numparse=True,
        headers=(
            "run",
            "top prio p95 to progress",
            "mean JCT",
            "vs blog",
            "cold starts",
            "warm starts",
            "provisioning inst-h",
            "vs blog",
            "idle pool inst-h",
            "refused starts",
            "released pools",
            "of which a head job matched",
            *BILLED_HEADERS,
        ),
    )
    configurations = list(baseline["wait_s_by_configuration"])
    shown = (
        "blog, no pools",
        "queue, pools, strict order",
        "queue, pools, warm affinity 1 day",
        "queue, pools, warm affinity unbounded",
    )
    waits = [
        (
            key,
            *(
                f"{result['runs'][label]['wait_s_by_configuration'][key]['mean'] / 3600:.2f} / "
                f"{result['runs'][label]['wait_s_by_configuration'][key]['max'] / 3600:.1f} h"
                for label in shown
            ),
        )
        for key in configurations
    ]
    per_configuration = tabulate(
        waits, tablefmt="github", disable_numparse=True, headers=("configuration", *shown)
    )
    return (
        f"{WORKLOAD}: {result['source']}\n\n{pool}; cold start {COLD:g}s, warm {WARM:g}s, "
        f"stop {STOP:g}s; the queue keeps pools {KEEP_ALIVE:g}s; {BILLED_NOTE}\n\n{table}\n\n"
        f"Wait per configuration (mean / max):\n\n{per_configuration}"
    )
