"""The human summary of `smq simulate`."""

from __future__ import annotations

from tabulate import tabulate

from tjq.table import duration


def summary(report: dict, capacity: dict[str, int]) -> str:
    m = report["metrics"]
    pool = ", ".join(f"{n} x {t}" for t, n in capacity.items())
    lines = [
        f"{m['jobs']} jobs on {pool}; makespan {duration(m['makespan_s'])}",
        f"utilization {m['utilization']:.1%}, goodput {m['goodput']:.1%}; "
        f"{m['preemptions']} preemptions losing {m['lost_instance_s'] / 3600:.1f} instance-hours; "
        f"idle while jobs waited: {m['idle_while_waiting_instance_s'] / 3600:.1f} instance-hours",
        "",
    ]
    rows = [
        (
            "all",
            duration(m["wait_s"]["mean"]),
            duration(m["wait_s"]["p95"]),
            duration(m["wait_s"]["max"]),
        )
    ]
    rows += [
        (priority, duration(w["mean"]), duration(w["p95"]), duration(w["max"]))
        for priority, w in m["wait_s_by_priority"].items()
    ]
    lines.append(
        tabulate(
            rows, headers=("Priority", "Mean wait", "p95 wait", "Max wait"), disable_numparse=True
        )
    )
    if "cancelled" in m:
        lines.insert(2, f"{m['cancelled']} jobs cancelled: their dependency could never hold")
    if "failed" in m:
        lines.insert(
            2, f"{m['failed']} jobs failed; {m['retried']} failed attempts retried in place"
        )
    if "warm_starts" in m:
        lines.insert(
            2,
            f"warm pools: {m['warm_starts']} warm starts, {m['cold_starts']} cold; "
            f"{m['released_pools']} pools released; idle pools held "
            f"{m['warm_pool_instance_s'] / 3600:.1f} instance-hours; provisioning "
            f"{m['provisioning_instance_s'] / 3600:.1f} instance-hours",
        )
    if "by_share" in m:
        shares = [
            (
                name,
                share["jobs"],
                duration(share["wait_s"]["mean"]),
                duration(share["wait_s"]["p95"]),
                "" if share["utilization"] is None else f"{share['utilization']:.1%}",
            )
            for name, share in m["by_share"].items()
        ]
        headers = ("Share", "Jobs", "Mean wait", "p95 wait", "Use of own limit")
        lines += ["", tabulate(shares, headers=headers, disable_numparse=True)]
    if "by_submitter" in m:
        lines += ["", *_submitters(m["by_submitter"], m["fairness"])]
    if "usage" in report:
        from tjq.usage_table import report_text

        lines += ["", report_text(report["usage"], "over the replay", SUBMITTERS_SHOWN)]
    return "\n".join(lines)


SUBMITTERS_SHOWN = 10  # the heaviest, by instance-hours submitted


def _submitters(by_submitter: dict, fairness: dict) -> list[str]:
    """The heaviest submitters' waits and slowdowns, and how fairly all were served."""
    heaviest = sorted(by_submitter, key=lambda who: -by_submitter[who]["instance_hours"])
    rows = [
        (
            who,
            s["jobs"],
            f"{s['instance_hours']:.1f}",
            duration(s["wait_s"]["mean"]),
            duration(s["wait_s"]["p95"]),
            f"{s['slowdown']['mean']:.1f}",
        )
        for who, s in ((who, by_submitter[who]) for who in heaviest[:SUBMITTERS_SHOWN])
    ]
    headers = ("Submitter", "Jobs", "Instance-h", "Mean wait", "p95 wait", "Mean slowdown")
    out = [tabulate(rows, headers=headers, disable_numparse=True)]
    if len(heaviest) > SUBMITTERS_SHOWN:
        out.append(f"... and {len(heaviest) - SUBMITTERS_SHOWN} lighter submitters (--json)")
    out.append(
        f"fairness over {fairness['submitters']} submitters: Jain's index of mean slowdown "
        f"{fairness['jain_slowdown']:.3f}; mean wait of the lighter 80% "
        f"{duration(fairness['light_mean_wait_s'])}, of the rest "
        f"{duration(fairness['heavy_mean_wait_s'])}"
    )
    return out
