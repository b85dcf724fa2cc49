"""Training jobs on the queue's capped instance types that the queue did not start: what a
state-change event or a description means for them. Pure.

A job started straight in SageMaker (a script, the console, an SDK without the queue's
session) on a capped type takes instances the queue counts as its own. The queue hears of
it from SageMaker's state-change events for those types (the template's second rule):

* InProgress — it holds its instances of the capped types (from its ``ResourceConfig``)
  until it ends; the queue never preempts it;
* Completed, Failed or Stopped — its instances are free again;
* the sweep describes every outside job it holds: one that ended, or that SageMaker no
  longer knows, is forgotten (its end event was missed).

Jobs the queue started carry its tag and are not outside jobs. Jobs of types the queue does
not cap are ignored.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from job_queue import tags
from job_queue.errors import InvalidRequest
from job_queue.request import instance_demand
from job_queue.sagemaker import SageMakerStatus, TrainingJobStatus
from job_queue.scheduler.snapshot import OutsideJob


@dataclass(frozen=True)
class Hold:
    """The outside job holds its instances."""

    job: OutsideJob


@dataclass(frozen=True)
class Forget:
    """The outside job ``name`` ended: its instances are free."""

    name: str
    why: str


def is_outside(event_tags: Mapping[str, str]) -> bool:
    """Whether a SageMaker job with these tags was started by no queue at all."""
    return tags.QUEUE not in event_tags


def on_event(detail: Mapping, capped: Collection[str], now: float) -> Hold | Forget | None:
    """A state-change event of a job no queue started (None: nothing to do)."""
    name = detail.get("TrainingJobName")
    try:
        demand = instance_demand(detail.get("ResourceConfig"))
    except InvalidRequest:
        return None  # not a shape the queue knows: nothing it can count
    demand = {itype: count for itype, count in demand.items() if itype in capped and count}
    if not name or not demand:
        return None
    status = SageMakerStatus.parse(detail.get("TrainingJobStatus"))
    if status is SageMakerStatus.IN_PROGRESS:
        return Hold(OutsideJob(name, demand, now))
    if status is not None and status.ended:
        return Forget(name, f"it is {status.value}")
    return None


def on_description(job: OutsideJob, found: TrainingJobStatus | None) -> Forget | None:
    """The sweep described outside job ``job`` (None: SageMaker has no such job)."""
    if found is None:
        return Forget(job.name, "SageMaker has no such job")
    if found.status is not None and found.status.ended:
        return Forget(job.name, f"it is {found.status.value}")
    return None
