"""Workload CSVs: one job a row.

Required columns: ``name,submit_s,duration_s,priority,instance_type,instance_count``.
Optional: ``share,max_runtime_s,checkpoint_s``.

* ``duration_s`` — running time the job needs to finish;
* ``max_runtime_s`` — its StoppingCondition.MaxRuntimeInSeconds: an attempt that runs this
  long fails;
* ``checkpoint_s`` — checkpoint interval; empty or 0: a preempted job restarts from zero,
  otherwise it resumes from its last checkpoint;
* ``share`` — the job's quota share, when the replay has shares (ignored otherwise).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from job_queue.scheduler import Share

REQUIRED = ("name", "submit_s", "duration_s", "priority", "instance_type", "instance_count")
OPTIONAL = ("share", "max_runtime_s", "checkpoint_s")


class WorkloadError(ValueError):
    """A workload that cannot be replayed; the message names the line and the column."""


@dataclass(frozen=True)
class WorkloadJob:
    name: str
    submit_s: float
    duration_s: float
    priority: int
    instance_type: str
    instance_count: int
    share: str | None = None
    max_runtime_s: float | None = None
    checkpoint_s: float | None = None

    @property
    def demand(self) -> dict[str, int]:
        return {self.instance_type: self.instance_count}


def read_workload(
    path: str | Path, capacity: Mapping[str, int], shares: Sequence[Share] = ()
) -> list[WorkloadJob]:
    """The jobs of a workload file, checked against ``capacity`` (and ``shares``)."""
    try:
        with open(path, newline="") as file:
            return parse_workload(file, capacity, shares)
    except OSError as exc:
        raise WorkloadError(f"cannot read {path}: {exc.strerror}") from None


def parse_workload(
    lines: Iterable[str], capacity: Mapping[str, int], shares: Sequence[Share] = ()
) -> list[WorkloadJob]:
    """Parse CSV text; raises WorkloadError naming the first bad line and column."""
    reader = csv.DictReader(lines)
    if reader.fieldnames is None:
        raise WorkloadError("the workload is empty: a header line is required")
    header = [name.strip() for name in reader.fieldnames]
    missing = [column for column in REQUIRED if column not in header]
    if missing:
        raise WorkloadError(f"line 1 (header): missing column(s) {', '.join(missing)}")
    unknown = [column for column in header if column not in REQUIRED + OPTIONAL]
    if unknown:
        raise WorkloadError(f"line 1 (header): unknown column(s) {', '.join(unknown)}")
    reader.fieldnames = header
    jobs: list[WorkloadJob] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(reader, start=2):
        job = _job(row, line, capacity)
        if shares:
            _check_share(job, line, shares)
        if job.name in seen:
            raise WorkloadError(
                f"line {line}, column name: {job.name!r} is already used on line {seen[job.name]}"
            )
        seen[job.name] = line
        jobs.append(job)
    if not jobs:
        raise WorkloadError("the workload has a header but no jobs")
    return jobs


def write_workload(path: str | Path, jobs: Iterable[WorkloadJob]) -> None:
    """Write jobs as a workload CSV (optional columns only when used)."""
    jobs = list(jobs)
    optional = [c for c in OPTIONAL if any(getattr(j, c) is not None for j in jobs)]
    with open(path, "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow([*REQUIRED, *optional])
        for job in jobs:
            values = [getattr(job, column) for column in (*REQUIRED, *optional)]
            writer.writerow(["" if v is None else _plain(v) for v in values])


def _job(row: dict, line: int, capacity: Mapping[str, int]) -> WorkloadJob:
    def text(column: str) -> str:
        return (row.get(column) or "").strip()

    def fail(column: str, problem: str) -> WorkloadError:
        return WorkloadError(f"line {line}, column {column}: {problem}")

    def number(column: str, optional: bool = False) -> float | None:
        value = text(column)
        if not value and optional:
            return None
        try:
            result = float(value)
        except ValueError:
            raise fail(column, f"{value!r} is not a number") from None
        if not math.isfinite(result):
            raise fail(column, f"{value!r} is not a finite number")
        if result < 0:
            raise fail(column, f"{value} is negative")
        return result

    def whole(column: str) -> int:
        value = text(column)
        try:
            return int(value)
        except ValueError:
            raise fail(column, f"{value!r} is not a whole number") from None

    name = text("name")
    if not name:
        raise fail("name", "a job needs a name")
    instance_type = text("instance_type")
    count = whole("instance_count")
    if count < 1:
        raise fail("instance_count", f"{count} is not a positive number of instances")
    if instance_type not in capacity:
        configured = ", ".join(sorted(capacity)) or "none"
        raise fail("instance_type", f"{instance_type!r} has no capacity (configured: {configured})")
    if count > capacity[instance_type]:
        raise fail(
            "instance_count",
            f"{count} x {instance_type} is more than the capacity of {capacity[instance_type]}",
        )
    duration = number("duration_s")
    max_runtime = number("max_runtime_s", optional=True)
    checkpoint = number("checkpoint_s", optional=True)
    return WorkloadJob(
        name=name,
        submit_s=number("submit_s"),
        duration_s=duration,
        priority=whole("priority"),
        instance_type=instance_type,
        instance_count=count,
        share=text("share") or None,
        max_runtime_s=max_runtime or None,
        checkpoint_s=checkpoint or None,
    )


def _check_share(job: WorkloadJob, line: int, shares: Sequence[Share]) -> None:
    names = ", ".join(share.name for share in shares)
    share = next((s for s in shares if s.name == job.share), None)
    if job.share is None:
        raise WorkloadError(f"line {line}, column share: the replay has shares ({names})")
    if share is None:
        raise WorkloadError(f"line {line}, column share: {job.share!r} is not one of {names}")
    most = share.most(job.instance_type)
    if job.instance_count > most:
        raise WorkloadError(
            f"line {line}, column instance_count: {job.instance_count} x {job.instance_type} "
            f"is more than share {share.name} may ever hold ({most:g})"
        )


def _plain(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
