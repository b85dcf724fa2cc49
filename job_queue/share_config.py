"""The quota shares file: one JSON format for deployment, ``smq local-api`` and ``smq simulate``.

A JSON list of shares::

    [{"name": "QS1", "capacity": {"ml.g5.xlarge": 1}, "strategy": "LEND_AND_BORROW",
      "borrow_limit": 200, "in_share_preemption": true},
     {"name": "QS2", "capacity": {"ml.g5.xlarge": 1}, "strategy": "LEND",
      "in_share_preemption": false}]

``borrow_limit`` (percent of the share's own limit per instance type, -1 = unlimited) is
allowed only for ``LEND_AND_BORROW`` and defaults to -1. A capacity entry may name training
plans as ``CAPACITY`` does (``{"ml.p5.48xlarge": [1, {"training_plan": ARN}]}``): their open
reservations count toward the share's limit, and a plan counts toward one share only. Two
optional fields say who may use a share (:mod:`job_queue.access`): ``max_priority``, the
highest priority a non-admin may give its jobs (at most the queue's ``MaxPriority``), and
``submitters``, the IAM ARN patterns of those who may submit to it
(``["arn:aws:iam::123456789012:role/vision-*"]``). ``budget`` (:mod:`job_queue.budget_config`)
is what the share may spend over time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from job_queue.access import PatternError, check_patterns
from job_queue.budget_config import BudgetError, parse_budget
from job_queue.models import MAX_PRIORITY, MIN_PRIORITY
from job_queue.plans import NOT_READ, plan_entries
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.scheduler.shares import UNLIMITED, Share, Strategy

SHARE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
INSTANCE_TYPE = re.compile(r"^ml\.[a-z][a-z0-9-]*\.(?:[0-9]*xlarge|large|medium|small|metal)$")
_FIELDS = {
    "name",
    "capacity",
    "strategy",
    "borrow_limit",
    "in_share_preemption",
    "max_priority",
    "submitters",
    "budget",
}


class SharesError(ValueError):
    """The shares are not valid; the message names the share and the field."""


def parse_shares(value: object) -> tuple[Share, ...]:
    """Shares from the decoded JSON of a shares file, validated."""
    if not isinstance(value, list) or not value:
        raise SharesError("shares must be a non-empty JSON list of share objects")
    shares: list[Share] = []
    for index, item in enumerate(value, start=1):
        shares.append(_parse_share(item, f"share {index}"))
    names = [share.name for share in shares]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise SharesError(f"share names must be unique: {', '.join(duplicates)}")
    owners: dict[str, str] = {}
    for share in shares:
        for _, arn in share.plans:
            if arn in owners:
                where = "twice" if owners[arn] == share.name else f"and by {share.name}"
                raise SharesError(
                    f"training plan {arn} is named by share {owners[arn]} {where}: a plan's "
                    "reserved instances count toward one share"
                )
            owners[arn] = share.name
    if not any(any(share.capacity.values()) or share.plans for share in shares):
        raise SharesError("the shares have no capacity: every limit is 0")
    return tuple(shares)


def plan_entries_of(shares: Sequence[Share]) -> tuple[TrainingPlan, ...]:
    """The training plans the shares name, as configured (not read yet)."""
    return tuple(
        TrainingPlan(arn, itype, error=NOT_READ) for share in shares for itype, arn in share.plans
    )


def check_ceilings(shares: Sequence[Share], max_priority: int) -> None:
    """No share's ``max_priority`` is above the queue's ceiling."""
    for share in shares:
        if share.max_priority is not None and share.max_priority > max_priority:
            raise SharesError(
                f"share {share.name}: max_priority {share.max_priority} is above the queue's "
                f"MaxPriority of {max_priority}"
            )


def loads_shares(text: str) -> tuple[Share, ...]:
    """Shares from the text of a shares file."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise SharesError(f"shares are not valid JSON: {exc}") from exc
    return parse_shares(value)


def dumps_shares(shares: Sequence[Share]) -> str:
    """The shares file text for ``shares`` (what :func:`loads_shares` reads back)."""
    return json.dumps([share_to_dict(share) for share in shares], sort_keys=True)


def share_to_dict(share: Share) -> dict:
    capacity: dict = dict(share.capacity)
    for itype, arn in share.plans:
        entry = capacity.get(itype, 0)
        entry = entry if isinstance(entry, list) else ([entry] if entry else [])
        capacity[itype] = [*entry, {"training_plan": arn}]
    out = {
        "name": share.name,
        "capacity": capacity,
        "strategy": share.strategy.value,
        "in_share_preemption": share.in_share_preemption,
    }
    if share.borrows:
        out["borrow_limit"] = share.borrow_limit
    if share.max_priority is not None:
        out["max_priority"] = share.max_priority
    if share.submitters:
        out["submitters"] = list(share.submitters)
    if share.budget is not None:
        out["budget"] = share.budget.to_dict()
    return out


def _parse_share(item: object, where: str) -> Share:
    if not isinstance(item, dict):
        raise SharesError(f"{where} must be an object")
    name = item.get("name")
    if not isinstance(name, str) or not SHARE_NAME.match(name):
        raise SharesError(
            f"{where}: name must be 1-64 letters, digits, '-', '_' or '.', got {name!r}"
        )
    where = f"share {name}"
    unknown = sorted(set(item) - _FIELDS)
    if unknown:
        raise SharesError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for field in ("capacity", "strategy", "in_share_preemption"):
        if field not in item:
            raise SharesError(f"{where}: {field} is required")
    try:
        strategy = Strategy(item["strategy"])
    except ValueError:
        valid = ", ".join(s.value for s in Strategy)
        raise SharesError(f"{where}: strategy {item['strategy']!r} is not one of {valid}") from None
    capacity = item["capacity"]
    if not isinstance(capacity, dict) or not capacity:
        raise SharesError(f'{where}: capacity must be an object such as {{"ml.g5.xlarge": 1}}')
    limits: dict[str, int] = {}
    plans: list[tuple[str, str]] = []
    for itype, count in capacity.items():
        if not INSTANCE_TYPE.match(itype):
            raise SharesError(f"{where}: capacity: {itype!r} is not a SageMaker instance type")
        if isinstance(count, list | dict):
            try:
                on_demand, found = plan_entries(itype, count)
            except ValueError as exc:
                raise SharesError(f"{where}: capacity: {exc}") from None
            limits[itype] = on_demand or 0
            plans += [(itype, plan.arn) for plan in found]
        elif isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise SharesError(
                f"{where}: capacity: {itype} must be a whole number >= 0 or training plans "
                f'({{"training_plan": ARN}}, alone or in a list beside a number), got {count!r}'
            )
        else:
            limits[itype] = count
    borrow_limit = item.get("borrow_limit", UNLIMITED)
    if "borrow_limit" in item and strategy is not Strategy.LEND_AND_BORROW:
        raise SharesError(
            f"{where}: borrow_limit applies only to LEND_AND_BORROW shares, not {strategy.value}"
        )
    if isinstance(borrow_limit, bool) or not isinstance(borrow_limit, int) or borrow_limit < -1:
        raise SharesError(
            f"{where}: borrow_limit must be a whole percentage >= 0, or -1 for unlimited, "
            f"got {borrow_limit!r}"
        )
    in_share = item["in_share_preemption"]
    if not isinstance(in_share, bool):
        raise SharesError(f"{where}: in_share_preemption must be true or false, got {in_share!r}")
    max_priority = item.get("max_priority")
    if max_priority is not None and (
        isinstance(max_priority, bool)
        or not isinstance(max_priority, int)
        or not MIN_PRIORITY <= max_priority <= MAX_PRIORITY
    ):
        raise SharesError(
            f"{where}: max_priority must be a whole number from {MIN_PRIORITY} to "
            f"{MAX_PRIORITY}, got {max_priority!r}"
        )
    submitters = item.get("submitters", [])
    if not isinstance(submitters, list):
        raise SharesError(f"{where}: submitters must be a list of IAM ARN patterns")
    try:
        submitters = check_patterns(submitters, f"{where}: submitters")
    except PatternError as exc:
        raise SharesError(str(exc)) from None
    budget = None
    if "budget" in item:
        try:
            budget = parse_budget(item["budget"], where)
        except BudgetError as exc:
            raise SharesError(str(exc)) from None
    return Share(
        name, limits, strategy, borrow_limit, in_share, max_priority, submitters, tuple(plans),
        budget,
    )  # fmt: skip
