"""What held instances cost: the ``Prices`` setting, and the list prices it overrides.

``Prices`` is a JSON object of instance types and their price in dollars per instance-hour,
and, under ``training_plans``, each plan's upfront fee in dollars (by plan name or ARN); a
plan's instances cost its fee spread over the instance-hours it reserves, or nothing if its
fee is not given (it was paid up front, used or not)::

    {"ml.p5.48xlarge": 55.04, "training_plans": {"p5-week": 26500}}

A type neither ``Prices`` nor the default table names costs nothing, and a report says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from job_queue.scheduler.reservations import TrainingPlan

HOUR = 3600.0
PLANS = "training_plans"

# On-demand list prices of SageMaker training instances, US East (N. Virginia), Linux, in
# dollars per instance-hour, from https://aws.amazon.com/sagemaker-ai/pricing/ as of
# 2025-05 (before the June 2025 price cut of P4 and P5 instances). A guide, not a quote:
# set Prices to your region's and your discounts.
LIST_PRICES_DATE = "2025-05"
LIST_PRICES: Mapping[str, float] = {
    "ml.p5.48xlarge": 113.07,
    "ml.p4d.24xlarge": 37.688,
    "ml.p3.16xlarge": 28.152,
    "ml.p3.2xlarge": 3.825,
    "ml.g5.48xlarge": 20.36,
    "ml.g5.12xlarge": 7.09,
    "ml.g5.xlarge": 1.408,
    "ml.trn1.32xlarge": 24.78,
    "ml.m5.xlarge": 0.23,
}


@dataclass(frozen=True)
class Prices:
    """Dollars per instance-hour by type, and training plans' upfront fees by plan name."""

    per_hour: Mapping[str, float] = field(default_factory=lambda: dict(LIST_PRICES))
    plan_fees: Mapping[str, float] = field(default_factory=dict)

    def plan_rates(self, plans: Iterable[TrainingPlan]) -> dict[str, float]:
        """Each plan's price per instance-hour (by ARN): its fee over its reserved hours."""
        rates = {}
        for plan in plans:
            fee, hours = self.plan_fees.get(plan.name, 0.0), reserved_hours(plan)
            rates[plan.arn] = fee / hours if fee and hours > 0 else 0.0
        return rates

    def rate(self, itype: str, plan: str | None, plan_rates: Mapping[str, float]) -> float:
        """The price of one instance-hour of ``itype``, on the training plan ``plan`` (an ARN)
        if given."""
        if plan is not None:
            return plan_rates.get(plan, 0.0)
        return self.per_hour.get(itype, 0.0)


def key_price(prices: Prices, plans: Iterable[TrainingPlan]):
    """The price of an instance-hour of a budget's capacity key ("TYPE" or "TYPE PLAN-ARN"),
    as the usage report prices it."""
    rates = prices.plan_rates(plans)

    def price(key: str) -> float:
        itype, _, plan = key.partition(" ")
        return prices.rate(itype, plan or None, rates)

    return price


def reserved_hours(plan: TrainingPlan) -> float:
    """The instance-hours ``plan`` reserves, over all its reservations."""
    return sum(r.count * (r.end - r.start) for r in plan.reservations) / HOUR


def parse_prices(text: str, source: str = "Prices") -> Prices:
    """The list prices, overridden by ``text`` (a JSON object; empty: none). ValueError
    naming ``source`` (the setting, a variable or a flag) and the entry that is not a price."""
    if not text.strip():
        return Prices()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{source} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f'{source} must be a JSON object such as {{"ml.p5.48xlarge": 55.04}}')
    fees = value.pop(PLANS, {})
    if not isinstance(fees, dict):
        raise ValueError(f"{source}: {PLANS} must map plan names to upfront fees, got {fees!r}")
    per_hour = {
        t: _amount(f"{source}: {t}", v, "dollars per instance-hour") for t, v in value.items()
    }
    for itype in per_hour:
        if not itype.startswith("ml."):
            raise ValueError(f"{source}: {itype!r} is not a SageMaker instance type (ml.*)")
    plan_fees = {
        name.rsplit("/", 1)[-1]: _amount(f"{source}: {PLANS}.{name}", fee, "dollars")
        for name, fee in fees.items()
    }
    return Prices({**LIST_PRICES, **per_hour}, plan_fees)


def _amount(where: str, value: object, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{where} must be a number >= 0 ({unit}), got {value!r}")
    return float(value)
