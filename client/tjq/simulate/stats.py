"""Summaries of a replay's figures: percentiles, linearly interpolated between the closest
ranks (as numpy's default does), and mean / p50 / p95 / max."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) of ``values``, linearly interpolated."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: Sequence[float], keys=("mean", "p50", "p95", "max")) -> dict:
    if not values:
        return dict.fromkeys(keys, 0.0)
    stats = {
        "mean": sum(values) / len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "max": max(values),
    }
    return {key: round(stats[key], 3) for key in keys}
