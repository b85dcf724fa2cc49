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
        from tjq.local.cloud import ACCOUNT, REGION

        local = {
            f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/{o.partition('=')[0]}"
            for o in args.training_plan or ()
        }
        if problem := _unknown_plans(shares, local, "--training-plan"):
            return fail(problem)
    from job_queue.config import UNCAPPED

    plan_options = tuple(args.training_plan or ())
    default = [] if plan_options else [("ml.p5.48xlarge", 2)]
    given = with_plans(dict(args.capacity or default), plan_options)
    uncapped = {t: UNCAPPED for t, n in given.items() if n == UNCAPPED}
    capacity = given
    if shares:
        from job_queue.scheduler import total_capacity

        capacity = {**total_capacity(shares), **uncapped}
    roles = tuple(args.allowed_role) if args.allowed_role else ()
    local = LocalApi(
        queue_name=args.name,
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
        training_plans=plan_options,
        checkpoint_s3_uri=args.checkpoint_s3_uri,
        run_scripts=args.run_scripts,
        **({"allowed_role_arns": roles} if roles else {}),
        **({"admins": tuple(args.admin)} if args.admin else {}),
    )
    try:
        local.start()
    except OSError as exc:
        return fail(f"cannot listen on port {args.port}: {exc.strerror}")
    print(f"queue {args.name}: local API is up. In the shell that runs your training script:\n")
    for name, value in local.environment().items():
        print(f"export {name}={value}")
    pool = ", ".join(_capacity_text(t, n) for t, n in capacity.items())
    runs = (
        "jobs run their scripts here"
        if args.run_scripts
        else f"jobs run {args.run_seconds:g}s (or their simulated-run-seconds tag)"
    )
    saved = args.checkpoint_s3_uri or "off"
    stop = (
        "a stop lasts until the script exits (SIGKILL after 120s)"
        if args.run_scripts
        else f"a stop takes {args.stop_seconds:g}s"
    )
    print(
        f"\ncapacity: {pool}; {runs}, {stop}; default keep-alive {args.keep_alive:g}s; "
        f"checkpoints {saved}. Ctrl-C stops.",
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


def with_plans(capacity: dict, plan_options: tuple[str, ...]) -> dict:
    """``capacity`` with each plan of ``smq local-api --training-plan`` listed under its
    instance type, beside that type's on-demand count, if any."""
    from tjq.local.cloud import ACCOUNT, REGION
    from tjq.local.emulated_plans import plans_from_options

    capacity = dict(capacity)
    for plan in plans_from_options(plan_options, 0.0, REGION, ACCOUNT):
        for itype in dict.fromkeys(r.instance_type for r in plan.reservations):
            entry = capacity.get(itype, [])
            entry = entry if isinstance(entry, list) else [entry]
            capacity[itype] = [*entry, {"training_plan": plan.arn}]
    return capacity


def _unknown_plans(shares, known: set[str], option: str) -> str | None:
    """A share naming a training plan that no ``option`` gives: what to say, or None."""
    for share in shares:
        for _, arn in share.plans:
            if arn not in known:
                given = ", ".join(sorted(known)) or "none"
                return (
                    f"share {share.name} names training plan {arn}, which no {option} gives "
                    f"(given: {given})"
                )
    return None


def _capacity_text(itype: str, entry) -> str:
    from job_queue.config import UNCAPPED

    if entry == UNCAPPED:
        return f"{itype} uncapped"
    parts = entry if isinstance(entry, list) else [entry]
    counts = [f"{n} x {itype}" for n in parts if isinstance(n, int)]
    plans = [
        f"{itype} on plan {p['training_plan'].rsplit('/', 1)[-1]}"
        for p in parts
        if isinstance(p, dict)
    ]
    return ", ".join(counts + plans)


def simulate(args) -> int:
    from job_queue.config import split_capacity
    from job_queue.scheduler import Policy
    from tjq.simulate.engine import SimSettings, simulate
    from tjq.simulate.metrics import report
    from tjq.simulate.plans import sim_plans
    from tjq.simulate.workload import WorkloadError, read_workload

    capacity, uncapped, _ = split_capacity(dict(args.capacity or []))
    try:
        plans = sim_plans(args.plan or ())
    except ValueError as exc:
        return fail(str(exc))
    shares = ()
    if args.shares:
        if capacity:
            return fail("give --shares or --capacity, not both: the shares make the capacity")
        from job_queue.scheduler import total_capacity

        shares = read_shares(args.shares)
        capacity = total_capacity(shares)
        if problem := _unknown_plans(shares, {plan.arn for plan in plans}, "--plan"):
            return fail(problem)
    capacity.update({plan.instance_type: capacity.get(plan.instance_type, 0) for plan in plans})
    if not capacity:
        return fail(
            "--capacity TYPE=N or --plan is required (for example --capacity ml.p5.48xlarge=2)"
        )
    try:
        jobs = read_workload(args.workload, capacity, shares, uncapped, plans)
    except WorkloadError as exc:
        return fail(f"{args.workload}: {exc}")
    settings = SimSettings(
        shares=shares,
        capacity=capacity,
        stop_latency=args.stop_latency,
        start_latency=args.start_latency,
        warm_start_latency=args.warm_start_latency,
        keep_alive_s=args.keep_alive,
        plans=plans,
        uncapped=uncapped,
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
