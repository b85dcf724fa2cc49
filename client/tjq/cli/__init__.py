"""`smq`: watch and steer the training-job queue from a shell.

    smq status [--share S] [--json] [--watch [SECONDS]]  the queue as a table
    smq events [--follow] [--job NAME] [--since MINUTES]  the queue's events (state changes)
    smq logs NAME [--follow]         a job's training logs, across its attempts
    smq shares [--json]              quota shares: limit, in use, borrowed, lent, waiting
    smq shares apply SHARES.json     replace the quota shares (no deployment needed)
    smq shares check SHARES.json [--max-priority N]  validate a shares file (before deploying)
    smq usage [--since 30d] [--by share] [--csv|--json] [--plot usage.png]
                                     who held the instances, in which phase, what it cost;
                                     fair share's recent use, and who is next
    smq usage apply WEIGHTS.json     replace the fair-share weights (admins; no deployment)
    smq budgets [--json]             where each share's and submitter's budget stands
    smq budgets apply BUDGETS.json   replace the submitters' budgets (admins; no deployment)
    smq queue hold|drain|resume [--share S]  stop starting jobs / also stop the running ones
                                     (requeued) / start again (admins)
    smq show NAME [--json]           one job and its attempts
    smq cancel NAME                  stop a job / take it out of the queue
    smq priority NAME N              change a job's priority
    smq ui [--port 8765] [--open] [--allow-actions]  the queue in the browser (127.0.0.1)
    smq submit REQUEST.json [--priority N] [--share S] [--checkpoint on-stop|SECONDS]
               [--after JOB[,JOB] [--dependency after|afterok|afternotok]]
    smq local-api [--port N] [--capacity TYPE=N ...] [--allowed-role ARN ...] [--keep-alive S]
                  [--admin PATTERN ...] [--max-priority N] [--training-plan NAME=TYPE:N:S:E ...]
                  [--checkpoint-s3-uri URI] [--run-scripts] [--env-file PATH]
                  [--fair-share-half-life S] [--fair-share-lookahead S] [--fair-share-weights F]
                  [--retry-on-failure JSON] [--max-preemptions N] [--head-of-line-limits JSON]
                  [--prices FILE] [--budgets FILE]
    smq config check [--samconfig FILE] [--capacity JSON] [--shares FILE] [--capped TYPES]
                     [--training-plan-arns ARNS]  check a deployment's parameters together
    smq simulate WORKLOAD.csv (--capacity TYPE=N ... | --shares FILE) [--plan TYPE=N@S-E ...]
                 [--retry-on-failure JSON] [--max-preemptions N] [--json] [--plot F.png]
                 [--prices FILE] [--usage-by submitter|share|type|job] [--budgets FILE]

The API is SMQ_API_URL (or --url); through a VPC endpoint's DNS name, also SMQ_API_ID
(or --api-id). Requests are signed with your AWS credentials.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from job_queue.models import MAX_PRIORITY
from job_queue.scheduler.dependencies import DEFAULT_KIND, Kind
from tjq.cli import arguments, config_command, local_command, ui_command
from tjq.cli import machine_commands as machine
from tjq.cli import queue_commands as queue
from tjq.cli.common import fail
from tjq.errors import QueueApiError, QueueClientError


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit code is 0 on success, 1 on an error, 2 on bad usage."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except QueueApiError as exc:
        return fail(f"{exc.message} (HTTP {exc.status})")
    except QueueClientError as exc:
        return fail(str(exc))
    except BrokenPipeError:
        # The reader went away (`smq status | head -1`): nothing more to say, to anyone.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        return fail(f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    api = argparse.ArgumentParser(add_help=False)
    api.add_argument("--url", help="the queue API (default: $SMQ_API_URL)")
    api.add_argument("--api-id", help="API id, when --url is a VPC endpoint (default: $SMQ_API_ID)")
    api.add_argument("--region", help="region to sign for (default: from the URL or AWS config)")

    parser = argparse.ArgumentParser(
        prog="smq", description="Watch and steer the training-job queue."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    status = commands.add_parser("status", parents=[api], help="the queue as a table")
    status.add_argument("--share", metavar="S", help="only the jobs of quota share S")
    status.add_argument("--json", action="store_true", help="print the API's JSON")
    status.add_argument(
        "--all", action="store_true", help="every waiting job (default: the first 100)"
    )
    status.add_argument(
        "--watch",
        type=arguments.positive_seconds,
        nargs="?",
        const=5.0,
        metavar="SECONDS",
        help="redraw the table every SECONDS (default 5) until Ctrl-C",
    )
    status.set_defaults(run=queue.status)

    logs = commands.add_parser("logs", parents=[api], help="a job's training logs")
    logs.add_argument("name")
    logs.add_argument(
        "--follow", "-f", action="store_true", help="wait for new lines until the job ends"
    )
    logs.set_defaults(run=queue.logs)

    events = commands.add_parser("events", parents=[api], help="the queue's events")
    events.add_argument("--follow", "-f", action="store_true", help="then wait for new ones")
    events.add_argument("--job", metavar="NAME", help="only this job's events")
    events.add_argument(
        "--since",
        type=arguments.seconds,
        default=60.0,
        metavar="MINUTES",
        help="from this many minutes ago (default 60; 0: all that the log keeps)",
    )
    events.add_argument(
        "--queue",
        default=os.environ.get("SMQ_QUEUE_NAME") or "training-job-queue",
        help="the queue's name, its stack's name (default: $SMQ_QUEUE_NAME or training-job-queue)",
    )
    events.add_argument("--json", action="store_true", help="one JSON detail per line")
    events.set_defaults(run=queue.events)

    shares = commands.add_parser("shares", parents=[api], help="quota shares and their use")
    shares.add_argument(
        "action", nargs="?", choices=["apply", "check"], help="apply, or only check, a file"
    )
    shares.add_argument("file", nargs="?", help="the shares file (a JSON list of shares)")
    shares.add_argument("--json", action="store_true", help="print the API's JSON")
    shares.add_argument(
        "--max-priority",
        type=arguments.priority_ceiling,
        default=MAX_PRIORITY,
        metavar="N",
        help="check: the queue's MaxPriority, which no share's max_priority may exceed",
    )
    shares.set_defaults(run=queue.shares)

    usage = commands.add_parser(
        "usage",
        parents=[api],
        help="who used the instances, what it cost; fair share's standing",
    )
    usage.add_argument(
        "action", nargs="?", choices=["apply"], help="apply: replace the weights (admins)"
    )
    usage.add_argument("file", nargs="?", help='the weights file, such as {"project-x": 2}')
    usage.add_argument("--since", help="from: an ISO 8601 time or 30d, 12h before now (30d)")
    usage.add_argument("--until", help="to: an ISO 8601 time or 1d before now (now)")
    usage.add_argument(
        "--by",
        choices=["submitter", "share", "type", "job"],
        help="one row per submitter, share, instance type or job (share, with shares)",
    )
    output = usage.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the API's JSON")
    output.add_argument("--csv", action="store_true", help="print the report's rows as CSV")
    usage.add_argument(
        "--plot", metavar="FILE.png", help="also draw billable instance-hours per day"
    )
    usage.set_defaults(run=queue.usage)

    budgets = commands.add_parser(
        "budgets", parents=[api], help="where each budget stands; apply: replace them (admins)"
    )
    budgets.add_argument(
        "action", nargs="?", choices=["apply"], help="apply: replace the submitters' budgets"
    )
    budgets.add_argument(
        "file", nargs="?", help='the budgets file, such as {"alice": {"instance_hours": 100}}'
    )
    budgets.add_argument("--json", action="store_true", help="print the API's JSON")
    budgets.set_defaults(run=queue.budgets)

    held = commands.add_parser(
        "queue", parents=[api], help="hold, drain or resume the queue or a share (admins)"
    )
    held.add_argument(
        "action",
        choices=["hold", "drain", "resume"],
        help="hold: nothing new starts; drain: and running jobs are stopped and requeued "
        "(checkpointing jobs lose nothing); resume: jobs start again",
    )
    held.add_argument("--share", help="only this quota share's jobs (default: the whole queue)")
    held.add_argument("--json", action="store_true", help="print the API's JSON")
    held.set_defaults(run=queue.hold)

    show = commands.add_parser("show", parents=[api], help="one job and its attempts")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=queue.show)

    cancel = commands.add_parser("cancel", parents=[api], help="cancel a job")
    cancel.add_argument("name")
    cancel.set_defaults(run=queue.cancel)

    priority = commands.add_parser("priority", parents=[api], help="change a job's priority")
    priority.add_argument("name")
    priority.add_argument("priority", type=int)
    priority.set_defaults(run=queue.priority)

    submit = commands.add_parser("submit", parents=[api], help="queue a CreateTrainingJob request")
    submit.add_argument("request", help="a JSON file with the CreateTrainingJob request")
    submit.add_argument("--priority", type=int, help="set the job's priority tag")
    submit.add_argument("--share", help="set the job's share tag (its quota share)")
    submit.add_argument(
        "--checkpoint",
        metavar="on-stop|SECONDS",
        help="set the job's checkpoint tag: how it saves its progress (on SIGTERM, or every "
        "SECONDS); the queue preempts the job that would lose least first",
    )
    submit.add_argument(
        "--after",
        metavar="JOB[,JOB]",
        help="set the job's depends-on tag: the queue jobs it waits for (up to 20)",
    )
    submit.add_argument(
        "--dependency",
        choices=[kind.value for kind in Kind],
        default=DEFAULT_KIND.value,
        help="how it waits for them: when they end however (after), only if they all "
        "complete (afterok, the default), only if none completes (afternotok)",
    )
    submit.set_defaults(run=queue.submit)

    local_command.add_parser(commands)
    ui_command.add_parser(commands, api)
    config_command.add_parser(commands)

    simulate = commands.add_parser(
        "simulate", help="replay a workload CSV through the queue's scheduler (what-if)"
    )
    simulate.add_argument(
        "workload",
        help="CSV: name,submit_s,duration_s,priority,instance_type,instance_count"
        "[,share,max_runtime_s,checkpoint_s,keep_alive_s,warm_key,submitter]",
    )
    simulate.add_argument(
        "--capacity",
        type=arguments.capacity,
        action="append",
        metavar="TYPE=N",
        help="on-demand instances per type, or TYPE=unlimited (repeatable; this or --plan "
        "is required)",
    )
    simulate.add_argument(
        "--plan",
        type=arguments.sim_plan,
        action="append",
        metavar="TYPE=COUNT@START_S-END_S",
        help="a training plan's reservation: COUNT reserved instances of TYPE from START_S to "
        "END_S on the workload's clock (repeatable; a type's reservations form one plan)",
    )
    simulate.add_argument(
        "--stop-latency",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="seconds a stopped job holds its instances (default 0)",
    )
    simulate.add_argument(
        "--start-latency",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="seconds of provisioning before a job makes progress (default 0)",
    )
    simulate.add_argument(
        "--warm-start-latency",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="seconds before a job started on a warm pool makes progress (default 0)",
    )
    simulate.add_argument(
        "--keep-alive",
        type=arguments.whole_seconds,
        default=0,
        metavar="S",
        help="warm-pool keep-alive of rows that set none (the KeepAliveSeconds setting)",
    )
    simulate.add_argument(
        "--warm-affinity",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="the WarmAffinitySeconds setting: 0 strict order, inf unbounded (default 0)",
    )
    simulate.add_argument(
        "--no-preemption",
        action="store_true",
        help="plain capped priority queue (the Preemption=false setting)",
    )
    simulate.add_argument(
        "--no-backfill",
        action="store_true",
        help="strict order within an instance type (the Backfill=false setting)",
    )
    simulate.add_argument(
        "--min-run",
        type=arguments.seconds,
        default=0.0,
        metavar="S",
        help="seconds a job runs before it may be preempted (the MinRunSeconds setting)",
    )
    simulate.add_argument(
        "--shares",
        metavar="FILE",
        help="quota shares file (instead of --capacity); jobs name theirs in the share column",
    )
    simulate.add_argument(
        "--fair-share-half-life",
        default="0",
        metavar="S",
        help="fair share by recent use, with this half-life (the FairShareHalfLifeSeconds "
        "setting; default 0: first come, first served within a priority); jobs name their "
        "submitter in the submitter column",
    )
    simulate.add_argument(
        "--fair-share-lookahead",
        default="600",
        metavar="S",
        help="the entry penalty: a job that starts is charged its instances x S at once "
        "(FairShareLookaheadSeconds; default 600)",
    )
    simulate.add_argument(
        "--fair-share-weights",
        metavar="FILE",
        help='JSON weights by submitter, such as {"project-x": 2} (FairShareWeights)',
    )
    simulate.add_argument(
        "--retry-on-failure",
        metavar="JSON",
        help="failed attempts tried again, as the RetryOnFailure setting "
        "(default: SageMaker's internal errors and hardware failures, 3 attempts each); "
        "jobs name their failure in the failure_reason column",
    )
    simulate.add_argument(
        "--max-preemptions",
        metavar="N",
        help="how often a job may be preempted (the MaxPreemptions setting; default: "
        "unlimited); a job's max_preemptions column overrides it",
    )
    simulate.add_argument(
        "--prices",
        metavar="FILE",
        help='what an instance-hour costs, as the Prices setting: {"ml.p5.48xlarge": 55.04, '
        '"training_plans": {"sim-p5-48xlarge": 26500}} (default: the README\'s list prices)',
    )
    simulate.add_argument(
        "--budgets",
        metavar="FILE",
        help="budgets by submitter, as the Budgets setting (shares take theirs in --shares): "
        "jobs of a spent one wait, or run at the lowest priority",
    )
    simulate.add_argument(
        "--usage-by",
        choices=["submitter", "share", "type", "job"],
        help="the usage and cost table's rows (default: share with --shares, else submitter)",
    )
    simulate.add_argument("--json", action="store_true", help="one JSON object on stdout")
    simulate.add_argument(
        "--plot",
        type=arguments.new_file,
        metavar="FILE.png",
        help="a chart of the replay (needs matplotlib): see --plot-kind",
    )
    simulate.add_argument(
        "--plot-kind",
        choices=["auto", "gantt", "load"],
        default="auto",
        help="gantt: one bar per attempt and queue depth; load: instances in use by priority "
        "against capacity, queue depth and waits (auto: gantt up to 300 jobs)",
    )
    simulate.set_defaults(run=machine.simulate)
    return parser
