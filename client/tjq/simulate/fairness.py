"""How fairly a replay served its submitters (`smq simulate --json`'s ``by_submitter`` and
``fairness``, when the workload names submitters).

* slowdown = (end - submit) / duration: 1 when a job never waited;
* Jain's index over the submitters' mean slowdowns: (sum x)^2 / (n x sum x^2), 1 when all
  are served alike, 1/n when one submitter bears all the delay;
* light submitters: the lower 80% of submitters by instance-hours submitted (at least one).
"""

from __future__ import annotations

from collections.abc import Sequence

from tjq.simulate.records import SimResult
from tjq.simulate.stats import summary

LIGHT_SHARE = 0.8


def jain(values: Sequence[float]) -> float:
    """Jain's fairness index of ``values`` (1: all equal)."""
    if not values:
        return 1.0
    squares = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * squares) if squares else 1.0


def by_submitter(result: SimResult) -> tuple[dict, dict]:
    """Per submitter: jobs, instance-hours submitted, waits and slowdowns; and the fairness
    summary (Jain's index over mean slowdown; light submitters' mean wait)."""
    rows: dict[str, dict] = {}
    for job in result.jobs:
        spec = job.spec
        if spec.submitter is None or job.first_start_s is None or job.end_s is None:
            continue
        row = rows.setdefault(spec.submitter, {"submitted": 0.0, "waits": [], "slowdowns": []})
        row["submitted"] += spec.duration_s * spec.instance_count / 3600
        row["waits"].append(job.first_start_s - spec.submit_s)
        row["slowdowns"].append((job.end_s - spec.submit_s) / max(spec.duration_s, 1.0))
    table = {
        who: {
            "jobs": len(row["waits"]),
            "instance_hours": round(row["submitted"], 3),
            "wait_s": summary(row["waits"], ("mean", "p95")),
            "slowdown": summary(row["slowdowns"], ("mean", "p95")),
        }
        for who, row in sorted(rows.items())
    }
    lightest = sorted(rows, key=lambda who: rows[who]["submitted"])
    light = lightest[: max(1, int(len(lightest) * LIGHT_SHARE))] if lightest else []
    light_waits = [w for who in light for w in rows[who]["waits"]]
    means = [table[who]["slowdown"]["mean"] for who in table]
    overall = {
        "submitters": len(table),
        "jain_slowdown": round(jain(means), 4),
        "light_mean_wait_s": round(sum(light_waits) / len(light_waits), 3) if light_waits else 0.0,
        "heavy_mean_wait_s": round(_mean(_heavy(rows, light)), 3),
    }
    return table, overall


def _heavy(rows: dict, light: list[str]) -> list[float]:
    return [w for who, row in rows.items() if who not in light for w in row["waits"]]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
