"""The queue's training plans outside a pass: how CAPACITY names them, how a
DescribeTrainingPlan answer becomes a :class:`~job_queue.scheduler.reservations.TrainingPlan`,
(what a waiting job is told about them is in :mod:`job_queue.views`).

A capacity entry names plans as ``{"training_plan": ARN}``, alone or in a list beside a plain
count: ``{"ml.p5.48xlarge": [1, {"training_plan": "arn:aws:sagemaker:...:training-plan/p"}]}``.
The queue reads each plan at cold start and in every sweep (never per event) and keeps what it
read on the holders item; a read that fails keeps the last one and says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from aws_lambda_powertools import Logger

from job_queue.errors import SageMakerError
from job_queue.scheduler.reservations import ENDED, NOT_READ, Reservation, TrainingPlan

PLAN_ARN = re.compile(
    r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:training-plan/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,63}"
)

logger = Logger(child=True)


def plan_entries(itype: str, value: object) -> tuple[int | None, list[TrainingPlan]]:
    """A capacity entry that names training plans: its plain count (None: none) and its
    plans. ValueError naming the type and what is wrong."""
    items = value if isinstance(value, list) else [value]
    counts = [n for n in items if isinstance(n, int) and not isinstance(n, bool)]
    plans = [_plan_entry(itype, item) for item in items if item not in counts]
    if not items or len(counts) > 1 or any(n < 0 for n in counts):
        raise ValueError(
            f"{itype} must list training plans and at most one whole number >= 0, got {value!r}"
        )
    return (counts[0] if counts else None), plans


def _plan_entry(itype: str, item: object) -> TrainingPlan:
    if not isinstance(item, dict) or set(item) != {"training_plan"}:
        raise ValueError(
            f'{itype}: expected {{"training_plan": "arn:aws:sagemaker:REGION:ACCOUNT:'
            f'training-plan/NAME"}}, got {item!r}'
        )
    arn = item["training_plan"]
    if not isinstance(arn, str) or not PLAN_ARN.fullmatch(arn):
        raise ValueError(f"{itype}: {arn!r} is not a SageMaker training-plan ARN")
    return TrainingPlan(arn, itype, error=NOT_READ)


def request_on(request: Mapping, plan_arn: str | None) -> Mapping:
    """The CreateTrainingJob request of an attempt on the training plan ``plan_arn`` (None:
    on-demand, unchanged): with its ARN, and without a warm pool, since the reservation
    holds the instances between jobs (and an idle pool would keep them from the queue)."""
    if plan_arn is None:
        return request
    resource = {k: v for k, v in (request.get("ResourceConfig") or {}).items()}
    resource.pop("KeepAlivePeriodInSeconds", None)
    return {**request, "ResourceConfig": {**resource, "TrainingPlanArn": plan_arn}}


def from_description(entry: TrainingPlan, described: Mapping, now: float) -> TrainingPlan:
    """What DescribeTrainingPlan says of ``entry``: its status and its reservations of the
    entry's type. Reservations of another type make the plan unusable (``error``)."""
    summaries = described.get("ReservedCapacitySummaries") or []
    other = sorted({s["InstanceType"] for s in summaries} - {entry.instance_type})
    reservations = tuple(
        Reservation(int(s["TotalInstanceCount"]), _seconds(s["StartTime"]), _seconds(s["EndTime"]))
        for s in summaries
        if s["InstanceType"] == entry.instance_type and s.get("Status") not in ENDED
    )
    error = None
    if other and not reservations:
        error = f"it reserves {', '.join(other)}, not {entry.instance_type} (its CAPACITY entry)"
    return replace(
        entry,
        status=str(described.get("Status", "Unknown")),
        reservations=() if error else tuple(sorted(reservations, key=lambda r: r.start)),
        error=error,
        read_at=now,
    )


def refresh(
    entries: Iterable[TrainingPlan],
    known: Sequence[TrainingPlan],
    describe: Callable[[str], Mapping],
    now: float,
) -> tuple[TrainingPlan, ...]:
    """Every configured plan read again (``describe`` takes a plan name, and raises
    SageMakerError); one that cannot be read keeps what was last read of it, with the error,
    and is logged."""
    found = []
    for entry in entries:
        try:
            found.append(from_description(entry, describe(entry.name), now))
        except SageMakerError as exc:
            last = current([entry], known)[0]
            found.append(replace(last, error=f"could not be read: {exc}"))
        if error := found[-1].error:
            logger.warning(f"training plan {entry.name}: {error}", extra={"plan": entry.arn})
    return tuple(found)


def current(entries: Iterable[TrainingPlan], known: Sequence[TrainingPlan]) -> list[TrainingPlan]:
    """The configured plans as last read (an entry never read: as configured)."""
    by_arn = {(p.arn, p.instance_type): p for p in known}
    return [by_arn.get((e.arn, e.instance_type), e) for e in entries]


def _seconds(value: datetime | float | int | str) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value)
