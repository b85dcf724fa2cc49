"""Speed: `smq status`'s start-up, and the fast engine on the full Philly trace. Part of
`make bench` (bench/run.py)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from quality import HERE, START_LATENCY, STOP_LATENCY
from tabulate import tabulate
from tjq.simulate.engine import SimSettings, simulate


def speed(full_trace: bool) -> dict:
    result = {"smq_status_seconds": _smq_status_startup()}
    traces = HERE.parent.parent / "shared" / "traces" / "philly-pollux" / "philly.csv"
    if full_trace and traces.exists():
        from tjq.simulate import traces as importers

        jobs = importers.philly(traces)
        capacity = {importers.INSTANCE_TYPE: importers.capacity_for(jobs)}
        settings = SimSettings(capacity, stop_latency=STOP_LATENCY, start_latency=START_LATENCY)
        started = time.process_time()
        simulate(jobs, settings)
        seconds = time.process_time() - started
        result["philly_full"] = {
            "jobs": len(jobs),
            "capacity": capacity,
            "cpu_seconds": round(seconds, 2),
            "jobs_per_second": round(len(jobs) / seconds),
        }
    return result


def _smq_status_startup(runs: int = 5) -> dict:
    from tjq.local.server import LocalApi

    with LocalApi(capacity={"ml.p5.48xlarge": 2}) as local:
        env = {**os.environ, **local.environment()}
        smq = [sys.executable, "-m", "tjq.cli", "status"]
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run(smq, env=env, check=True, capture_output=True)
            times.append(time.perf_counter() - started)
        baseline = []
        for _ in range(runs):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            baseline.append(time.perf_counter() - started)
        sdk = []
        for _ in range(2):
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", "import sagemaker"], env=env, check=True, capture_output=True
            )
            sdk.append(time.perf_counter() - started)
    return {
        "smq_status_median": round(statistics.median(times), 3),
        "python_startup_median": round(statistics.median(baseline), 3),
        "import_sagemaker_median": round(statistics.median(sdk), 3),
    }


def speed_table(result: dict) -> str:
    s = result["smq_status_seconds"]
    rows = [
        ("smq status (start-up + one API call)", f"{s['smq_status_median']:.2f} s"),
        ("python -c pass (the floor)", f"{s['python_startup_median']:.2f} s"),
        ("import sagemaker (what smq status avoids)", f"{s['import_sagemaker_median']:.2f} s"),
    ]
    if "philly_full" in result:
        p = result["philly_full"]
        rows.append(
            (
                f"fast engine, full Philly ({p['jobs']:,} jobs)",
                f"{p['cpu_seconds']:.1f} s CPU, {p['jobs_per_second']:,} jobs/s",
            )
        )
    return tabulate(rows, tablefmt="github", headers=("measure", "result"))
