"""Schedule quality: the benchmark workloads through the queue and its baselines, and the
ITP workload split into team quota shares. Part of `make bench` (bench/run.py)."""

from __future__ import annotations

import json
import random
import statistics
from dataclasses import replace
from pathlib import Path

from tabulate import tabulate
from tjq.simulate.baselines import blog_decision, fifo, unprioritised
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import percentile, report
from tjq.simulate.workload import read_workload

from job_queue.scheduler import Policy, Share, Strategy

HERE = Path(__file__).resolve().parent
STOP_LATENCY = 120.0  # a SageMaker stop takes minutes; two is optimistic
START_LATENCY = 180.0  # provisioning before a job makes progress
MIN_RUN = 1800.0  # the minimum run time the benchmark tries: half an hour


def quality() -> dict:
    index = json.loads((HERE / "workloads" / "workloads.json").read_text())
    results = {}
    for name, meta in index.items():
        if meta.get("benchmark", "quality") != "quality":
            continue
        capacity = meta["capacity"]
        jobs = read_workload(HERE / "workloads" / f"{name}.csv", capacity)
        settings = SimSettings(capacity, stop_latency=STOP_LATENCY, start_latency=START_LATENCY)
        runs = {"queue (defaults)": simulate(jobs, settings)}
        strict = replace(settings, policy=Policy(backfill=False))
        runs["queue, Backfill=false"] = simulate(jobs, strict)
        protected = replace(settings, policy=Policy(min_run_s=MIN_RUN))
        runs[f"queue, MinRunSeconds={MIN_RUN:g}"] = simulate(jobs, protected)
        fifo_run = simulate(unprioritised(jobs), settings, decide=fifo)
        for result, spec in zip(fifo_run.jobs, jobs, strict=True):
            result.spec = spec  # report waits by the jobs' real priorities
        runs["FIFO, no preemption"] = fifo_run
        if len(capacity) == 1 and all(job.instance_count == 1 for job in jobs):
            runs["blog baseline"] = simulate(jobs, settings, decide=blog_decision)
        results[name] = {
            "source": meta["source"],
            "capacity": capacity,
            "offered_load": meta["offered_load"],
            "schedulers": {label: report(run)["metrics"] for label, run in runs.items()},
        }
    return results


def quality_table(results: dict) -> str:
    parts = []
    for name, workload in results.items():
        pool = ", ".join(f"{n} x {t}" for t, n in workload["capacity"].items())
        parts.append(
            f"### {name}: {workload['source']}\n\n{pool}, offered load "
            f"{workload['offered_load']:.0%}; stop {STOP_LATENCY:g}s, start "
            f"{START_LATENCY:g}s\n"
        )
        rows = []
        for label, m in workload["schedulers"].items():
            available = sum(workload["capacity"].values()) * m["makespan_s"]
            by_priority = m["wait_s_by_priority"]
            top, low = max(by_priority, key=int), min(by_priority, key=int)
            rows.append(
                (
                    label,
                    f"{m['utilization']:.1%}",
                    f"{m['goodput']:.1%}",
                    f"{m['idle_while_waiting_instance_s'] / available:.2%}",
                    m["preemptions"],
                    f"{m['lost_instance_s'] / 3600:.0f}",
                    _h(by_priority[top]["p95"]),
                    _h(by_priority[top]["mean"]),
                    _h(by_priority[low]["p95"]),
                    _h(m["jct_s"]["mean"]),
                )
            )
        parts.append(
            tabulate(
                rows,
                tablefmt="github",
                headers=(
                    "scheduler",
                    "utilization",
                    "goodput",
                    "idle while waiting",
                    "preemptions",
                    "lost inst-h",
                    "top prio p95 wait",
                    "top prio mean wait",
                    "low prio p95 wait",
                    "mean JCT",
                ),
            )
        )
    return "\n\n".join(parts)


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"


# -- quota shares ---------------------------------------------------------------------------

# Three teams share ITP's 20 instances. Each job is given to a team by a seeded draw (40% /
# 40% / 20%) among the teams whose own limit can hold it, so every layout can run every job.
TEAMS = {"vision": 8, "language": 8, "research": 4}
TEAM_WEIGHTS = {"vision": 4, "language": 4, "research": 2}


def team_shares(strategy: Strategy) -> tuple[Share, ...]:
    return tuple(
        Share(name, {"ml.p5.48xlarge": limit}, strategy, in_share_preemption=True)
        for name, limit in TEAMS.items()
    )


def with_teams(jobs):
    draw = random.Random(20261129)
    out = []
    for job in jobs:
        teams = [t for t, limit in TEAMS.items() if job.instance_count <= limit]
        team = draw.choices(teams, weights=[TEAM_WEIGHTS[t] for t in teams])[0]
        out.append(replace(job, share=team))
    return out


def shares_comparison() -> dict:
    index = json.loads((HERE / "workloads" / "workloads.json").read_text())
    meta = index["itp-cluster03"]
    jobs = with_teams(read_workload(HERE / "workloads" / "itp-cluster03.csv", meta["capacity"]))
    # Each layout in strict order (as the pass with shares was before it had backfill) and
    # with the queue's defaults (backfill on), which every layout now has.
    strict = Policy(backfill=False)
    layouts = {
        "one queue (no shares)": ((), Policy()),
        "RESERVE (no lending), strict order": (team_shares(Strategy.RESERVE), strict),
        "RESERVE (no lending), backfill": (team_shares(Strategy.RESERVE), Policy()),
        "LEND_AND_BORROW (unlimited), strict order": (
            team_shares(Strategy.LEND_AND_BORROW),
            strict,
        ),
        "LEND_AND_BORROW (unlimited), backfill": (team_shares(Strategy.LEND_AND_BORROW), Policy()),
    }
    results = {}
    for label, (shares, policy) in layouts.items():
        settings = SimSettings(
            meta["capacity"],
            stop_latency=STOP_LATENCY,
            start_latency=START_LATENCY,
            shares=shares,
            policy=policy,
        )
        answer = report(simulate(jobs, settings))
        metrics = answer["metrics"]
        per_team = {}
        for team in TEAMS:
            rows = [row for row, job in zip(answer["jobs"], jobs, strict=True) if job.share == team]
            waits = [row["wait_s"] for row in rows if row["wait_s"] is not None]
            per_team[team] = {
                "jobs": len(rows),
                "mean_wait_s": statistics.fmean(waits) if waits else 0.0,
                "p95_wait_s": percentile(waits, 95),
                "use_of_own_limit": (metrics.get("by_share") or {})
                .get(team, {})
                .get("utilization"),
            }
        results[label] = {
            "utilization": metrics["utilization"],
            "preemptions": metrics["preemptions"],
            "mean_jct_s": metrics["jct_s"]["mean"],
            "teams": per_team,
        }
    return results


def shares_table(results: dict) -> str:
    pool = ", ".join(f"{team} {limit}" for team, limit in TEAMS.items())
    rows = []
    for label, run in results.items():
        for n, (team, t) in enumerate(run["teams"].items()):
            use = t["use_of_own_limit"]
            rows.append(
                (
                    label if n == 0 else "",
                    f"{run['utilization']:.1%}" if n == 0 else "",
                    run["preemptions"] if n == 0 else "",
                    team,
                    t["jobs"],
                    _h(t["mean_wait_s"]),
                    _h(t["p95_wait_s"]),
                    "" if use is None else f"{use:.0%}",
                )
            )
    table = tabulate(
        rows,
        tablefmt="github",
        headers=(
            "layout",
            "utilization",
            "preemptions",
            "team",
            "jobs",
            "mean wait",
            "p95 wait",
            "use of own limit",
        ),
        disable_numparse=True,
    )
    return (
        f"itp-cluster03 on 20 x ml.p5.48xlarge split into three team shares ({pool}); "
        f"stop {STOP_LATENCY:g}s, start {START_LATENCY:g}s\n\n{table}"
    )
