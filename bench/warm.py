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
import statistics
from dataclasses import replace

from quality import HERE
from tabulate import tabulate
from tjq.simulate.baselines import blog_decision
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import report
from tjq.simulate.workload import read_workload

from job_queue.scheduler import Policy

WORKLOAD = "philly-6214e9-week"
COLD, WARM, STOP, KEEP_ALIVE = 300.0, 30.0, 60.0, 600.0
DAY = 86400.0


def runs() -> dict:
    """(label, keep-alive, policy, the blog's pass or None) of each run."""
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
    }


def warm_pools() -> dict:
    meta = json.loads((HERE / "workloads" / "workloads.json").read_text())[WORKLOAD]
    capacity = meta["capacity"]
    jobs = read_workload(HERE / "workloads" / f"{WORKLOAD}.csv", capacity)
    base = SimSettings(capacity, stop_latency=STOP, start_latency=COLD, warm_start_latency=WARM)
    results = {}
    for label, (keep_alive, policy, decide) in runs().items():
        settings = replace(base, keep_alive_s=keep_alive, policy=policy)
        answer = report(simulate(jobs, settings, decide=decide))
        metrics = answer["metrics"]
        by_key: dict[str, list[float]] = {}
        for row, job in zip(answer["jobs"], jobs, strict=True):
            if row["wait_s"] is not None:
                by_key.setdefault(job.warm_key, []).append(row["wait_s"])
        results[label] = {
            **{key: metrics[key] for key in REPORTED},
            "mean_jct_s": metrics["jct_s"]["mean"],
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
        f"stop {STOP:g}s; the queue keeps pools {KEEP_ALIVE:g}s\n\n{table}\n\n"
        f"Wait per configuration (mean / max):\n\n{per_configuration}"
    )
