"""Budgets as they are given: a share's ``budget`` field in the shares file, and the
``Budgets`` setting (submitter -> budget), checked wherever they are given (cold start,
``PUT /shares``, ``smq local-api``, ``smq simulate``). Pure.

A budget is ``{"instance_hours": 500, "window_days": 30, "when_spent": "wait"}`` (or
``"dollars": 20000`` instead of instance-hours; ``when_spent`` ``wait`` or
``lowest-priority``; ``window_days`` defaults to 30, ``when_spent`` to ``wait``).
"""

from __future__ import annotations

import json
import math

from job_queue.fair_share_config import FAIR_SHARE_ID
from job_queue.scheduler.budgets import Budget, Holder, Unit, WhenSpent

MAX_WINDOW_DAYS = 365  # the ledger keeps a year (and a month) of spending
_FIELDS = {"instance_hours", "dollars", "window_days", "when_spent"}


class BudgetError(ValueError):
    """A budget is malformed; the message names where, the field and the value."""


def parse_budget(value: object, where: str) -> Budget:
    """One budget (``where``: whose, for the message)."""
    if not isinstance(value, dict):
        raise BudgetError(
            f'{where}: budget must be an object such as {{"instance_hours": 500, '
            f'"window_days": 30, "when_spent": "wait"}}, got {value!r}'
        )
    unknown = sorted(set(value) - _FIELDS)
    if unknown:
        raise BudgetError(f"{where}: budget: unknown field(s) {', '.join(unknown)}")
    units = [unit for unit in Unit if unit.value in value]
    if len(units) != 1:
        said = "not both" if units else f"got {', '.join(sorted(value)) or 'neither'}"
        raise BudgetError(f"{where}: budget needs one of instance_hours or dollars ({said})")
    unit = units[0]
    amount = value[unit.value]
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not amount >= 0:
        raise BudgetError(f"{where}: budget: {unit.value} must be a number >= 0, got {amount!r}")
    if not math.isfinite(amount):
        raise BudgetError(f"{where}: budget: {unit.value} must be finite, got {amount!r}")
    days = value.get("window_days", 30)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_WINDOW_DAYS:
        raise BudgetError(
            f"{where}: budget: window_days must be a whole number of days from 1 to "
            f"{MAX_WINDOW_DAYS}, got {days!r}"
        )
    when = value.get("when_spent", WhenSpent.WAIT.value)
    try:
        when_spent = WhenSpent(when)
    except ValueError:
        valid = " or ".join(w.value for w in WhenSpent)
        raise BudgetError(f"{where}: budget: when_spent must be {valid}, got {when!r}") from None
    return Budget(float(amount), unit, days, when_spent)


def parse_budgets(text: str, name: str = "Budgets") -> dict[Holder, Budget]:
    """``{"alice": {"instance_hours": 100}, "arn:aws:iam::123456789012:role/bob": ...}``:
    a budget per submitter -- its fair-share-id, or its IAM principal (a role's ARN, not a
    session's), exactly; empty: none."""
    if not str(text).strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BudgetError(f"{name} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BudgetError(f'{name} must be a JSON object such as {{"alice": {{"dollars": 5000}}}}')
    budgets = {}
    for submitter, budget in value.items():
        if not (submitter.startswith("arn:") or FAIR_SHARE_ID.match(submitter)) or (
            "*" in submitter
        ):
            raise BudgetError(
                f"{name}: {submitter!r} is neither an IAM principal's ARN nor a fair-share-id "
                "(a budget names one submitter exactly: no patterns)"
            )
        budgets[Holder("submitter", submitter)] = parse_budget(budget, f"{name}: {submitter}")
    return budgets


def dumps_budgets(budgets: dict[Holder, Budget]) -> str:
    """The ``Budgets`` text of ``budgets`` (submitters only)."""
    return json.dumps({h.name: b.to_dict() for h, b in budgets.items()})


def budgets_from_environment(env) -> dict[Holder, Budget]:
    """The Lambda's BUDGETS (submitters' budgets, JSON; empty: none)."""
    return parse_budgets(env.get("BUDGETS", ""), "BUDGETS")


def budgeted(shares, submitters: dict[Holder, Budget]) -> dict[Holder, Budget]:
    """Every budget in effect: the shares' (``shares`` as in effect) and the submitters'."""
    found = {Holder("share", s.name): s.budget for s in shares if s.budget is not None}
    return {**found, **submitters}
