"""Whether a job could ever run here: its instances exist, and its quota share may hold them.

Both the queue's ``POST /add-job`` and the simulator's workload reader ask this module, so a
workload the simulator accepts is one the live queue accepts. ``where`` names what a message
speaks of ("this queue", "the replay").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from job_queue import tags
from job_queue.errors import InvalidRequest
from job_queue.layout import Layout
from job_queue.models import Demand
from job_queue.request import Submission


@dataclass(frozen=True)
class Admitted:
    """An admitted job: its quota share (None without shares), the instances that count
    against the capacity, and those of uncapped types it also runs on (never counted)."""

    share: str | None
    demand: Demand
    helpers: Demand


def admit(submission: Submission, layout: Layout, where: str = "this queue") -> Admitted:
    """The job's share and counted instances, once its capped demand fits the capacity and
    its share; InvalidRequest naming the field otherwise."""
    demand = {t: n for t, n in submission.demand.items() if t not in layout.uncapped}
    helpers = {t: n for t, n in submission.demand.items() if t in layout.uncapped}
    counted = replace(submission, demand=demand)
    check_fit(counted, layout, where)
    if not demand:
        # Only uncapped instances (a CPU preprocessing job): it starts at once, counted
        # against nothing; a share it names must still exist.
        named = submission.share or layout.default_share
        return Admitted(share_for(counted, layout, where) if named else None, demand, helpers)
    return Admitted(share_for(counted, layout, where), demand, helpers)


def check_fit(submission: Submission, layout: Layout, where: str) -> None:
    """Every instance type the job needs has a capacity, and enough of it (on-demand, or in
    one reservation of a training plan)."""
    type_field, count_field = submission.instance_fields
    capacity = layout.capacity
    for itype, count in submission.demand.items():
        if itype not in capacity:
            types = ", ".join(sorted(capacity)) or "none"
            configured = f"has no capacity in {where} (configured: {types})"
            raise InvalidRequest(
                f"{type_field}: instance type {itype} {configured}",
                type_field,
                f"{itype!r} {configured}",
            )
        most = layout.most(itype)
        if most is not None and count > most:
            raise InvalidRequest.of(
                count_field,
                f"{count} x {itype} is more than {where}'s capacity of {most}; "
                "it could never start",
            )


def share_for(submission: Submission, layout: Layout, where: str) -> str | None:
    """The job's share: its ``share`` tag, else the default share; one that exists and may
    hold the job (None when the layout has no shares)."""
    field = f"Tags.{tags.SHARE}"
    if not layout.shares:
        if submission.share is not None:
            raise InvalidRequest.of(
                field,
                f"{where} has no quota shares, so a job cannot name one "
                f"({submission.share!r}); remove the tag",
            )
        return None
    name = submission.share or layout.default_share
    valid = ", ".join(s.name for s in layout.shares)
    if name is None:
        raise InvalidRequest.of(
            field, f"{where} has shares; tag the job with share = one of {valid}"
        )
    share = layout.share(name)
    if share is None:
        raise InvalidRequest(
            f"{field}: share {name!r} does not exist in {where}; the shares are {valid}",
            field,
            f"{name!r} is not one of {valid}",
        )
    _, count_field = submission.instance_fields
    for itype, count in submission.demand.items():
        # On a training plan's reservation (its share's, or borrowed) it may get more; a
        # plan not read yet may hold any number.
        plans = [plan for plan in layout.plans if plan.instance_type == itype]
        reserved = [r.count for plan in plans for r in plan.reservations]
        unknown = any(plan.read_at is None for plan in plans)
        most = math.inf if unknown else max([share.most(itype), *reserved])
        if count > most:
            raise InvalidRequest.of(
                count_field,
                f"{count} x {itype} is more than it could ever get: share {name} may hold at "
                f"most {most:g} (limit {share.limit(itype)}, strategy {share.strategy.value}); "
                "it could never start",
            )
    return name
