"""What a replay's instances were billed at the default list prices: the cost columns of the
warm-pool and checkpoint tables, by the queue's own usage report (tjq.simulate.usage)."""

from __future__ import annotations

from tjq.simulate.usage import sim_usage

from job_queue.costs import LIST_PRICES, LIST_PRICES_DATE, Prices, reserved_hours

BILLED_HEADERS = ("billed inst-h", "billed $ (list)", "$ vs blog")
BILLED_NOTE = (
    f"billed: running, stopping and idle pools at the README's list prices ({LIST_PRICES_DATE}, "
    "unverified); a training plan's instances too (its fee set to its reserved hours at the "
    "list price), so that runs compare"
)


def billed(replay) -> dict:
    """The replay's billable instance-hours and their cost."""
    fees = {
        plan.name: LIST_PRICES[plan.instance_type] * reserved_hours(plan)
        for plan in replay.settings.plans
    }
    prices = Prices(plan_fees=fees)
    total = sim_usage(replay, prices, "type")["total"]
    return {"instance_hours": total["billable_instance_hours"], "usd": total["cost_usd"]}


def billed_cells(run: dict, baseline: dict) -> tuple[str, str, str]:
    saved = run["usd"] - baseline["usd"]
    return (
        f"{run['instance_hours']:,.0f}",
        f"{run['usd']:,.0f}",
        f"{saved:+,.0f} ({run['usd'] / baseline['usd'] - 1:+.1%})",
    )
