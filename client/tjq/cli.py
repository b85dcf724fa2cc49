"""`smq`: watch and steer the training-job queue from a shell.

    smq status [--share S] [--json]  the queue as a table
    smq shares [--json]              quota shares: limit, in use, borrowed, lent, waiting
    smq shares apply SHARES.json     replace the quota shares (no deployment needed)
    smq shares check SHARES.json     validate a shares file (before deploying it)
    smq show NAME [--json]           one job and its attempts
    smq cancel NAME                  stop a job / take it out of the queue
    smq priority NAME N              change a job's priority
    smq submit REQUEST.json [--priority N] [--share S]
    smq local-api [--port N] [--capacity TYPE=N ...] [--allowed-role ARN ...]
    smq simulate WORKLOAD.csv (--capacity TYPE=N ... | --shares FILE) [--json] [--plot F.png]

The API is SMQ_API_URL (or --url); through a VPC endpoint's DNS name, also SMQ_API_ID
(or --api-id). Requests are signed with your AWS credentials.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tjq.errors import QueueApiError, QueueClientError


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit code is 0 on success, 1 on an error, 2 on bad usage."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except QueueApiError as exc:
        return _fail(f"{exc.message} (HTTP {exc.status})")
    except QueueClientError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130


def _status(args) -> int:
    answer = _client(args).jobs()
    if args.share:
        answer["jobs"] = [job for job in answer["jobs"] if job.get("share") == args.share]
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    from tjq.table import queue_table

    print(queue_table(answer["jobs"]))
    capacity = ", ".join(f"{n} x {t}" for t, n in answer.get("capacity", {}).items())
    print(f"\ncapacity: {capacity}")
    return 0


def _shares(args) -> int:
    if args.action and not args.file:
        return _fail(f"smq shares {args.action} needs a shares file (a JSON list of shares)")
    if args.action == "check":
        from job_queue.scheduler import total_capacity

        shares = _read_shares(args.file)
        capacity = ", ".join(f"{n} x {t}" for t, n in total_capacity(shares).items())
        print(f"{args.file}: {len(shares)} shares, capacity {capacity}")
        return 0
    client = _client(args)
    apply = args.action == "apply"
    answer = client.set_shares(_read_json(args.file)) if apply else client.shares()
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    from tjq.table import shares_table

    print(shares_table(answer["shares"]))
    waiting = ", ".join(f"{s['name']} {s['waiting']}" for s in answer["shares"])
    if waiting:
        print(f"\nwaiting: {waiting}")
    return 0


def _show(args) -> int:
    job = _client(args).job(args.name)
    if args.json:
        print(json.dumps(job, indent=2))
        return 0
    from tabulate import tabulate

    fields = [
        (key, job.get(key))
        for key in (
            "name",
            "state",
            "priority",
            "share",
            "position",
            "instance_count",
            "instance_type",
            "submitted_at",
            "first_started_at",
            "ended_at",
            "sagemaker_job_name",
            "preemptions",
            "failure_reason",
            "last_start_error",
        )
        if job.get(key) not in (None, "")
    ]
    print(tabulate(fields, tablefmt="plain"))
    if job["attempts"]:
        rows = [
            (
                a["attempt"],
                a["sagemaker_job_name"],
                a["started_at"],
                a["ended_at"] or "",
                a["outcome"] or "running",
                a["preempted_by"] or a["failure_reason"] or "",
            )
            for a in job["attempts"]
        ]
        headers = ("Attempt", "SageMaker job", "Started", "Ended", "Outcome", "Detail")
        print("\n" + tabulate(rows, headers=headers, disable_numparse=True))
    return 0


def _cancel(args) -> int:
    job = _client(args).cancel(args.name)
    print(f"{job['name']}: {job['state']}")
    return 0


def _priority(args) -> int:
    job = _client(args).set_priority(args.name, args.priority)
    print(f"{job['name']}: priority {job['priority']} ({job['state']})")
    return 0


def _submit(args) -> int:
    request = _read_request(args.request)
    for key, value in (("priority", args.priority), ("share", args.share)):
        if value is not None:
            tags = [t for t in request.get("Tags", []) if t.get("Key") != key]
            request["Tags"] = [*tags, {"Key": key, "Value": str(value)}]
    answer = _client(args).submit(request)
    job = answer["job"]
    where = f"position {answer['position']}" if answer.get("position") else job["state"]
    print(f"{job['name']}: {where} (priority {job['priority']})")
    return 0


def _local_api(args) -> int:
    import logging
    import os
    import threading

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from tjq.local.server import LocalApi

    shares = ()
    if args.shares:
        shares = _read_shares(args.shares)
        if args.default_share and args.default_share not in {s.name for s in shares}:
            return _fail(f"--default-share {args.default_share} is not a share in {args.shares}")
    capacity = dict(args.capacity or [("ml.p5.48xlarge", 2)])
    if shares:
        from job_queue.scheduler import total_capacity

        capacity = total_capacity(shares)
    roles = tuple(args.allowed_role) if args.allowed_role else ()
    local = LocalApi(
        shares=shares,
        default_share=args.default_share,
        port=args.port,
        capacity=capacity,
        run_seconds=args.run_seconds,
        stop_seconds=args.stop_seconds,
        **({"allowed_role_arns": roles} if roles else {}),
    )
    try:
        local.start()
    except OSError as exc:
        return _fail(f"cannot listen on port {args.port}: {exc.strerror}")
    print("training-job-queue local API is up. In the shell that runs your training script:\n")
    for name, value in local.environment().items():
        print(f"export {name}={value}")
    pool = ", ".join(f"{n} x {t}" for t, n in capacity.items())
    print(
        f"\ncapacity: {pool}; jobs run {args.run_seconds:g}s (or their "
        "simulated-run-seconds tag), a stop takes "
        f"{args.stop_seconds:g}s. Ctrl-C stops.",
        flush=True,
    )
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        print("\nstopping", flush=True)
    finally:
        local.stop()
    return 0


def _simulate(args) -> int:
    from job_queue.scheduler import Policy
    from tjq.simulate.engine import SimSettings, simulate
    from tjq.simulate.metrics import report
    from tjq.simulate.workload import WorkloadError, read_workload

    capacity = dict(args.capacity or [])
    shares = ()
    if args.shares:
        if capacity:
            return _fail("give --shares or --capacity, not both: the shares make the capacity")
        from job_queue.scheduler import total_capacity

        shares = _read_shares(args.shares)
        capacity = total_capacity(shares)
    if not capacity:
        return _fail("--capacity TYPE=N is required (for example --capacity ml.p5.48xlarge=2)")
    try:
        jobs = read_workload(args.workload, capacity, shares)
    except WorkloadError as exc:
        return _fail(f"{args.workload}: {exc}")
    settings = SimSettings(
        shares=shares,
        capacity=capacity,
        stop_latency=args.stop_latency,
        start_latency=args.start_latency,
        policy=Policy(
            preemption=not args.no_preemption,
            backfill=not args.no_backfill,
            min_run_s=args.min_run,
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
            return _fail("--plot needs matplotlib: pip install 'training-job-queue[plot]'")
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


def _client(args):
    from tjq.api import QueueClient

    return QueueClient.from_environment(args.url, api_id=args.api_id, region=args.region)


def _read_json(path: str):
    try:
        with open(path) as file:
            return json.load(file)
    except OSError as exc:
        raise QueueClientError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise QueueClientError(f"{path} is not JSON: {exc}") from None


def _read_shares(path: str):
    """The shares of a shares file, or QueueClientError naming the file and the problem."""
    from job_queue.share_config import SharesError, parse_shares

    try:
        return parse_shares(_read_json(path))
    except SharesError as exc:
        raise QueueClientError(f"{path}: {exc}") from None


def _read_request(path: str) -> dict:
    request = _read_json(path)
    if not isinstance(request, dict) or "TrainingJobName" not in request:
        raise QueueClientError(
            f"{path} is not a CreateTrainingJob request (a JSON object with TrainingJobName, "
            "AlgorithmSpecification, ResourceConfig ...)"
        )
    return request


def _capacity(text: str) -> tuple[str, int]:
    itype, _, count = text.partition("=")
    if not itype.startswith("ml.") or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected TYPE=N such as ml.p5.48xlarge=2, got {text!r}")
    return itype, int(count)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text}")
    return value


def _fail(message: str) -> int:
    print(f"smq: error: {message}", file=sys.stderr)
    return 1


def _parser() -> argparse.ArgumentParser:
    api = argparse.ArgumentParser(add_help=False)
    api.add_argument("--url", help="the queue API (default: $SMQ_API_URL)")
    api.add_argument("--api-id", help="API id, when --url is a VPC endpoint (default: $SMQ_API_ID)")
    api.add_argument("--region", help="region to sign for (default: from the URL or AWS config)")

    parser = argparse.ArgumentParser(
        prog="smq", description="Watch and steer the training-job queue."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    status = commands.add_parser("status", parents=[api], help="the queue as a table")
    status.add_argument("--share", metavar="S", help="only the jobs of quota share S")
    status.add_argument("--json", action="store_true", help="print the API's JSON")
    status.set_defaults(run=_status)

    shares = commands.add_parser("shares", parents=[api], help="quota shares and their use")
    shares.add_argument(
        "action", nargs="?", choices=["apply", "check"], help="apply, or only check, a file"
    )
    shares.add_argument("file", nargs="?", help="the shares file (a JSON list of shares)")
    shares.add_argument("--json", action="store_true", help="print the API's JSON")
    shares.set_defaults(run=_shares)

    show = commands.add_parser("show", parents=[api], help="one job and its attempts")
    show.add_argument("name")
    show.add_argument("--json", action="store_true")
    show.set_defaults(run=_show)

    cancel = commands.add_parser("cancel", parents=[api], help="cancel a job")
    cancel.add_argument("name")
    cancel.set_defaults(run=_cancel)

    priority = commands.add_parser("priority", parents=[api], help="change a job's priority")
    priority.add_argument("name")
    priority.add_argument("priority", type=int)
    priority.set_defaults(run=_priority)

    submit = commands.add_parser("submit", parents=[api], help="queue a CreateTrainingJob request")
    submit.add_argument("request", help="a JSON file with the CreateTrainingJob request")
    submit.add_argument("--priority", type=int, help="set the job's priority tag")
    submit.add_argument("--share", help="set the job's share tag (its quota share)")
    submit.set_defaults(run=_submit)

    local = commands.add_parser("local-api", help="run the queue and emulated AWS on this machine")
    local.add_argument("--port", type=int, default=8080)
    local.add_argument(
        "--capacity",
        type=_capacity,
        action="append",
        metavar="TYPE=N",
        help="instances per type (repeatable; default ml.p5.48xlarge=2)",
    )
    local.add_argument(
        "--allowed-role",
        action="append",
        metavar="ARN",
        help="role ARNs jobs may use (repeatable; default a local example role)",
    )
    local.add_argument(
        "--run-seconds",
        type=float,
        default=60.0,
        help="how long a job runs unless its simulated-run-seconds tag says otherwise",
    )
    local.add_argument("--stop-seconds", type=float, default=5.0, help="how long a stop takes")
    local.add_argument(
        "--shares", metavar="FILE", help="quota shares file (their limits make the capacity)"
    )
    local.add_argument("--default-share", metavar="S", help="the share of jobs that name none")
    local.set_defaults(run=_local_api)

    simulate = commands.add_parser(
        "simulate", help="replay a workload CSV through the queue's scheduler (what-if)"
    )
    simulate.add_argument(
        "workload",
        help="CSV: name,submit_s,duration_s,priority,"
        "instance_type,instance_count[,share,max_runtime_s,checkpoint_s]",
    )
    simulate.add_argument(
        "--capacity",
        type=_capacity,
        action="append",
        metavar="TYPE=N",
        help="instances per type (repeatable; required)",
    )
    simulate.add_argument(
        "--stop-latency",
        type=_seconds,
        default=0.0,
        metavar="S",
        help="seconds a stopped job holds its instances (default 0)",
    )
    simulate.add_argument(
        "--start-latency",
        type=_seconds,
        default=0.0,
        metavar="S",
        help="seconds of provisioning before a job makes progress (default 0)",
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
        type=_seconds,
        default=0.0,
        metavar="S",
        help="seconds a job runs before it may be preempted (the MinRunSeconds setting)",
    )
    simulate.add_argument(
        "--shares",
        metavar="FILE",
        help="quota shares file (instead of --capacity); jobs name theirs in the share column",
    )
    simulate.add_argument("--json", action="store_true", help="one JSON object on stdout")
    simulate.add_argument("--plot", metavar="FILE.png", help="Gantt chart and queue depth")
    simulate.set_defaults(run=_simulate)
    return parser


if __name__ == "__main__":
    sys.exit(main())
