"""CAPACITY: instances per type, the types left uncapped, and the training plans; and the
checks that tie the plans to the queue's role and to one owner."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from job_queue.errors import ConfigError
from job_queue.plans import plan_entries
from job_queue.scheduler import Share
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.share_config import INSTANCE_TYPE

# A capacity entry that caps nothing: ``{"ml.c5.18xlarge": "unlimited"}``.
UNCAPPED = "unlimited"


def parse_capacity(
    text: str, capped: bool = True
) -> tuple[dict[str, int], frozenset[str], tuple[TrainingPlan, ...]]:
    """``{"ml.p5.48xlarge": 2, "ml.c5.18xlarge": "unlimited"}``: instances per type the
    queue may run at once, the types it does not cap, and its training plans (``capped``:
    at least one type must have a cap; with shares, theirs are the caps)."""
    if not text.strip():
        raise ConfigError(
            'CAPACITY is not set: give the instances per type, such as {"ml.p5.48xlarge": 2} '
            "(or quota shares in SHARES)"
        )
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"CAPACITY is not JSON: {exc}") from exc
    if not isinstance(value, dict) or not value:
        raise ConfigError('CAPACITY must be a JSON object such as {"ml.p5.48xlarge": 2}')
    try:
        capacity, uncapped, plans = split_capacity(value)
    except ValueError as exc:
        raise ConfigError(f"CAPACITY: {exc}") from None
    if capped and not capacity:
        raise ConfigError("CAPACITY: at least one instance type must have a cap")
    return capacity, uncapped, plans


def split_capacity(
    value: Mapping[str, object],
) -> tuple[dict[str, int], frozenset[str], tuple[TrainingPlan, ...]]:
    """The capped types' on-demand counts, the uncapped types (``"unlimited"``), and the
    training plans (``{"training_plan": ARN}``, alone or listed beside a count; a type with
    plans only has no on-demand capacity). ValueError naming the type whose entry is none of
    these, or a plan named twice."""
    capacity, uncapped, plans = {}, set(), []
    for itype, count in value.items():
        if not isinstance(itype, str) or not INSTANCE_TYPE.match(itype):
            raise ValueError(f"{itype!r} is not a SageMaker instance type")
        if count == UNCAPPED:
            uncapped.add(itype)
        elif isinstance(count, list | dict):
            on_demand, found = plan_entries(itype, count)
            capacity[itype] = on_demand or 0
            plans += found
        elif isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(
                f"{itype} must have a whole number >= 0, {UNCAPPED!r} or training plans "
                f'({{"training_plan": ARN}}), got {count!r}'
            )
        else:
            capacity[itype] = count
    arns = [plan.arn for plan in plans]
    twice = sorted({arn for arn in arns if arns.count(arn) > 1})
    if twice:
        raise ValueError(f"training plan {twice[0]} is named more than once")
    return capacity, frozenset(uncapped), tuple(plans)


def check_plan_roles(plans: Iterable[TrainingPlan], allowed: frozenset[str], where: str) -> None:
    """Every plan of the capacity (``where``: CAPACITY or the shares) is one the queue's role
    may describe (TRAINING_PLAN_ARNS, the template's TrainingPlanArns)."""
    missing = [plan.arn for plan in plans if plan.arn not in allowed]
    if missing:
        raise ConfigError(
            f"{where}: training plan {missing[0]} is not in TrainingPlanArns "
            "(TRAINING_PLAN_ARNS), so the queue may not describe it; add it and redeploy"
        )


def check_plans_owned_once(plans: Iterable[TrainingPlan], shares: Sequence[Share]) -> None:
    """With shares, a plan counts toward the share that names it: CAPACITY names none."""
    owners = {arn: share.name for share in shares for _, arn in share.plans}
    for plan in plans if shares else ():
        if plan.arn in owners:
            raise ConfigError(
                f"training plan {plan.arn} is named by both CAPACITY and share "
                f"{owners[plan.arn]}: a plan's reserved instances count toward one place"
            )
        raise ConfigError(
            f"CAPACITY: training plan {plan.arn}: with SHARES, name it in the capacity of the "
            "share whose limit its reservations count toward"
        )
