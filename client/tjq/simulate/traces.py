"""Turn the public GPU-cluster traces into workload CSVs, deterministically.

The mapping (the same for every trace):

* GPUs → instances of ``ml.p5.48xlarge`` (8 GPUs each): up to 8 GPUs on one instance, larger
  jobs on ``ceil(gpus / 8)``; jobs with no GPU are dropped;
* ``submit_s`` counts from the first submission kept; ``duration_s`` is the trace's;
* priority — Chronus: its best-effort flag (best effort → 0, strict SLO → 1); Philly and ITP
  have none, so a seeded draw gives 10% urgent (2), 30% normal (1), 60% low (0);
* names are ``<trace>-<row>`` (the row in the source file);
* ``max_runtime_s`` — the traces have no limits, so each job gets the limit a user would
  likely ask for: its duration rounded up to 1, 2, 4, 8 or 12 hours, or 1, 2, 3, 7, 14 or 28
  days (SageMaker's most); none beyond 28 days;
* ``submitter`` -- Chronus: its ``user`` (a virtual cluster), with ``users``; the others
  have none, so :func:`with_submitters` gives each burst of submissions one of ``count``
  users by a seeded Zipf draw;
* ``warm_key`` (with :func:`with_configurations`) — the traces do not say which jobs share a
  configuration (role, instance type, volume, VPC ...), so each job is given one of ``count``
  team configurations by a seeded Zipf draw (configuration k with weight 1/k): a few teams
  submit most of the jobs, as in a real cluster.

:func:`capacity_for` then picks the capacity that puts the offered load (instance-seconds of
work / instance-seconds available over the submission window) at or just above 100%.
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from tjq.simulate.workload import WorkloadJob

INSTANCE_TYPE = "ml.p5.48xlarge"
GPUS_PER_INSTANCE = 8
PRIORITY_DRAW = ((0.10, 2), (0.40, 1), (1.00, 0))  # cumulative: 10% urgent, 30% normal, rest low
_HOUR, _DAY = 3600, 86400
LIMITS = (
    1 * _HOUR,
    2 * _HOUR,
    4 * _HOUR,
    8 * _HOUR,
    12 * _HOUR,
    1 * _DAY,
    2 * _DAY,
    3 * _DAY,
    7 * _DAY,
    14 * _DAY,
    28 * _DAY,
)


def philly(
    path: str | Path,
    start: str | None = None,
    days: float | None = None,
    seed: int = 7,
    cluster: str | None = None,
) -> list[WorkloadJob]:
    """Microsoft Philly (Pollux's subset): ``timestamp,duration,num_gpus,...,cluster``; with
    ``cluster``, only that virtual cluster's jobs."""
    rows = []
    for row_number, row in enumerate(_rows(path), start=2):
        if cluster is not None and row["cluster"] != cluster:
            continue
        submitted = datetime.fromisoformat(row["timestamp"]).timestamp()
        rows.append((submitted, row_number, float(row["duration"]), int(row["num_gpus"])))
    return _window(rows, "philly", start and datetime.fromisoformat(start).timestamp(), days, seed)


def itp(path: str | Path, seed: int = 7) -> list[WorkloadJob]:
    """Microsoft ITP (ElasticFlow's raw traces): ``job_id,submission_time,duration,num_gpu``."""
    rows = [
        (float(row["submission_time"]), row_number, float(row["duration"]), int(row["num_gpu"]))
        for row_number, row in enumerate(_rows(path), start=2)
    ]
    return _window(rows, f"itp-{Path(path).stem}", None, None, seed)


def chronus(path: str | Path, hours: float | None = None, users: bool = False) -> list[WorkloadJob]:
    """Chronus's Philly mix: ``...,user,num_gpu,submit_time,...,duration,...,best_effort,...``
    (``users``: each job's ``user``, a virtual cluster, is its submitter)."""
    jobs = []
    rows = sorted(
        (
            (int(row["submit_time"]), row_number, row)
            for row_number, row in enumerate(_rows(path), start=2)
        ),
        key=lambda item: (item[0], item[1]),
    )
    first = rows[0][0]
    for submitted, row_number, row in rows:
        gpus = int(row["num_gpu"])
        if gpus <= 0 or (hours is not None and submitted - first >= hours * 3600):
            continue
        job = _job(
            "chronus",
            row_number,
            submitted - first,
            float(row["duration"]),
            gpus,
            0 if row["best_effort"] == "1" else 1,
        )
        jobs.append(replace(job, submitter=row["user"]) if users else job)
    return jobs


def with_configurations(
    jobs: Iterable[WorkloadJob], count: int = 8, seed: int = 7
) -> list[WorkloadJob]:
    """The jobs, each given one of ``count`` warm-pool configurations (``team-1`` ...) by a
    seeded Zipf draw."""
    draw = random.Random(f"configurations-{count}-{seed}")
    names = [f"team-{k}" for k in range(1, count + 1)]
    weights = [1 / k for k in range(1, count + 1)]
    return [replace(job, warm_key=draw.choices(names, weights)[0]) for job in jobs]


def with_submitters(
    jobs: Iterable[WorkloadJob], count: int = 30, seed: int = 7, burst_s: float = 60.0
) -> list[WorkloadJob]:
    """The jobs, each burst of submissions (each job within ``burst_s`` of the one before)
    given one of ``count`` submitters (``user-1`` ...) by a seeded Zipf draw (user k with
    weight 1/k): a few people submit most of the work, much of it in sweeps."""
    draw = random.Random(f"submitters-{count}-{seed}")
    names = [f"user-{k}" for k in range(1, count + 1)]
    weights = [1 / k for k in range(1, count + 1)]
    out, last, who = [], None, names[0]
    for job in sorted(jobs, key=lambda j: j.submit_s):
        if last is None or job.submit_s - last > burst_s:
            who = draw.choices(names, weights)[0]
        out.append(replace(job, submitter=who))
        last = job.submit_s
    return out


def single_instance(jobs: Iterable[WorkloadJob]) -> list[WorkloadJob]:
    """Only the jobs that fit on one instance (what the blog's algorithm can schedule)."""
    return [job for job in jobs if job.instance_count == 1]


def capacity_for(jobs: list[WorkloadJob], load: float = 1.0) -> int:
    """Instances such that work / (instances x submission window) is at least ``load``."""
    window = max(job.submit_s for job in jobs) - min(job.submit_s for job in jobs)
    work = sum(job.duration_s * job.instance_count for job in jobs)
    largest = max(job.instance_count for job in jobs)
    return max(largest, math.floor(work / (window * load)) if window else largest)


def offered_load(jobs: list[WorkloadJob], capacity: int) -> float:
    window = max(job.submit_s for job in jobs) - min(job.submit_s for job in jobs)
    return sum(job.duration_s * job.instance_count for job in jobs) / (capacity * window)


def _rows(path: str | Path):
    with open(path, newline="") as file:
        yield from csv.DictReader(file)


def _window(rows, source: str, start: float | None, days: float | None, seed: int):
    rows.sort(key=lambda item: (item[0], item[1]))
    if start is not None:
        rows = [r for r in rows if r[0] >= start]
    if days is not None and rows:
        rows = [r for r in rows if r[0] < rows[0][0] + days * 86400]
    draw = random.Random(f"{source}-{seed}")
    jobs = []
    first = rows[0][0]
    for submitted, row_number, duration, gpus in rows:
        roll = draw.random()  # drawn for every row, so a filter does not shift the others
        if gpus <= 0:
            continue
        priority = next(p for bound, p in PRIORITY_DRAW if roll < bound)
        jobs.append(_job(source, row_number, submitted - first, duration, gpus, priority))
    return jobs


def _job(source, row_number, submit_s, duration, gpus, priority) -> WorkloadJob:
    return WorkloadJob(
        name=f"{source}-{row_number}",
        submit_s=round(submit_s, 3),
        duration_s=duration,
        priority=priority,
        instance_type=INSTANCE_TYPE,
        instance_count=math.ceil(gpus / GPUS_PER_INSTANCE),
        max_runtime_s=next((limit for limit in LIMITS if limit >= duration), None),
    )
