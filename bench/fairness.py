"""Fair share by recent use: the fair-share workloads first come first served and with fair
share, side by side. Part of `make bench` (bench/run.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from quality import START_LATENCY, STOP_LATENCY
from tabulate import tabulate
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.fairness import by_submitter
from tjq.simulate.metrics import report
from tjq.simulate.workload import read_workload

from job_queue.scheduler import Policy
from job_queue.scheduler.fair_share import FairShare

HERE = Path(__file__).resolve().parent
HALF_LIFE = 86400.0  # a day: a sweep yesterday still counts today, last week's does not
SHOWN = 5  # the heaviest submitters shown one by one (the others as "the rest")


def fairness() -> dict:
    """Per workload: FIFO's and fair share's metrics and per-submitter waits."""
    index = json.loads((HERE / "workloads" / "workloads.json").read_text())
    results = {}
    for name, meta in index.items():
        if meta.get("benchmark") != "fair share":
            continue
        jobs = read_workload(HERE / "workloads" / f"{name}.csv", meta["capacity"])
        fifo = SimSettings(meta["capacity"], stop_latency=STOP_LATENCY, start_latency=START_LATENCY)
        fair = replace(fifo, policy=Policy(fair_share=FairShare(half_life_s=HALF_LIFE)))
        runs = {}
        for label, settings in (("first come, first served", fifo), ("fair share", fair)):
            result = simulate(jobs, settings)
            metrics = report(result)["metrics"]
            submitters, overall = by_submitter(result)
            runs[label] = {
                "jct_mean_s": metrics["jct_s"]["mean"],
                "utilization": metrics["utilization"],
                "idle_while_waiting_instance_s": metrics["idle_while_waiting_instance_s"],
                "fairness": overall,
                "submitters": submitters,
            }
        results[name] = {**meta, "half_life_s": HALF_LIFE, "schedulers": runs}
    return results


def fairness_table(results: dict) -> str:
    parts = []
    for name, workload in results.items():
        pool = ", ".join(f"{n} x {t}" for t, n in workload["capacity"].items())
        runs = workload["schedulers"]
        fifo, fair = runs["first come, first served"], runs["fair share"]
        parts.append(
            f"### {name}: {workload['source']}\n\n{pool}, offered load "
            f"{workload['offered_load']:.0%}, {len(fifo['submitters'])} submitters; "
            f"fair share with a half-life of {workload['half_life_s'] / 3600:g} h\n"
        )
        rows = [
            _row("light submitters' mean wait", fifo, fair, "light_mean_wait_s", _h),
            _row("heavy submitters' mean wait", fifo, fair, "heavy_mean_wait_s", _h),
            _row("Jain's index, mean slowdown", fifo, fair, "jain_slowdown", "{:.3f}".format),
            _metric("mean JCT", fifo, fair, "jct_mean_s", _h),
            _metric("utilization", fifo, fair, "utilization", "{:.1%}".format),
            _metric(
                "idle while jobs wait",
                fifo,
                fair,
                "idle_while_waiting_instance_s",
                lambda s: f"{s / 3600:.1f} instance-h",
            ),
        ]
        parts.append(tabulate(rows, ["", "FIFO", "fair share", "fair / FIFO"], tablefmt="github"))
        parts.append("\n" + _submitters(fifo["submitters"], fair["submitters"]) + "\n")
    return "\n".join(parts)


def _row(label, fifo, fair, key, shown):
    a, b = fifo["fairness"][key], fair["fairness"][key]
    return [label, shown(a), shown(b), f"{b / a:.2f}x" if a else ""]


def _metric(label, fifo, fair, key, shown):
    a, b = fifo[key], fair[key]
    return [label, shown(a), shown(b), f"{b / a:.2f}x" if a else ""]


def _submitters(fifo: dict, fair: dict) -> str:
    """The heaviest submitters' mean and p95 wait and mean slowdown, FIFO -> fair share."""
    heaviest = sorted(fifo, key=lambda who: -fifo[who]["instance_hours"])
    rows = []
    for who in heaviest[:SHOWN]:
        a, b = fifo[who], fair[who]
        rows.append(
            [
                who,
                a["jobs"],
                f"{a['instance_hours']:.0f}",
                f"{_h(a['wait_s']['mean'])} -> {_h(b['wait_s']['mean'])}",
                f"{_h(a['wait_s']['p95'])} -> {_h(b['wait_s']['p95'])}",
                f"{a['slowdown']['mean']:.1f} -> {b['slowdown']['mean']:.1f}",
            ]
        )
    rest = heaviest[SHOWN:]
    if rest:
        rows.append(
            [
                f"the other {len(rest)} (each)",
                "",
                "",
                f"{_h(_mean(fifo, rest, 'wait_s'))} -> {_h(_mean(fair, rest, 'wait_s'))}",
                "",
                f"{_mean(fifo, rest, 'slowdown'):.1f} -> {_mean(fair, rest, 'slowdown'):.1f}",
            ]
        )
    headers = ["submitter", "jobs", "instance-h", "mean wait", "p95 wait", "mean slowdown"]
    return tabulate(rows, headers, tablefmt="github")


def _mean(table: dict, who: list[str], key: str) -> float:
    """The mean over submitters of their mean ``key``."""
    return sum(table[w][key]["mean"] for w in who) / len(who)


def _h(seconds: float) -> str:
    return f"{seconds / 3600:.2f} h"
