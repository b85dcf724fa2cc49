"""`smq`'s commands that run on this machine: local-api (the queue with AWS emulated) and
simulate (a workload replayed through the queue's scheduler)."""

from __future__ import annotations

import json
import sys

from tjq.cli.common import fail, read_shares


def local_api(args) -> int:
    import logging
    import os
    import threading

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from job_queue.scheduler import Policy
    from tjq.local.server import LocalApi

    shares = ()
    if args.shares:
        shares = read_shares(args.shares, args.max_priority)
        if args.default_share and args.default_share not in {s.name for s in shares}:
            return fail(f"--default-share {args.default_share} is not a share in {args.shares}")
    from job_queue.config import UNCAPPED

    given = dict(args.capacity or [("ml.p5.48xlarge", 2)])
    uncapped = {t: UNCAPPED for t, n in given.items() if n == UNCAPPED}
    capacity = given
    if shares:
        from job_queue.scheduler import total_capacity

        capacity = {**total_capacity(shares), **uncapped}
    roles = tuple(args.allowed_role) if args.allowed_role else ()
    local = LocalApi(
        shares=shares,
        default_share=args.default_share,
        port=args.port,
        capacity=capacity,
        run_seconds=args.run_seconds,
        stop_seconds=args.stop_seconds,
        keep_alive_seconds=int(args.keep_alive),
        policy=Policy(warm_affinity_s=args.warm_affinity),
        cold_start_seconds=args.start_seconds,
        warm_start_seconds=args.warm_start_seconds,
        max_priority=args.max_priority,
        training_plans=tuple(args.training_plan or ()),
        **({"allowed_role_arns": roles} if roles else {}),
        **({"admins": tuple(args.admin)} if args.admin else {}),
    )
    try:
        local.start()
    except OSError as exc:
        return fail(f"cannot listen on port {args.port}: {exc.strerror}")
    print("training-job-queue local API is up. In the shell that runs your training script:\n")
    for name, value in local.environment().items():
        print(f"export {name}={value}")
    pool = ", ".join(
        f"{n} x {t}" if n != UNCAPPED else f"{t} uncapped" for t, n in capacity.items()
    )
    print(
        f"\ncapacity: {pool}; jobs run {args.run_seconds:g}s (or their "
        "simulated-run-seconds tag), a stop takes "
        f"{args.stop_seconds:g}s; default keep-alive {args.keep_alive:g}s. Ctrl-C stops.",
        flush=True,
    )
    for plan in local.cloud.sagemaker.plans.values():
        print(f"training plan {plan.name}: {plan.arn}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("\nstopping", flush=True)
    finally:
        local.stop()
    return 0


def simulate(args) -> int:
    from job_queue.config import split_capacity
    from job_queue.scheduler import Policy
    from tjq.simulate.engine import SimSettings, simulate
    from tjq.simulate.metrics import report
    from tjq.simulate.workload import WorkloadError, read_workload

    capacity, uncapped = split_capacity(dict(args.capacity or []))
    shares = ()
    if args.shares:
        if capacity:
            return fail("give --shares or --capacity, not both: the shares make the capacity")
        from job_queue.scheduler import total_capacity

        shares = read_shares(args.shares)
        capacity = total_capacity(shares)
    if not capacity:
        return fail("--capacity TYPE=N is required (for example --capacity ml.p5.48xlarge=2)")
    try:
        jobs = read_workload(args.workload, capacity, shares, uncapped)
    except WorkloadError as exc:
        return fail(f"{args.workload}: {exc}")
    settings = SimSettings(
        shares=shares,
        capacity=capacity,
        stop_latency=args.stop_latency,
        start_latency=args.start_latency,
        warm_start_latency=args.warm_start_latency,
        keep_alive_s=args.keep_alive,
        policy=Policy(
            preemption=not args.no_preemption,
            backfill=not args.no_backfill,
            min_run_s=args.min_run,
            warm_affinity_s=args.warm_affinity,
        ),
    )
    show_progress = sys.stderr.isatty() and len(jobs) >= 5000
    result = simulate(jobs, settings, progress=_progress_bar if show_progress else None)
    answer = report(result)
    if args.plot:
        from tjq.simulate.plot import plot

        try:
            plot(result, args.plot)
        except ImportError:
            return fail("--plot needs matplotlib: pip install 'training-job-queue[plot]'")
    if args.json:
        print(json.dumps(answer))
    else:
        from tjq.simulate.summary import summary

        print(summary(answer, capacity))
    return 0


def _progress_bar(done: int, total: int) -> None:
    width = 40
    filled = width * done // max(total, 1)
    end = "\n" if done >= total else ""
    print(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} jobs",
        end=end,
        file=sys.stderr,
        flush=True,
    )
