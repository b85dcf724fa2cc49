"""Preemption without lost work: a week of one Philly virtual cluster with jobs that checkpoint
in different ways, through the blog's algorithm, the queue without its victim rule (the most
recently started goes first) and the queue (within a priority, the job that would lose
least goes first). Part of `make bench` (bench/run.py).

The reference setting of the issue that asked for it: a cold start takes 300 s, a stop 60 s,
no warm pools. "The mix" gives each job, by a seeded draw, one way of checkpointing: a third
save on stop (SIGTERM: a preempted attempt keeps all its progress), a third every 30 minutes,
a third not at all. Lost work is the progress preemptions threw away plus the time stopped
jobs held their instances. The last run adds the warm-pool table's best settings (pools kept
600 s, a warm start 30 s, unbounded warm affinity), for what both save together.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

from billing import BILLED_HEADERS, BILLED_NOTE, billed, billed_cells
from quality import HERE
from tabulate import tabulate
from tjq.simulate.baselines import blog_decision
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import report
from tjq.simulate.workload import WorkloadJob, read_workload
from warm import KEEP_ALIVE, WARM

from job_queue.scheduler import Policy

WORKLOAD = "philly-6214e9-week"
COLD, STOP = 300.0, 60.0
INTERVAL = 1800.0
SEED = 15


def with_mix(jobs: list[WorkloadJob], seed: int = SEED) -> list[WorkloadJob]:
    """The jobs, a third saving on stop, a third every 30 minutes, a third never (drawn)."""
    draw = random.Random(seed)
    ways = [{"saves_on_stop": True}, {"checkpoint_s": INTERVAL}, {}]
    return [replace(job, **draw.choice(ways)) for job in jobs]


def saving_on_stop(jobs: list[WorkloadJob]) -> list[WorkloadJob]:
    return [replace(job, saves_on_stop=True) for job in jobs]


def checkpoints() -> dict:
    meta = json.loads((HERE / "workloads" / "workloads.json").read_text())[WORKLOAD]
    capacity = meta["capacity"]
    plain = read_workload(HERE / "workloads" / f"{WORKLOAD}.csv", capacity)
    mixed = with_mix(plain)
    settings = SimSettings(capacity, stop_latency=STOP, start_latency=COLD)
    without_rule = replace(settings, policy=Policy(least_lost_work=False))
    runs = {
        "blog, no checkpoints": (plain, settings, blog_decision),
        "blog, the mix": (mixed, settings, blog_decision),
        "queue without the rule, the mix": (mixed, without_rule, None),
        "queue, the mix": (mixed, settings, None),
        "queue, every job saves on stop": (saving_on_stop(plain), settings, None),
        # Both ways of wasting less: the warm-pool table's best run, with every job saving.
        "queue, every job saves on stop, pools and warm affinity": (
            saving_on_stop(plain),
            replace(
                settings,
                keep_alive_s=KEEP_ALIVE,
                warm_start_latency=WARM,
                policy=Policy(warm_affinity_s=math.inf),
            ),
            None,
        ),
    }
    results = {}
    for label, (jobs, run_settings, decide) in runs.items():
        replay = simulate(jobs, run_settings, decide=decide)
        metrics = report(replay)["metrics"]
        by_priority = metrics["wait_s_by_priority"]
        results[label] = {
            "lost_instance_s": metrics["lost_instance_s"],
            "preemptions": metrics["preemptions"],
            "mean_jct_s": metrics["jct_s"]["mean"],
            "top_priority_p95_wait_s": by_priority[max(by_priority, key=int)]["p95"],
            "billed": billed(replay),
        }
    ways = {
        "on stop": sum(j.saves_on_stop for j in mixed),
        "every 30 min": sum(bool(j.checkpoint_s) for j in mixed),
        "none": sum(j.checkpoint is None for j in mixed),
    }
    return {"source": meta["source"], "capacity": capacity, "mix": ways, "runs": results}


def checkpoints_table(result: dict) -> str:
    pool = ", ".join(f"{n} x {t}" for t, n in result["capacity"].items())
    mix = ", ".join(f"{n:,} {way}" for way, n in result["mix"].items())
    baseline = result["runs"]["blog, no checkpoints"]
    rows = [
        (
            label,
            f"{run['lost_instance_s'] / 3600:,.0f}",
            f"{run['lost_instance_s'] / baseline['lost_instance_s'] - 1:+.0%}",
            f"{run['preemptions']:,}",
            f"{run['mean_jct_s'] / 3600:.2f} h",
            f"{run['mean_jct_s'] / baseline['mean_jct_s'] - 1:+.1%}",
            f"{run['top_priority_p95_wait_s']:.0f} s",
            *billed_cells(run["billed"], baseline["billed"]),
        )
        for label, run in result["runs"].items()
    ]
    table = tabulate(
        rows,
        tablefmt="github",
        disable_numparse=True,
        headers=(
            "run",
            "lost inst-h",
            "vs blog",
            "preemptions",
            "mean JCT",
            "vs blog",
            "top prio p95 wait",
            *BILLED_HEADERS,
        ),
    )
    return (
        f"{WORKLOAD}: {result['source']}\n\n{pool}; cold start {COLD:g}s, stop {STOP:g}s, "
        f"no warm pools; the mix: {mix} (seed {SEED}); {BILLED_NOTE}\n\n{table}"
    )
