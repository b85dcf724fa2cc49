"""`smq local-api`: the queue with AWS emulated, on this machine.

Its flags are checked by the checker the deployed function runs at cold start
(:mod:`tjq.settings_check`), so a setting refused there is refused here, naming the flag.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import threading

from tjq.cli.common import fail, read_flag_file, read_json, read_shares

# The function variable each flag sets (for the messages of the shared checker).
FLAGS = {
    "CAPACITY": "--capacity",
    "SHARES": "--shares",
    "DEFAULT_SHARE": "--default-share",
    "ALLOWED_ROLE_ARNS": "--allowed-role",
    "ADMIN_PRINCIPALS": "--admin",
    "MAX_PRIORITY": "--max-priority",
    "TRAINING_PLAN_ARNS": "--training-plan",
    "CHECKPOINT_S3_URI": "--checkpoint-s3-uri",
    "KEEP_ALIVE_SECONDS": "--keep-alive",
    "WARM_AFFINITY_SECONDS": "--warm-affinity",
    "FAIR_SHARE_HALF_LIFE_SECONDS": "--fair-share-half-life",
    "FAIR_SHARE_LOOKAHEAD_SECONDS": "--fair-share-lookahead",
    "FAIR_SHARE_WEIGHTS": "--fair-share-weights",
    "RETRY_ON_FAILURE": "--retry-on-failure",
    "MAX_PREEMPTIONS": "--max-preemptions",
    "HEAD_OF_LINE_LIMITS": "--head-of-line-limits",
    "PRICES": "--prices",
    "BUDGETS": "--budgets",
}
DEFAULT_CAPACITY = {"ml.p5.48xlarge": 2}


def add_parser(commands) -> None:
    """`smq local-api`'s flags."""
    from job_queue.models import MAX_PRIORITY
    from tjq.cli import arguments

    local = commands.add_parser("local-api", help="run the queue and emulated AWS on this machine")
    local.add_argument("--port", type=int, default=8080)
    local.add_argument(
        "--name",
        type=arguments.queue_name,
        default="training-job-queue",
        help="the queue's name, as TrainingQueue(name) finds it (default: training-job-queue)",
    )
    local.add_argument(
        "--capacity",
        type=arguments.capacity,
        action="append",
        metavar="TYPE=N",
        help="instances per type, or TYPE=unlimited for a type the queue does not cap "
        "(repeatable; default ml.p5.48xlarge=2)",
    )
    local.add_argument(
        "--allowed-role",
        action="append",
        metavar="ARN",
        help="role ARNs jobs may use (repeatable; default a local example role)",
    )
    local.add_argument(
        "--run-seconds",
        type=arguments.positive_seconds,
        default=60.0,
        help="how long a job runs unless its simulated-run-seconds tag says otherwise",
    )
    local.add_argument(
        "--stop-seconds", type=arguments.seconds, default=5.0, help="how long a stop takes"
    )
    local.add_argument(
        "--start-seconds",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="provisioning before a cold-started job runs (default 0)",
    )
    local.add_argument(
        "--warm-start-seconds",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="the same for a job started on a warm pool (default 0)",
    )
    local.add_argument(
        "--keep-alive",
        type=arguments.whole_seconds,
        default=0,
        metavar="S",
        help="warm-pool keep-alive of jobs that set none (the KeepAliveSeconds setting; 0: off)",
    )
    local.add_argument(
        "--warm-affinity",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="the WarmAffinitySeconds setting (0: strict order)",
    )
    local.add_argument(
        "--fair-share-half-life",
        default="0",
        metavar="S",
        help="fair share by recent use with this half-life (FairShareHalfLifeSeconds; 0: off)",
    )
    local.add_argument(
        "--fair-share-lookahead",
        default="600",
        metavar="S",
        help="fair share's entry penalty per instance (FairShareLookaheadSeconds; default 600)",
    )
    local.add_argument(
        "--fair-share-weights",
        metavar="FILE",
        help='JSON weights by submitter, such as {"project-x": 2} (FairShareWeights)',
    )
    local.add_argument(
        "--shares", metavar="FILE", help="quota shares file (their limits make the capacity)"
    )
    local.add_argument(
        "--prices",
        metavar="FILE",
        help='what an instance-hour costs in usage reports, such as {"ml.p5.48xlarge": 55.04} '
        "(the Prices setting; default: the README's list prices)",
    )
    local.add_argument(
        "--budgets",
        metavar="FILE",
        help='budgets by submitter, such as {"alice": {"instance_hours": 100, "window_days": '
        '30, "when_spent": "wait"}} (the Budgets setting; shares take theirs in --shares)',
    )
    local.add_argument("--default-share", metavar="S", help="the share of jobs that name none")
    local.add_argument(
        "--admin",
        type=arguments.arn_pattern,
        action="append",
        metavar="PATTERN",
        help="an IAM ARN pattern of the queue's admins (repeatable; the AdminPrincipals "
        "setting). Callers are arn:aws:iam::123456789012:user/<access key id>; without "
        "--admin, every local caller is an admin",
    )
    local.add_argument(
        "--max-priority",
        type=arguments.priority_ceiling,
        default=MAX_PRIORITY,
        metavar="N",
        help="the highest priority a non-admin may set (the MaxPriority setting)",
    )
    local.add_argument(
        "--training-plan",
        type=arguments.training_plan,
        action="append",
        metavar="NAME=TYPE:COUNT:START:END",
        help="a training plan the emulated account holds: COUNT reserved instances of TYPE "
        "from START to END seconds after start-up (repeatable; a NAME given again adds a "
        "reservation to that plan). Jobs whose ResourceConfig.TrainingPlanArn names it run "
        "only inside a reservation with room",
    )
    local.add_argument(
        "--checkpoint-s3-uri",
        type=arguments.checkpoint_uri,
        default=arguments.LOCAL_CHECKPOINTS,
        metavar="URI",
        help="jobs without a CheckpointConfig save under URI + their name, the same for every "
        "attempt (the CheckpointS3Uri setting; default "
        f"{arguments.LOCAL_CHECKPOINTS}; '' turns it off)",
    )
    local.add_argument(
        "--run-scripts",
        action="store_true",
        help="run each job's training script on this machine with this Python (the code the "
        "SDK uploaded), instead of emulating its run time: it ends when the script ends, a "
        "stop sends it SIGTERM, its checkpoints are kept in emulated S3",
    )
    for flag, setting, example in (
        (
            "--retry-on-failure",
            "RetryOnFailure",
            '[{"failure_reason_pattern": "X*", "attempts": 3}]',
        ),
        ("--max-preemptions", "MaxPreemptions", "2"),
        ("--head-of-line-limits", "HeadOfLineLimits", '[{"reason": "plan-window", ...}]'),
    ):
        local.add_argument(
            flag, default="", metavar="VALUE", help=f"the {setting} setting ({example})"
        )
    local.add_argument(
        "--env-file",
        metavar="PATH",
        help="also write the exports to PATH, for `source PATH` in the training script's shell",
    )
    local.set_defaults(run=local_api)


def local_api(args) -> int:
    import logging

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from job_queue.capacity_config import UNCAPPED
    from job_queue.config import ConfigError, Settings
    from job_queue.scheduler import Policy, total_capacity
    from tjq.local.cloud import ACCOUNT, EVERY_LOCAL_USER, REGION, ROLE_ARN
    from tjq.local.server import LocalApi
    from tjq.settings_check import reworded

    shares = read_shares(args.shares, args.max_priority) if args.shares else ()
    plan_options = tuple(args.training_plan or ())
    plan_arns = {
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-plan/{o.partition('=')[0]}"
        for o in plan_options
    }
    if shares and (problem := _unused_plans(shares, plan_arns)):
        return fail(problem)
    given = dict(args.capacity or ([] if plan_options or shares else DEFAULT_CAPACITY.items()))
    given = given if shares else with_plans(given, plan_options)
    roles = tuple(args.allowed_role or (ROLE_ARN,))
    admins = tuple(args.admin or (EVERY_LOCAL_USER,))
    affinity = args.warm_affinity
    weights = read_flag_file("--fair-share-weights", args.fair_share_weights)
    prices = read_flag_file("--prices", args.prices)
    budgets = read_flag_file("--budgets", args.budgets)
    environment = {
        "TABLE_NAME": args.name,
        "QUEUE_NAME": args.name,
        "CAPACITY": json.dumps(given) if given else "",
        "SHARES": json.dumps(read_json(args.shares)) if args.shares else "",
        "DEFAULT_SHARE": args.default_share or "",
        "ALLOWED_ROLE_ARNS": ",".join(roles),
        "ADMIN_PRINCIPALS": ",".join(admins),
        "MAX_PRIORITY": str(args.max_priority),
        "TRAINING_PLAN_ARNS": ",".join(sorted(plan_arns)),
        "CHECKPOINT_S3_URI": args.checkpoint_s3_uri,
        "KEEP_ALIVE_SECONDS": str(args.keep_alive),
        # Unbounded affinity (inf) is the simulator's; locally any whole number is checked.
        "WARM_AFFINITY_SECONDS": str(int(affinity)) if math.isfinite(affinity) else "0",
        "FAIR_SHARE_HALF_LIFE_SECONDS": args.fair_share_half_life,
        "FAIR_SHARE_LOOKAHEAD_SECONDS": args.fair_share_lookahead,
        "FAIR_SHARE_WEIGHTS": weights,
        "RETRY_ON_FAILURE": args.retry_on_failure,
        "MAX_PREEMPTIONS": args.max_preemptions,
        "HEAD_OF_LINE_LIMITS": args.head_of_line_limits,
        "PRICES": prices,
        "BUDGETS": budgets,
    }
    try:
        settings = Settings.from_environment(environment)
    except ConfigError as exc:
        return fail(reworded(exc, FLAGS))
    uncapped = {t: n for t, n in given.items() if n == UNCAPPED}
    capacity = {**total_capacity(shares), **uncapped} if shares else given
    local = LocalApi(
        queue_name=args.name,
        shares=shares,
        default_share=args.default_share,
        port=args.port,
        capacity=capacity,
        run_seconds=args.run_seconds,
        stop_seconds=args.stop_seconds,
        keep_alive_seconds=int(args.keep_alive),
        policy=Policy(warm_affinity_s=affinity, fair_share=settings.policy.fair_share),
        limits=settings.limits,
        prices=settings.prices,
        budgets=settings.budgets,
        cold_start_seconds=args.start_seconds,
        warm_start_seconds=args.warm_start_seconds,
        max_priority=args.max_priority,
        training_plans=plan_options,
        checkpoint_s3_uri=args.checkpoint_s3_uri,
        run_scripts=args.run_scripts,
        allowed_role_arns=roles,
        admins=admins,
    )
    try:
        local.start()
    except OSError as exc:
        return fail(f"cannot listen on port {args.port} (or the three after it): {exc.strerror}")
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in local.environment().items())
    if args.env_file:
        with open(args.env_file, "w") as file:
            file.write(exports)
    print(f"queue {args.name}: local API is up at {local.api_url}")
    if args.env_file:
        print(f"In the shell that runs your training script: source {args.env_file}\n")
    else:
        print(f"In the shell that runs your training script:\n\n{exports}")
    print(_in_force(args, local, capacity, roles, admins), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("\nstopping", flush=True)
    finally:
        local.stop()
    return 0


def _in_force(args, local, capacity: dict, roles, admins) -> str:
    """What the local queue runs with, one setting a line."""
    from tjq.local.cloud import EVERY_LOCAL_USER

    pool = ", ".join(_capacity_text(t, n) for t, n in capacity.items())
    runs = (
        "jobs run their scripts here"
        if args.run_scripts
        else f"jobs run {args.run_seconds:g}s (or their simulated-run-seconds tag)"
    )
    stop = (
        "a stop lasts until the script exits (SIGKILL after 120s)"
        if args.run_scripts
        else f"a stop takes {args.stop_seconds:g}s"
    )
    lines = [f"capacity: {pool}; {runs}, {stop}"]
    for share in local.cloud.settings.shares:
        limits = ", ".join(f"{n} x {t}" for t, n in share.capacity.items() if n)
        lines.append(f"share {share.name}: {limits or 'no own instances'}, {share.strategy.value}")
    lines += [f"training plan {p.name}: {p.arn}" for p in local.cloud.sagemaker.plans.values()]
    lines.append(f"allowed roles (--allowed-role): {', '.join(roles)}")
    everyone = admins == (EVERY_LOCAL_USER,)
    lines.append("admins (--admin): " + ("every local caller" if everyone else ", ".join(admins)))
    saved = args.checkpoint_s3_uri or "off"
    fair = local.cloud.settings.policy.fair_share
    fair_text = "off" if fair is None else f"half-life {fair.half_life_s:g}s"
    lines.append(
        f"default keep-alive {args.keep_alive:g}s; warm affinity {args.warm_affinity:g}s; "
        f"checkpoints {saved}; fair share {fair_text}. Ctrl-C stops."
    )
    return "\n".join(lines)


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


def unknown_plans(shares, known: set[str], option: str) -> str | None:
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


def _unused_plans(shares, given: set[str]) -> str | None:
    """With shares, every plan given is named by a share, and every plan named is given."""
    if problem := unknown_plans(shares, given, "--training-plan"):
        return problem
    named = {arn for share in shares for _, arn in share.plans}
    unused = sorted(given - named)
    if unused:
        return (
            f"--training-plan {unused[0].rsplit('/', 1)[-1]}: no share names it, so it would "
            "never be used; with --shares, name it in a share's capacity, "
            f'{{"TYPE": [{{"training_plan": "{unused[0]}"}}]}}'
        )
    return None


def _capacity_text(itype: str, entry) -> str:
    from job_queue.capacity_config import UNCAPPED

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
