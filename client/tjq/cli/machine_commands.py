"""`smq simulate`: a workload replayed through the queue's scheduler (what-if)."""

from __future__ import annotations

import json
import sys

from tjq.cli.common import fail, read_flag_file, read_shares
from tjq.cli.local_command import unknown_plans


def simulate(args) -> int:
    from job_queue.capacity_config import split_capacity
    from job_queue.fair_share_config import FairShareError
    from job_queue.scheduler import Policy
    from tjq.simulate.engine import SimSettings, simulate
    from tjq.simulate.metrics import report
    from tjq.simulate.plans import sim_plans
    from tjq.simulate.usage import sim_usage
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
        if problem := unknown_plans(shares, {plan.arn for plan in plans}, "--plan"):
            return fail(problem)
    capacity.update({plan.instance_type: capacity.get(plan.instance_type, 0) for plan in plans})
    if not capacity:
        return fail(
            "--capacity TYPE=N or --plan is required (for example --capacity ml.p5.48xlarge=2)"
        )
    try:
        fair = _fair_share(args)
    except FairShareError as exc:
        return fail(str(exc))
    try:
        limits = _limits(args)
    except ValueError as exc:
        return fail(str(exc))
    try:
        prices = _prices(args.prices)
        budgets = _budgets(args.budgets)
    except ValueError as exc:
        return fail(str(exc))
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
        limits=limits,
        budgets=budgets,
        prices=prices,
        policy=Policy(
            preemption=not args.no_preemption,
            backfill=not args.no_backfill,
            min_run_s=args.min_run,
            warm_affinity_s=args.warm_affinity,
            fair_share=fair,
        ),
    )
    show_progress = sys.stderr.isatty() and len(jobs) >= 5000
    result = simulate(jobs, settings, progress=_progress_bar if show_progress else None)
    answer = report(result)
    by = args.usage_by or ("share" if shares else "submitter")
    answer["usage"] = sim_usage(result, prices, by)
    if args.plot:
        from tjq.simulate.plot import plot

        try:
            kind = plot(result, args.plot, args.plot_kind)
        except ImportError:
            return fail("--plot needs matplotlib: pip install 'training-job-queue[plot]'")
        except OSError as exc:
            return fail(f"--plot {args.plot}: cannot write it: {exc.strerror}")
        print(f"wrote {args.plot} ({kind} chart)", file=sys.stderr)
    if args.json:
        print(json.dumps(answer))
    else:
        from tjq.simulate.summary import summary

        print(summary(answer, capacity))
    return 0


def _prices(path: str | None):
    """The prices of ``--prices FILE`` (the list prices without it); ValueError naming it."""
    from job_queue.costs import Prices, parse_prices

    if path is None:
        return Prices()
    return parse_prices(read_flag_file("--prices", path), f"--prices {path}")


def _budgets(path: str | None) -> dict:
    """The budgets of ``--budgets FILE`` (none without it); ValueError naming it."""
    from job_queue.budget_config import parse_budgets

    if path is None:
        return {}
    return parse_budgets(read_flag_file("--budgets", path), f"--budgets {path}")


def _limits(args):
    """The queue's limits of the --retry-on-failure and --max-preemptions flags (ValueError
    names the flag)."""
    from job_queue.limits import Limits, parse_max_preemptions, parse_rules

    rules = parse_rules(args.retry_on_failure or "", "--retry-on-failure")
    return Limits(rules, parse_max_preemptions(args.max_preemptions or "", "--max-preemptions"))


def _fair_share(args):
    """The fair-share policy of the --fair-share-* flags (None: off)."""
    from job_queue.fair_share_config import parse_fair_share

    weights = read_flag_file("--fair-share-weights", args.fair_share_weights)
    names = ("--fair-share-half-life", f"--fair-share-weights {args.fair_share_weights}")
    names += ("--fair-share-lookahead",)
    return parse_fair_share(args.fair_share_half_life, weights, args.fair_share_lookahead, names)


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
