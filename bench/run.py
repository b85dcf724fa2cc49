"""`make bench`: schedule quality, cost per scheduling pass, and speed.

    python bench/run.py            # everything (a few minutes on 2 cores)
    python bench/run.py --quick    # smaller depths and no full-trace replay

Writes bench/results/{quality,cost,speed}.{md,json} and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")

from tabulate import tabulate
from tjq.simulate.baselines import blog_decision, fifo, unprioritised
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import percentile, report
from tjq.simulate.workload import read_workload

from job_queue.scheduler import Policy, Share, Strategy

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
STOP_LATENCY = 120.0  # a SageMaker stop takes minutes; two is optimistic
START_LATENCY = 180.0  # provisioning before a job makes progress
MIN_RUN = 1800.0  # the minimum run time the benchmark tries: half an hour


# -- schedule quality ----------------------------------------------------------------------


def quality() -> dict:
    index = json.loads((HERE / "workloads" / "workloads.json").read_text())
    results = {}
    for name, meta in index.items():
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
    layouts = {
        "one queue (no shares)": (),
        "RESERVE (no lending)": team_shares(Strategy.RESERVE),
        "LEND_AND_BORROW (unlimited)": team_shares(Strategy.LEND_AND_BORROW),
    }
    results = {}
    for label, shares in layouts.items():
        settings = SimSettings(
            meta["capacity"], stop_latency=STOP_LATENCY, start_latency=START_LATENCY, shares=shares
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


# -- cost per scheduling pass --------------------------------------------------------------


def cost(depths: list[int]) -> dict:
    import boto3

    results = {}
    for depth in depths:
        results[depth] = {
            "queue": _queue_pass(depth),
            "queue_with_shares": _queue_pass(depth, with_shares=True),
            "blog": _blog_scan_pattern(boto3, depth),
        }
    return results


# With shares: two teams of one instance each; the queued jobs all belong to the first.
COST_SHARES = (
    Share("team-a", {"ml.p5.48xlarge": 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
    Share("team-b", {"ml.p5.48xlarge": 1}, Strategy.LEND),
)


def _queue_pass(depth: int, with_shares: bool = False) -> dict:
    """What one scheduling pass costs the queue (the real handler against the emulation):
    two jobs run, ``depth`` wait; the shorter one completes and the next one starts."""
    from tjq.local.cloud import LocalCloud, training_request

    from job_queue.models import Job, JobState

    shares = COST_SHARES if with_shares else ()
    share = "team-a" if with_shares else None
    with LocalCloud(capacity={"ml.p5.48xlarge": 2}, shares=shares) as cloud:
        for name, seconds, team in (("running-1", 60, share), ("running-2", 600, "team-b")):
            request = training_request(
                name, 9, run_seconds=seconds, share=team if with_shares else None
            )
            cloud.api("POST", "/add-job", request)
        request = training_request("queued", 1)
        cloud.deps.store.bulk_load(
            [
                Job(
                    name=f"queued-{i}",
                    priority=i % 3,
                    seq=10 + i,
                    demand={"ml.p5.48xlarge": 1},
                    state=JobState.PENDING,
                    submitted_at=cloud.clock(),
                    request={**request, "TrainingJobName": f"queued-{i}"},
                    share=share,
                )
                for i in range(depth)
            ]
        )
        dynamo_before = _copy(cloud.dynamodb_usage)
        sagemaker_before = dict(cloud.sagemaker.calls)
        cloud.advance(60)  # running-1 completes: one event, one pass, one start
        used = cloud.dynamodb_usage.since(dynamo_before)
        sagemaker_calls = sum(cloud.sagemaker.calls.values()) - sum(sagemaker_before.values())
    return {
        "items_read": used.items_read,
        "items_written": used.items_written,
        "dynamodb_calls": sum(used.calls.values()),
        "sagemaker_calls": sagemaker_calls,
    }


def _copy(usage):
    from tjq.local.cloud import DynamoDBUsage

    return DynamoDBUsage(dict(usage.calls), usage.items_read, usage.items_written)


def _blog_scan_pattern(boto3, depth: int) -> dict:
    """The blog's manage_queue reads, against moto: a Scan for pending jobs, two
    ListTrainingJobs, a Scan for running jobs, then GetItem + UpdateItem to start one."""
    from moto import mock_aws

    with mock_aws():
        db = boto3.client("dynamodb")
        db.create_table(
            TableName="sagemaker-queue",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "jobName", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "jobName", "AttributeType": "S"}],
        )
        details = json.dumps({"AlgorithmSpecification": {"TrainingImage": "x" * 900}})
        items = [("running-1", "running"), ("running-2", "running")]
        items += [(f"queued-{i}", "pending") for i in range(depth)]
        for start in range(0, len(items), 25):
            db.batch_write_item(
                RequestItems={
                    "sagemaker-queue": [
                        {
                            "PutRequest": {
                                "Item": {
                                    "jobName": {"S": n},
                                    "jobState": {"S": s},
                                    "priority": {"N": "1"},
                                    "entryTime": {"S": "t"},
                                    "jobDetails": {"S": details},
                                }
                            }
                        }
                        for n, s in items[start : start + 25]
                    ]
                }
            )
        read = calls = 0
        for state_filter in ("jobState <> :s", "jobState = :s"):
            params = {
                "TableName": "sagemaker-queue",
                "FilterExpression": state_filter,
                "ExpressionAttributeValues": {":s": {"S": "running"}},
            }
            while True:
                page = db.scan(**params)
                calls += 1
                read += page["ScannedCount"]
                if "LastEvaluatedKey" not in page:
                    break
                params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        db.get_item(TableName="sagemaker-queue", Key={"jobName": {"S": "queued-0"}})
        db.update_item(
            TableName="sagemaker-queue",
            Key={"jobName": {"S": "queued-0"}},
            UpdateExpression="SET jobState = :r",
            ExpressionAttributeValues={":r": {"S": "running"}},
        )
    return {
        "items_read": read + 1,
        "items_written": 1,
        "dynamodb_calls": calls + 2,
        "sagemaker_calls": 3,
    }  # two ListTrainingJobs and one CreateTrainingJob


def cost_table(results: dict) -> str:
    rows = []
    for depth, r in results.items():
        q, b = r["queue"], r["blog"]
        rows.append(
            (
                f"{int(depth):,}",
                q["items_read"],
                r["queue_with_shares"]["items_read"],
                b["items_read"],
                f"{b['items_read'] / q['items_read']:.0f}x",
                q["items_written"],
                b["items_written"],
                q["dynamodb_calls"],
                b["dynamodb_calls"],
                q["sagemaker_calls"],
                b["sagemaker_calls"],
            )
        )
    return tabulate(
        rows,
        tablefmt="github",
        headers=(
            "queued jobs",
            "items read",
            "with shares",
            "blog: items read",
            "fewer",
            "items written",
            "blog: written",
            "DynamoDB calls",
            "blog: calls",
            "SageMaker calls",
            "blog: calls",
        ),
    )


# -- speed ---------------------------------------------------------------------------------


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request log
    RESULTS.mkdir(exist_ok=True)
    sections = [
        ("quality", "Schedule quality", quality, quality_table),
        ("shares", "Quota shares", shares_comparison, shares_table),
        (
            "cost",
            "Cost per scheduling pass",
            lambda: cost([10, 100] if args.quick else [10, 100, 1000, 10000]),
            cost_table,
        ),
        ("speed", "Speed", lambda: speed(full_trace=not args.quick), speed_table),
    ]
    for key, title, measure, render in sections:
        started = time.perf_counter()
        result = measure()
        text = f"## {title}\n\n{render(result)}\n"
        (RESULTS / f"{key}.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / f"{key}.md").write_text(text)
        print(text)
        print(f"({title}: {time.perf_counter() - started:.0f} s)\n", file=sys.stderr)


if __name__ == "__main__":
    main()
