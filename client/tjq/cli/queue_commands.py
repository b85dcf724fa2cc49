"""`smq`'s commands that call the queue's API: status, shares, show, cancel, priority, submit;
and events, which reads the queue's events log."""

from __future__ import annotations

import json
import sys
import time

from job_queue import tags
from job_queue.scheduler.dependencies import Dependency
from tjq.api import check_share
from tjq.cli.common import client, fail, read_json, read_request, read_shares
from tjq.errors import JobNotFound, QueueClientError


def status(args) -> int:
    api = client(args)
    if args.json:
        print(json.dumps(_listing(api, args.share, args.all), indent=2))
        return 0
    if not args.watch:
        print(_status_text(_listing(api, args.share, args.all), args.share))
        return 0
    while True:  # as `watch squeue`: until Ctrl-C
        text = _status_text(_listing(api, args.share, args.all), args.share)
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{_CLEAR}smq status, every {args.watch:g} s (Ctrl-C to stop)  {when}\n\n{text}")
        sys.stdout.flush()
        time.sleep(args.watch)


_CLEAR = "\033[H\033[2J"  # cursor home, clear the screen


def _listing(api, share: str | None, everything: bool = False) -> dict:
    """GET /jobs's first page (``everything``: with every page's jobs), of one share."""
    answer = api.jobs()
    if share:
        check_share(answer, share)
    if everything and answer.get("next_token"):
        answer.update(jobs=api.all_jobs(), next_token=None)
    if share:
        answer["jobs"] = [job for job in answer["jobs"] if job.get("share") == share]
    return answer


def _status_text(answer: dict, share: str | None) -> str:
    from tjq.table import hold_lines, outside_lines, plan_lines, pool_lines, queue_table

    parts = [queue_table(answer["jobs"])]
    holds = [h for h in answer.get("holds", []) if not share or h["share"] in (None, share)]
    if holds:
        parts.insert(0, "\n".join(hold_lines(holds)))
    if answer.get("next_token"):
        shown = sum(1 for job in answer["jobs"] if job.get("position"))
        about = "about " if answer.get("waiting_counted_at") else ""  # the sweep's count
        more = "more" if share else f"{about}{answer['waiting'] - shown} more"
        parts[0] += f"\n... and {more} waiting (smq status --all lists them)"
    pools = [p for p in answer.get("pools", []) if not share or p.get("share") == share]
    if pools:
        parts.append("\n".join(pool_lines(pools)))
    if answer.get("outside"):
        parts.append("\n".join(outside_lines(answer["outside"])))
    if answer.get("plans"):
        parts.append("\n".join(plan_lines(answer["plans"])))
    if answer.get("fair_share_next"):
        parts.append(answer["fair_share_next"]["why"])
    capacity = ", ".join(f"{n} x {t}" for t, n in answer.get("capacity", {}).items())
    uncapped = "".join(f", {t} uncapped" for t in answer.get("uncapped", []))
    label = "on-demand capacity" if answer.get("plans") else "capacity"
    parts.append(f"{label}: {capacity}{uncapped}")
    return "\n\n".join(parts)


def hold(args) -> int:
    """Hold, drain or resume the queue or one share (admins), and say what holds now."""
    from tjq.table import hold_lines

    answer = client(args).change_hold(args.action, args.share)
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    print("\n".join(hold_lines(answer["holds"])) or "nothing is held: jobs start as usual")
    return 0


def logs(args) -> int:
    """A job's training logs, attempt after attempt; ``--follow``: until it ends."""
    import boto3

    from tjq.job_logs import follow
    from tjq.progress import WAITING, describe_state, progress

    api = client(args)
    job = api.job(args.name)  # an unknown job: the API's 404, exit 1
    if not job["attempts"] and not args.follow:
        what = "waiting" if job["state"] in WAITING else job["state"]
        print(f"{args.name}: {what}, no logs yet ({describe_state(job)})", file=sys.stderr)
        return 0
    last: dict = {}  # the view last reported

    def report(current: dict) -> None:
        if args.follow and (note := progress(last or None, current)):
            print(f"[queue] {args.name}: {note}", flush=True)
        last.clear()
        last.update(current)

    logs_client = boto3.client("logs", region_name=api.region)
    out = lambda line: print(line, flush=True)  # noqa: E731
    look = lambda: api.job(args.name)  # noqa: E731
    follow(args.name, look, logs_client, out, args.follow, 2.0, report=report)
    return 0


def events(args) -> int:
    """The queue's events, oldest first (the last ``--since`` minutes); ``--follow``: then
    the new ones as they come, until Ctrl-C."""
    import boto3
    from botocore.exceptions import ClientError

    from job_queue.queue_events import log_group
    from tjq.queue_log import event_line, read_events

    logs = boto3.client("logs", region_name=client(args).region)
    since_ms = 0 if not args.since else int((time.time() - args.since * 60) * 1000)
    found = read_events(logs, args.queue, args.job, since_ms, follow=args.follow)
    try:
        for detail in found:
            print(json.dumps(detail) if args.json else event_line(detail), flush=True)
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            return fail(
                f"no events log group {log_group(args.queue)}: is the queue named {args.queue} "
                "(--queue, or SMQ_QUEUE_NAME), and deployed with a template that has it?"
            )
        raise QueueClientError(f"cannot read the queue's events: {exc}") from None
    return 0


def shares(args) -> int:
    if args.action and not args.file:
        return fail(f"smq shares {args.action} needs a shares file (a JSON list of shares)")
    if args.action == "check":
        from job_queue.scheduler import total_capacity

        shares = read_shares(args.file, args.max_priority)
        capacity = ", ".join(f"{n} x {t}" for t, n in total_capacity(shares).items() if n)
        reserved = [
            f"training plan {arn.rsplit('/', 1)[-1]} ({itype}) for {share.name}"
            for share in shares
            for itype, arn in share.plans
        ]
        print(f"{args.file}: {len(shares)} shares, capacity {', '.join([capacity, *reserved])}")
        return 0
    api = client(args)
    apply = args.action == "apply"
    answer = api.set_shares(read_json(args.file)) if apply else api.shares()
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    from tjq.table import shares_table

    print(shares_table(answer["shares"]))
    waiting = ", ".join(f"{s['name']} {s['waiting']}" for s in answer["shares"])
    if waiting:
        print(f"\nwaiting: {waiting}")
    if answer.get("changed"):
        print(f"replaced by {answer['changed']['by']} at {answer['changed']['at']}")
    return 0


def usage(args) -> int:
    if args.action and not args.file:
        return fail('smq usage apply needs a weights file (a JSON object: {"project-x": 2})')
    api = client(args)
    if args.action:
        answer = api.set_weights(read_json(args.file))
    else:
        answer = api.usage(args.since, args.until, args.by)
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    from tjq import usage_table

    if args.csv:
        print(usage_table.report_csv(answer["report"]), end="")
        return 0
    if args.plot:
        try:
            usage_table.plot_days(answer["report"], args.plot)
        except ImportError:
            return fail("--plot needs matplotlib: pip install 'training-job-queue[plot]'")
    print(usage_table.report_text(answer["report"]))
    if args.plot:
        print(f"\nwrote {args.plot}")
    print()
    if answer.get("budgets"):
        print(usage_table.budgets_text(answer["budgets"]) + "\n")
    if answer["fair_share"] is None:
        print(answer["note"])
        return 0
    _fair_share_text(answer)
    return 0


def budgets(args) -> int:
    if args.action and not args.file:
        return fail('smq budgets apply needs a file (a JSON object: {"alice": {"dollars": 500}})')
    api = client(args)
    answer = api.set_budgets(read_json(args.file)) if args.action else api.usage()
    if args.json:
        print(json.dumps({"budgets": answer["budgets"], "changed": answer["budgets_changed"]}))
        return 0
    if not answer["budgets"]:
        print("no budgets: set them in the shares file (budget) or the Budgets parameter")
        return 0
    from tjq import usage_table

    print(usage_table.budgets_text(answer["budgets"]))
    if answer["budgets_changed"]:
        changed = answer["budgets_changed"]
        print(f"\nsubmitters' budgets set by {changed['by']} at {changed['at']}")
    return 0


def _fair_share_text(answer: dict) -> None:
    from tabulate import tabulate

    columns = {
        "submitter": "submitter",
        "usage_instance_hours": "used (instance-h)",
        "weight": "weight",
        "standing": "standing",
        "holds_instances": "holds",
        "waiting": "waiting",
    }
    headers = list(columns.values())
    rows = [[row[key] for key in columns] for row in answer["submitters"]]
    half_life = answer["fair_share"]["half_life_seconds"] / 3600
    print(f"fair share by recent use (half-life {half_life:g} h)\n")
    print(tabulate(rows, headers) if rows else "nobody has used the instances lately")
    if answer["shares"]:
        share_rows = [
            [s["share"], s["usage_instance_hours"], s["limit"], s["per_instance_of_limit"]]
            for s in answer["shares"]
        ]
        print("\n" + tabulate(share_rows, ["share", "used (instance-h)", "limit", "per instance"]))
    if answer["next"]:
        print(f"\n{answer['next']['why']}")
    if answer.get("changed"):
        print(f"weights set by {answer['changed']['by']} at {answer['changed']['at']}")


def show(args) -> int:
    queue = client(args)
    job = queue.job(args.name)
    if args.json:
        print(json.dumps(job, indent=2))
        return 0
    from tabulate import tabulate

    from tjq.progress import expected_text, reason_text
    from tjq.table import instances_text

    shown = {
        **job,
        "instances": instances_text(job),
        "expected_start": expected_text(job),
        "waiting_for": reason_text(job),
    }
    fields = [
        (key, shown.get(key))
        for key in (
            "name",
            "state",
            "priority",
            "share",
            "position",
            "expected_start",
            "instances",
            "submitted_at",
            "submitted_by",
            "first_started_at",
            "ended_at",
            "sagemaker_job_name",
            "keep_alive_seconds",
            "checkpoint",
            "checkpoint_s3_uri",
            "preemptions",
            "max_preemptions",
            "total_runtime_seconds",
            "max_total_runtime_seconds",
            "dependency",
            "dependency_met_at",
            "failure_reason",
            "last_start_error",
            "waiting_for",
        )
        if shown.get(key) not in (None, "")
    ]
    print(tabulate(fields, tablefmt="plain"))
    if job.get("dependency"):
        print("\nWaits for\n" + "\n".join(chain(queue, job)))
    if job["attempts"]:
        rows = [
            (
                a["attempt"],
                a["sagemaker_job_name"],
                a["started_at"],
                a["ended_at"] or "",
                a.get("start", "cold"),
                a["outcome"] or "running",
                a["preempted_by"] or a["failure_reason"] or "",
            )
            for a in job["attempts"]
        ]
        headers = ("Attempt", "SageMaker job", "Started", "Ended", "Start", "Outcome", "Detail")
        print("\n" + tabulate(rows, headers=headers, disable_numparse=True))
    if job.get("history"):
        trail = [
            (h["at"], h["action"], h["by"] or "the queue", _audit_detail(h)) for h in job["history"]
        ]
        headers = ("When", "What", "By", "Detail")
        print("\n" + tabulate(trail, headers=headers, disable_numparse=True))
    return 0


def chain(queue, job: dict, depth: int = 1, seen: frozenset[str] = frozenset()) -> list[str]:
    """The jobs ``job`` waits for, each with its state, and theirs below it, indented: the
    chain it is the end of (a job reached twice, or gone from the queue, is named only)."""
    kind, _, names = job["dependency"].partition(":")
    lines = []
    for name in names.split(","):
        parent, state = None, "(above)"
        if name not in seen:
            try:
                parent = queue.job(name)
                state = parent["state"]
            except JobNotFound:
                state = "(no longer in the queue's records)"
        lines.append(f"{'  ' * depth}{name}  {state}  [{kind}]")
        if parent and parent.get("dependency") and depth < _CHAIN_DEPTH:
            lines += chain(queue, parent, depth + 1, seen | {job["name"], name})
    return lines


_CHAIN_DEPTH = 10  # generations shown


def _audit_detail(entry: dict) -> str:
    from tjq.table import duration

    if entry["action"] == "priority-changed":
        return f"{entry['from']} -> {entry['to']}"
    if entry.get("preempted_by"):
        lost = entry.get("lost_work_seconds")
        lost = "" if lost is None else f", losing {duration(lost)} of work"
        return f"for {entry['preempted_by']}{lost}"
    if entry.get("released_for"):
        return f"its idle warm pool, for {entry['released_for']}"
    return ""


def cancel(args) -> int:
    job = client(args).cancel(args.name)
    print(f"{job['name']}: {job['state']}")
    return 0


def priority(args) -> int:
    job = client(args).set_priority(args.name, args.priority)
    print(f"{job['name']}: priority {job['priority']} ({job['state']})")
    return 0


def submit(args) -> int:
    request = read_request(args.request)
    # What the command line says wins over the file's tags.
    given = {tags.PRIORITY: args.priority, tags.SHARE: args.share}
    given[tags.CHECKPOINT] = args.checkpoint
    if args.after:
        try:
            given[tags.DEPENDS_ON] = Dependency.of(args.dependency, args.after.split(","))
        except ValueError as exc:
            return fail(f"--after must {exc}")
    chosen = {k: str(v) for k, v in given.items() if v is not None}
    if chosen:
        request["Tags"] = tags.with_tags(request.get("Tags"), chosen, replace=True)
    answer = client(args).submit(request)
    from tjq.progress import describe_state

    job = answer["job"]
    print(f"{job['name']}: {describe_state(job)}")  # as the SDK says it
    return 0
