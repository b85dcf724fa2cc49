"""``make faults``: every call of every scenario killed in turn, and seeded fault schedules;
the figures go to bench/results/faults.md.

    python -m tests.faults --seeds 200     # what make faults SEEDS=200 runs
    python -m tests.faults --seed 17       # replay one schedule, and say what it found
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # no metrics on stdout
import tests.conftest  # noqa: F401  (the test environment: region, fake credentials)
from tests.faults import crashes, schedules
from tests.faults.crash_points import universe

REPORT = Path(__file__).parents[2] / "bench" / "results" / "faults.md"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults", description=__doc__)
    parser.add_argument("--seeds", type=int, default=200, help="schedules to run (0, 1, ...)")
    parser.add_argument("--seed", type=int, help="replay this one schedule")
    args = parser.parse_args(argv)
    if args.seed is not None:
        result = schedules.run(args.seed)
        print(f"seed {result.seed} ({result.layout}, {result.jobs} jobs): {result.faults}")
        for violation in result.violations:
            print(f"  {violation}")
        return 1 if result.violations else 0
    crashed = crashes.run(every=True)
    ran = [schedules.run(seed) for seed in range(args.seeds)]
    REPORT.write_text(report(crashed, ran))
    print(REPORT.read_text())
    failed = [c for c in crashed if c.violations] + [s for s in ran if s.violations]
    for failure in failed:
        print(
            f"FAILED: {failure}"
            + (f"  replay: {failure.replay}" if hasattr(failure, "replay") else "")
        )
    return 1 if failed else 0


def report(crashed: list[crashes.Crash], ran: list[schedules.Schedule]) -> str:
    """The figures: crash points covered, schedules run, faults injected by kind, the
    invariants' violations and the worst recovery after calm."""
    points = universe().points
    covered = {c.point for c in crashed} & points
    faults = Counter()
    for result in [*crashed, *ran]:
        faults.update(result.faults)
    violations = sum(len(r.violations) for r in [*crashed, *ran])
    worst = max([r.recovery_s for r in [*crashed, *ran]], default=0.0)
    lines = [
        "# Fault suite (`make faults`)",
        "",
        "The real handler, store (moto) and emulated SageMaker on a virtual clock; each "
        "invocation killed at each of its calls in turn, then seeded schedules of outages "
        "(see tests/faults/).",
        "",
        "| figure | value |",
        "|---|---|",
        f"| crash points (each call site, before and after) | {len(points)} |",
        f"| crash points covered | {len(covered)} |",
        f"| invocations killed at a point | {len(crashed)} |",
        f"| seeded schedules run | {len(ran)} |",
        f"| invariant violations | {violations} |",
        f"| worst recovery after calm | {worst:g} s (the sweep runs every 60 s) |",
        "",
        "| fault injected | times |",
        "|---|---|",
        *(f"| {kind} | {n} |" for kind, n in sorted(faults.items())),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
