"""What a deep queue costs: the replay behind expected start times (CPU), and the items a
submission, GET /jobs/{name} and GET /jobs's first page read, at 10 to 10,000 queued jobs.
Part of `make bench` (bench/run.py).

The replay plays only the first jobs of each instance type (the horizon), and GET /jobs
answers a page, so all should stay flat once the queue is deeper than that."""

from __future__ import annotations

import json
import random
import time

from tabulate import tabulate

from job_queue.models import Job, JobState
from job_queue.scheduler import ActiveJob, Policy, WaitingJob, queue_order
from job_queue.scheduler.forecast import HORIZON, RunHistory, expected_starts
from job_queue.scheduler.snapshot import Snapshot

P5 = "ml.p5.48xlarge"


def outlook(depths: list[int]) -> dict:
    return {depth: {**_replay(depth), **_job_detail(depth)} for depth in depths}


def _queue(depth: int) -> list[WaitingJob]:
    rng = random.Random(depth)
    jobs = [
        WaitingJob(
            f"queued-{i}",
            rng.choice((0, 0, 1, 2)),
            10 + i,
            {P5: rng.choice((1, 1, 1, 2))},
            max_runtime=rng.choice((1800, 3600, 4 * 3600, 12 * 3600)),
        )
        for i in range(depth)
    ]
    return sorted(jobs, key=queue_order)


def _replay(depth: int, runs: int = 3) -> dict:
    active = [
        ActiveJob("running-1", 3, 1, {P5: 1}, JobState.RUNNING, 0.0, 3600),
        ActiveJob("running-2", 3, 2, {P5: 1}, JobState.RUNNING, 600.0, 7200),
    ]
    history = RunHistory({(P5, p): (20, 20 * 2400.0) for p in range(3)})
    waiting = _queue(depth)
    times = []
    for _ in range(runs):
        started = time.process_time()
        expected = expected_starts(Snapshot(1000.0, {P5: 2}, active), waiting, history, Policy())
        times.append(time.process_time() - started)
    return {"replay_cpu_ms": round(min(times) * 1000, 1), "jobs_with_an_estimate": len(expected)}


def _job_detail(depth: int) -> dict:
    """What the real handler reads at this depth: for a submission at the back of the queue,
    for GET /jobs/{name} of the first job in line, and for GET /jobs's first page (and how
    big that answer is)."""
    from tjq.local.cloud import LocalCloud, training_request
    from tjq.local.dynamodb_usage import DynamoDBUsage

    with LocalCloud(capacity={P5: 2}) as cloud:
        for name in ("running-1", "running-2"):
            cloud.api("POST", "/add-job", training_request(name, 9))
        request = training_request("queued", 1)
        cloud.deps.store.bulk_load(
            [
                Job(
                    name=f"queued-{i}",
                    priority=1,
                    seq=10 + i,
                    demand={P5: 1},
                    state=JobState.PENDING,
                    submitted_at=cloud.clock(),
                    request={**request, "TrainingJobName": f"queued-{i}"},
                )
                for i in range(depth)
            ]
        )

        def items_read(call) -> tuple[int, int]:
            usage = cloud.dynamodb_usage
            before = DynamoDBUsage(dict(usage.calls), usage.items_read, usage.items_written)
            status, body = call()
            assert status in (200, 201), body
            return cloud.dynamodb_usage.since(before).items_read, len(json.dumps(body))

        submitted, _ = items_read(
            lambda: cloud.api("POST", "/add-job", training_request("submitted-last", 1))
        )
        detail, _ = items_read(lambda: cloud.api("GET", "/jobs/queued-0"))
        listed, size = items_read(lambda: cloud.api("GET", "/jobs"))
    return {
        "submit_items_read": submitted,
        "job_detail_items_read": detail,
        "list_items_read": listed,
        "list_kib": round(size / 1024, 1),
    }


def outlook_table(result: dict) -> str:
    rows = [
        (
            depth,
            r["replay_cpu_ms"],
            r["jobs_with_an_estimate"],
            r["submit_items_read"],
            r["job_detail_items_read"],
            r["list_items_read"],
            r["list_kib"],
        )
        for depth, r in result.items()
    ]
    headers = (
        "Queued jobs",
        "Replay (CPU ms)",
        "Jobs with an estimate",
        "Submit: items read",
        "GET /jobs/{name}: items",
        "GET /jobs page: items",
        "GET /jobs page: KiB",
    )
    note = (
        f"\n\nThe replay plays the first {HORIZON} waiting jobs of each instance type and share "
        "(twice: at the latest, likely); jobs further back get no estimate. A submission's "
        "place in line comes from the same read. GET /jobs answers 100 waiting jobs a page "
        "(and reads the replay's jobs apart when the queue is longer than one); how many wait "
        "beyond the page is the sweep's count, so no page counts the queue."
    )
    return tabulate(rows, headers=headers, disable_numparse=True) + note
