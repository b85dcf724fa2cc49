"""`smq usage`'s view of the usage ledger's report (GET /usage's ``report``): a table, CSV
rows, and a picture of the billable instance-hours per day."""

from __future__ import annotations

import csv
import io

# The report's fields, as the table and the CSV header name them.
PHASES = {
    "running": "running",
    "stopping": "stopping",
    "pool_idle": "pool idle",
    "provisioning": "provisioning",
}
COUNTS = {
    "cost_usd": "cost ($)",
    "jobs": "jobs",
    "attempts": "attempts",
    "preemptions": "preempted",
    "work_lost_instance_hours": "work lost (h)",
    "warm_starts": "warm starts",
}


def report_text(report: dict, over: str | None = None, shown: int | None = None) -> str:
    """The report as a table: one row per group, most billed first (the first ``shown``),
    then the total. ``over``: what the window is, in words (default: its two times)."""
    from tabulate import tabulate

    by = report["by"]
    headers = [by, "billable (instance-h)", *PHASES.values(), *COUNTS.values()]
    rows = [_cells(row[by], row) for row in report["rows"][:shown]]
    over = over or f"from {report['since']} to {report['until']}"
    title = (
        f"usage {over}, by {by} (instance-hours; billable: running, stopping and idle warm pools)"
    )
    if not rows:
        return f"{title}\n\nnothing held instances in this window"
    table = tabulate([*rows, _cells("total", report["total"])], headers, floatfmt="g")
    lines = [title, "", table]
    if len(report["rows"]) > len(rows):
        lines.append(f"... and {len(report['rows']) - len(rows)} more {by}s (--json)")
    if report["unpriced_types"]:
        types = ", ".join(report["unpriced_types"])
        lines.append(f"\nno price for {types}: counted at $0 (set the Prices parameter)")
    return "\n".join(lines)


def budgets_text(budgets: list[dict]) -> str:
    """Where each budget stands (GET /usage's ``budgets``), as a table."""
    from tabulate import tabulate

    rows = [
        [
            b["holder"],
            f"{b['spent']:.1f} of {_amount(b['budget'])}",
            f"{b['spent_fraction']:.0%}" if b["spent_fraction"] is not None else "-",
            b["budget"]["window_days"],
            b["budget"]["when_spent"],
            ("spent; frees " + (b["frees_at"] or "never")) if b["is_spent"] else "",
        ]
        for b in budgets
    ]
    headers = ["budget of", "spent", "used", "window (days)", "when spent", ""]
    return "budgets\n\n" + tabulate(rows, headers)


def _amount(budget: dict) -> str:
    if "dollars" in budget:
        return f"${budget['dollars']:g}"
    return f"{budget['instance_hours']:g} instance-h"


def report_csv(report: dict) -> str:
    """The report's rows as CSV (no total), hours by phase and counts as numbers."""
    by = report["by"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            by,
            "billable_instance_hours",
            *(f"{phase}_instance_hours" for phase in PHASES),
            *COUNTS,
            "pool_billed_instance_hours",
        ]
    )
    for row in report["rows"]:
        hours = row["instance_hours"]
        writer.writerow(
            [
                row[by],
                row["billable_instance_hours"],
                *(hours[phase] for phase in PHASES),
                *(row[key] for key in COUNTS),
                row["pool_billed_instance_hours"],
            ]
        )
    return out.getvalue()


def plot_days(report: dict, path: str) -> None:
    """A PNG at ``path``: billable instance-hours per UTC day, stacked by group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    days = [entry["day"] for entry in report["days"]]
    groups = [row[report["by"]] for row in report["rows"]]
    figure, axes = plt.subplots(figsize=(max(6.0, 0.35 * len(days) + 3), 4))
    bottom = [0.0] * len(days)
    colours = matplotlib.colormaps["tab20"].resampled(max(len(groups), 2))
    for index, group in enumerate(groups):
        hours = [entry.get(group, 0.0) for entry in report["days"]]
        axes.bar(days, hours, bottom=bottom, label=_short(group), color=colours(index))
        bottom = [b + h for b, h in zip(bottom, hours, strict=True)]
    axes.set_ylabel("billable instance-hours")
    axes.set_title(f"usage by {report['by']}, {report['since'][:10]} to {report['until'][:10]}")
    axes.tick_params(axis="x", labelrotation=60, labelsize=8)
    if groups:
        axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _cells(name: str, row: dict) -> list:
    hours = row["instance_hours"]
    return [
        _short(name),
        row["billable_instance_hours"],
        *(hours[phase] for phase in PHASES),
        *(row[key] for key in COUNTS),
    ]


def _short(name: str) -> str:
    """A submitter's ARN as its last part (user/alice, assumed-role/ml/alice)."""
    return name.split(":", 5)[-1] if name.startswith("arn:") else name
