"""`make demo`: the blog's scenario through the real handler, on emulated AWS.

Two ml.p5.48xlarge instances. job1 (priority 1), job2 (2) and job3 (1) are submitted; then
job4 (3) arrives and preempts job1. Time is simulated: jobs run 10 minutes, a stop takes 1.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tabulate import tabulate

INSTANCE = "ml.p5.48xlarge"


def queue_table(jobs: list[dict]) -> str:
    """The queue as the blog shows it, plus where each job stands."""
    if not jobs:
        return "(the queue is empty)"
    rows = [
        (
            j["name"],
            j["state"],
            j["priority"],
            j["position"] or "",
            f"{j['instance_count']} x {j['instance_type']}",
            j.get("sagemaker_job_name") or "",
        )
        for j in jobs
    ]
    headers = ("Job Name", "State", "Priority", "Position", "Instances", "SageMaker job")
    return tabulate(rows, headers=headers)


def run(out: Callable[[str], None] = print) -> list[list[tuple[str, str, int]]]:
    """Play the scenario, printing the queue after each step; returns each step's table."""
    from tjq.local.cloud import LocalCloud, training_request

    tables = []
    with LocalCloud(capacity={INSTANCE: 2}, run_seconds=600, stop_seconds=60) as cloud:
        start = cloud.clock()

        def step(title: str) -> None:
            minutes, seconds = divmod(int(cloud.clock() - start), 60)
            out(f"\n[{minutes:02d}:{seconds:02d}] {title}")
            jobs = cloud.jobs()
            out(queue_table(jobs))
            tables.append([(j["name"], j["state"], j["priority"]) for j in jobs])

        def submit(name: str, priority: int) -> None:
            status, body = cloud.api("POST", "/add-job", training_request(name, priority))
            if status >= 300:
                raise SystemExit(f"submitting {name} failed: {body}")

        out(f"Capacity: 2 x {INSTANCE}. Jobs run 10 minutes; a stop takes 1 (simulated time).")
        for name, priority in (("job1", 1), ("job2", 2), ("job3", 1)):
            submit(name, priority)
        step("job1 (priority 1), job2 (2) and job3 (1) submitted: two start, job3 waits")
        cloud.advance(300)
        submit("job4", 3)
        step("job4 (priority 3) submitted: job1, the lowest-priority running job, is stopped")
        cloud.advance(60)
        step("job1 stopped and back in the queue, in its place; job4 runs")
        cloud.advance(240)
        step("job2 completed: job1 resumes ahead of job3 (same priority, queued first)")
        cloud.advance(360)
        step("job4 completed: job3 starts")
        cloud.advance(600)
        step("job1 and job3 completed")
    return tables


def main() -> None:
    # Quiet the Lambda's structured logs and metrics: the tables tell the story here.
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    run()


if __name__ == "__main__":
    main()
