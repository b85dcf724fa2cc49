"""`make bench`: schedule quality, cost per scheduling pass, and speed.

    python bench/run.py            # everything (a few minutes on 2 cores)
    python bench/run.py --quick    # smaller depths and no full-trace replay
    python bench/run.py --only checkpoints   # one section

Writes bench/results/<section>.{md,json} (quality, shares, fair_share, warm_pools, checkpoints,
cost, calls, outlook, speed) and prints the tables.
"""

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")

from calls import calls, calls_table
from checkpoints import checkpoints, checkpoints_table
from cost import cost, cost_table
from fairness import fairness, fairness_table
from outlook import outlook, outlook_table
from quality import quality, quality_table, shares_comparison, shares_table
from speed import speed, speed_table
from warm import warm_pools, warm_pools_table

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", metavar="SECTION", help="run one section (e.g. checkpoints)")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto server's request log
    RESULTS.mkdir(exist_ok=True)
    sections = [
        ("quality", "Schedule quality", quality, quality_table),
        ("shares", "Quota shares", shares_comparison, shares_table),
        ("fair_share", "Fair share by recent use", fairness, fairness_table),
        ("warm_pools", "Warm pools", warm_pools, warm_pools_table),
        ("checkpoints", "Preemption without lost work", checkpoints, checkpoints_table),
        (
            "cost",
            "Cost per scheduling pass",
            lambda: cost([10, 100] if args.quick else [10, 100, 1000, 10000]),
            cost_table,
        ),
        ("calls", "DynamoDB calls per operation", calls, calls_table),
        (
            "outlook",
            "Expected start times",
            lambda: outlook([10, 100] if args.quick else [10, 100, 1000, 10000]),
            outlook_table,
        ),
        ("speed", "Speed", lambda: speed(full_trace=not args.quick), speed_table),
    ]
    if args.only:
        sections = [s for s in sections if s[0] == args.only]
        if not sections:
            parser.error(f"--only: no section {args.only!r}")
    for key, title, measure, render in sections:
        started = time.perf_counter()
        result = measure()
        text = f"## {title}\n\n{render(result)}\n"
        (RESULTS / f"{key}.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / f"{key}.md").write_text(text)
        print(text)
        print(f"({title}: {time.perf_counter() - started:.0f} s)\n", file=sys.stderr)


if __name__ == "__main__":
    main()
