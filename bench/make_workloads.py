"""Generate the benchmark's workload CSVs from ../shared/traces (deterministic).

    python bench/make_workloads.py [TRACES_DIR]

Writes bench/workloads/<name>.csv and bench/workloads/workloads.json (capacity, source,
offered load). The mapping is tjq.simulate.traces'. The generated files are committed; the
traces are not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tjq.simulate import traces
from tjq.simulate.workload import write_workload

HERE = Path(__file__).resolve().parent
DEFAULT_TRACES = HERE.parent.parent / "shared" / "traces"


# The workloads of the warm-pool comparison (bench/warm.py) and of the fair-share one
# (bench/fairness.py), not of the schedule-quality one.
WARM_POOL_WORKLOADS = ("philly-6214e9-week",)
FAIR_SHARE_WORKLOADS = ("fair-chronus-2h", "fair-philly-week")


def workloads(root: Path) -> dict[str, tuple[list, str]]:
    philly = root / "philly-pollux" / "philly.csv"
    return {
        "philly-2days": (
            traces.single_instance(traces.philly(philly, start="2017-10-02 00:00:00", days=2)),
            "Philly (Pollux subset), 2017-10-02 and 03, jobs of up to 8 GPUs",
        ),
        "chronus-1h": (
            traces.single_instance(
                traces.chronus(root / "chronus-philly" / "trace_job_Philly_MIX1.csv", hours=1)
            ),
            "Chronus Philly mix, first hour, jobs of up to 8 GPUs; best effort = priority 0",
        ),
        "itp-cluster03": (
            traces.itp(root / "elasticflow-itp" / "cluster03.csv"),
            "Microsoft ITP cluster03, all jobs (multi-instance jobs included)",
        ),
        # Days 28-35 of the trace, one virtual cluster: its 9,285 jobs all fit one instance.
        "philly-6214e9-week": (
            traces.with_configurations(
                traces.philly(philly, start="2017-10-02 10:30:41", days=7, cluster="6214e9")
            ),
            "Philly (Pollux subset), virtual cluster 6214e9, days 28-35; 8 team "
            "configurations by a Zipf draw",
        ),
        "fair-chronus-2h": (
            traces.single_instance(
                traces.chronus(
                    root / "chronus-philly" / "trace_job_Philly_MIX1.csv", hours=2, users=True
                )
            ),
            "Chronus Philly mix, first two hours, jobs of up to 8 GPUs; submitter = its user "
            "(virtual cluster)",
        ),
        "fair-philly-week": (
            traces.with_submitters(traces.philly(philly, start="2017-10-09 00:00:00", days=7)),
            "Philly (Pollux subset), 2017-10-09 to 15, all clusters; each burst of submissions "
            "from one of 30 users by a Zipf draw",
        ),
    }


def _benchmark(name: str) -> str:
    if name in WARM_POOL_WORKLOADS:
        return "warm pools"
    return "fair share" if name in FAIR_SHARE_WORKLOADS else "quality"


def main(argv: list[str]) -> None:
    root = Path(argv[0]) if argv else DEFAULT_TRACES
    out = HERE / "workloads"
    out.mkdir(exist_ok=True)
    index = {}
    for name, (jobs, source) in workloads(root).items():
        capacity = traces.capacity_for(jobs)
        write_workload(out / f"{name}.csv", jobs)
        index[name] = {
            "source": source,
            "jobs": len(jobs),
            "capacity": {traces.INSTANCE_TYPE: capacity},
            "offered_load": round(traces.offered_load(jobs, capacity), 3),
            "benchmark": _benchmark(name),
        }
        print(f"{name}: {len(jobs)} jobs, capacity {capacity}", file=sys.stderr)
    (out / "workloads.json").write_text(json.dumps(index, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
