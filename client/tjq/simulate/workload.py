"""Workload CSVs: one job a row.

Required columns: ``name,submit_s,duration_s,priority,instance_type,instance_count``.
Optional: ``share,max_runtime_s,checkpoint_s,keep_alive_s,warm_key,submitter``, for the
queue's limits ``failure_reason,max_preemptions,max_total_runtime_s``, and ``after``.

* ``duration_s`` — running time the job needs to finish;
* ``max_runtime_s`` — its StoppingCondition.MaxRuntimeInSeconds: an attempt that runs this
  long fails;
* ``checkpoint_s`` — checkpoint interval; empty or 0: a preempted job restarts from zero,
  otherwise it resumes from its last checkpoint; ``stop``: it saves when stopped (SIGTERM),
  so a preempted attempt keeps all its progress. The job declares it (its ``checkpoint``
  tag), so the queue's victim rule sees it;
* ``share`` — the job's quota share, when the replay has shares (ignored otherwise);
* ``keep_alive_s`` — its warm-pool keep-alive (empty: the replay's default; 0: none);
* ``warm_key`` — its warm-pool configuration: jobs with the same key (and instance type and
  count) start on each other's pools; empty: a configuration of its own, which only its own
  resumed attempts match;
* ``submitter`` — who submitted it (an IAM ARN, or a ``fair-share-id`` such as a project
  name): with fair share, whom its use is charged to; empty: nobody (it is never charged, so
  it always stands as idle);
* ``failure_reason`` — the job's first attempt fails with this SageMaker ``FailureReason``
  when it would have finished (as a trace records a job that failed); the replay's
  ``RetryOnFailure`` rules decide, as the queue's do, whether it is requeued in its place
  (to run again from its last interval checkpoint, and finish) or ends failed;
* ``max_preemptions`` / ``max_total_runtime_s`` — its ``max-preemptions`` and
  ``max-total-runtime`` tags;
* ``after`` — the jobs it waits for, as its ``depends-on`` tag says it with semicolons
  (``afterok:train;prep``): each must be a job of the workload submitted no later than it.

Each row is admitted by the queue's own rules (:func:`job_queue.request.validate_submission`
and :func:`job_queue.admission.admit`) on the CreateTrainingJob request it stands for, so a
workload the simulator accepts is one the live queue would accept; their messages come with
the row's line and column.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from job_queue import tags
from job_queue.admission import admit
from job_queue.errors import InvalidRequest
from job_queue.layout import Layout
from job_queue.models import Checkpointing
from job_queue.request import validate_submission
from job_queue.scheduler import Share, total_capacity
from job_queue.scheduler.dependencies import Dependency
from job_queue.scheduler.reservations import TrainingPlan

REQUIRED = ("name", "submit_s", "duration_s", "priority", "instance_type", "instance_count")
OPTIONAL = (
    "share",
    "max_runtime_s",
    "checkpoint_s",
    "keep_alive_s",
    "warm_key",
    "submitter",
    "failure_reason",
    "max_preemptions",
    "max_total_runtime_s",
    "after",
)
REPLAY_ROLE = "arn:aws:iam::123456789012:role/replay"  # the replay's jobs run under one role
# The column of each request field the queue's rules may refuse.
_COLUMNS = {
    "TrainingJobName": "name",
    "ResourceConfig.InstanceType": "instance_type",
    "ResourceConfig.InstanceCount": "instance_count",
    "StoppingCondition.MaxRuntimeInSeconds": "max_runtime_s",
    "ResourceConfig.KeepAlivePeriodInSeconds": "keep_alive_s",
    f"Tags.{tags.PRIORITY}": "priority",
    f"Tags.{tags.SHARE}": "share",
    f"Tags.{tags.MAX_PREEMPTIONS}": "max_preemptions",
    f"Tags.{tags.MAX_TOTAL_RUNTIME}": "max_total_runtime_s",
    f"Tags.{tags.DEPENDS_ON}": "after",
}


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
    keep_alive_s: float | None = None
    warm_key: str | None = None
    saves_on_stop: bool = False  # checkpoint_s "stop"
    submitter: str | None = None
    failure_reason: str | None = None  # its first attempt fails so, when it would finish
    max_preemptions: str | None = None  # its max-preemptions tag, as written
    max_total_runtime_s: str | None = None  # its max-total-runtime tag, as written
    after: str | None = None  # its depends-on tag, as written

    @property
    def dependency(self) -> Dependency | None:
        """The jobs it waits for, and how (the row was admitted: a valid tag)."""
        return None if self.after is None else Dependency.parse(self.after)

    @property
    def preemption_cap(self) -> int | None:
        """Its ``max-preemptions`` tag as a number (the row was admitted: it is one)."""
        return tags.max_preemptions(self.limit_tags())

    @property
    def total_runtime_cap(self) -> int | None:
        """Its ``max-total-runtime`` tag, seconds."""
        return tags.max_total_runtime(self.limit_tags())

    def limit_tags(self) -> list[dict]:
        """Its max-preemptions, max-total-runtime and depends-on tags, as its request carries
        them."""
        given = {
            tags.MAX_PREEMPTIONS: self.max_preemptions,
            tags.MAX_TOTAL_RUNTIME: self.max_total_runtime_s,
            tags.DEPENDS_ON: self.after,
        }
        return [{"Key": key, "Value": value} for key, value in given.items() if value]

    def crash_kept(self, total: float) -> float:
        """Of ``total`` seconds of progress, what a failure keeps: up to its last interval
        checkpoint (a crash sends no SIGTERM to save on)."""
        if self.checkpoint_s and not self.saves_on_stop:
            return self.kept_work(total)
        return 0.0

    @property
    def checkpoint(self) -> Checkpointing | None:
        """How it checkpoints, as its ``checkpoint`` tag would declare it."""
        if self.saves_on_stop:
            return Checkpointing()
        return Checkpointing(max(1, round(self.checkpoint_s))) if self.checkpoint_s else None

    def kept_work(self, total: float) -> float:
        """Of ``total`` seconds of progress, what a stop keeps: all of it when it saves on
        stop, up to its last checkpoint when it saves at an interval, nothing otherwise."""
        if self.saves_on_stop:
            return total
        if self.checkpoint_s:
            return math.floor(total / self.checkpoint_s) * self.checkpoint_s
        return 0.0

    def last_saved_at(self, kept: float, working_since: float, now: float) -> float | None:
        """When an attempt that resumed with ``kept`` seconds of progress and has worked
        since ``working_since`` last saved at its interval (None: not yet, or not at an
        interval): what the newest object under its checkpoint location would say."""
        if not self.checkpoint_s or self.saves_on_stop:
            return None
        saved = self.kept_work(kept + max(0.0, now - working_since))
        return working_since + (saved - kept) if saved > kept else None

    @property
    def demand(self) -> dict[str, int]:
        return {self.instance_type: self.instance_count}

    @property
    def configuration(self) -> str:
        """Its warm-pool configuration: its key, or one of its own."""
        return self.warm_key if self.warm_key is not None else f"{self.name}#own"


def read_workload(
    path: str | Path,
    capacity: Mapping[str, int],
    shares: Sequence[Share] = (),
    uncapped: frozenset[str] = frozenset(),
    plans: Sequence[TrainingPlan] = (),
) -> list[WorkloadJob]:
    """The jobs of a workload file, checked against ``capacity`` (and ``shares``;
    ``uncapped`` types count against nothing; ``plans`` add reserved capacity)."""
    try:
        with open(path, newline="") as file:
            return parse_workload(file, capacity, shares, uncapped, plans)
    except OSError as exc:
        raise WorkloadError(f"cannot read {path}: {exc.strerror}") from None


def parse_workload(
    lines: Iterable[str],
    capacity: Mapping[str, int],
    shares: Sequence[Share] = (),
    uncapped: frozenset[str] = frozenset(),
    plans: Sequence[TrainingPlan] = (),
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
    layout = (
        Layout(total_capacity(shares), tuple(shares), uncapped=uncapped)
        if shares
        else Layout(capacity, uncapped=uncapped, plans=tuple(plans))
    )
    for line, row in enumerate(reader, start=2):
        job = _job(row, line)
        _admit(job, line, layout)
        if job.name in seen:
            raise WorkloadError(
                f"line {line}, column name: {job.name!r} is already used on line {seen[job.name]}"
            )
        seen[job.name] = line
        _parents_before(job, line, {j.name: j for j in jobs})
        jobs.append(job)
    if not jobs:
        raise WorkloadError("the workload has a header but no jobs")
    return jobs


def _parents_before(job: WorkloadJob, line: int, earlier: Mapping[str, WorkloadJob]) -> None:
    """A job's parents are jobs of the workload above it, submitted no later (as the queue
    takes a dependency only on a job it has)."""
    for parent in job.dependency.parents if job.dependency else ():
        found = earlier.get(parent)
        if found is None or found.submit_s > job.submit_s:
            raise WorkloadError(
                f"line {line}, column after: {parent!r} is not a job above it submitted no "
                "later than it"
            )


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


def _job(row: dict, line: int) -> WorkloadJob:
    """The row's values, each of the type its column needs."""

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
    duration = number("duration_s")
    max_runtime = number("max_runtime_s", optional=True)
    on_stop = text("checkpoint_s").lower() == "stop"
    checkpoint = None if on_stop else number("checkpoint_s", optional=True)
    keep_alive = number("keep_alive_s", optional=True)
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
        keep_alive_s=keep_alive,
        warm_key=text("warm_key") or None,
        saves_on_stop=on_stop,
        submitter=text("submitter") or None,
        failure_reason=text("failure_reason") or None,
        max_preemptions=text("max_preemptions") or None,
        max_total_runtime_s=text("max_total_runtime_s") or None,
        after=text("after") or None,
    )


def _admit(job: WorkloadJob, line: int, layout: Layout) -> None:
    """The queue's own admission of the request the row stands for."""
    try:
        # A workload's shares are ignored by a replay without shares (one file, both ways).
        request = request_for(job if layout.shares else replace(job, share=None))
        submission = validate_submission(request, frozenset({REPLAY_ROLE}))
        admit(submission, layout, where="the replay")
    except InvalidRequest as exc:
        column = _COLUMNS.get(exc.field or "")
        if column is None:
            raise WorkloadError(f"line {line}: {exc}") from None
        raise WorkloadError(f"line {line}, column {column}: {exc.problem}") from None


def request_for(job: WorkloadJob) -> dict:
    """The CreateTrainingJob request a workload row stands for (what the queue checks)."""
    request_tags = [{"Key": tags.PRIORITY, "Value": str(job.priority)}]
    if job.share is not None:
        request_tags.append({"Key": tags.SHARE, "Value": job.share})
    if job.checkpoint is not None:
        request_tags.append({"Key": tags.CHECKPOINT, "Value": str(job.checkpoint)})
    request_tags += job.limit_tags()
    stopping = {}
    if job.max_runtime_s is not None:
        stopping["MaxRuntimeInSeconds"] = _whole(job.max_runtime_s)
    resource = {"InstanceType": job.instance_type, "InstanceCount": job.instance_count}
    if job.keep_alive_s is not None:
        resource["KeepAlivePeriodInSeconds"] = _whole(job.keep_alive_s)
    return {
        "TrainingJobName": job.name,
        "RoleArn": REPLAY_ROLE,
        "AlgorithmSpecification": {},
        "OutputDataConfig": {},
        "ResourceConfig": resource,
        "StoppingCondition": stopping,
        "Tags": request_tags,
    }


def _whole(seconds: float) -> int | float:
    """Whole seconds as an int (what a request holds); anything else as is, for the queue's
    rules to refuse."""
    return int(seconds) if seconds.is_integer() else seconds


def _plain(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
