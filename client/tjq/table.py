"""The queue as a table, for `smq status` and the demo."""

from __future__ import annotations

from tabulate import tabulate

from tjq.progress import expected_text, reason_text

HEADERS = ("Job Name", "State", "Priority", "Position", "Instances", "Time", "SageMaker job")
SHARE_HEADERS = ("Share", "Strategy", "Instance type", "Limit", "In use", "Borrowed", "Lent")


def queue_table(jobs: list[dict]) -> str:
    """Rows of GET /jobs as a table: active jobs first, then the queue in start order.
    A Share column appears when jobs belong to quota shares."""
    if not jobs:
        return "(the queue is empty)"
    with_share = any(job.get("share") for job in jobs)
    with_reason = any(reason_text(job) for job in jobs)
    with_expected = any(job.get("expected_start") for job in jobs)
    rows = [
        (
            job["name"],
            job["state"],
            job["priority"],
            *((job.get("share") or "",) if with_share else ()),
            job.get("position") or "",
            instances_text(job),
            _time(job),
            job.get("sagemaker_job_name") or "",
            *((expected_text(job),) if with_expected else ()),
            *((reason_text(job),) if with_reason else ()),
        )
        for job in jobs
    ]
    headers = (*HEADERS[:3], "Share", *HEADERS[3:]) if with_share else HEADERS
    if with_expected:
        headers = (*headers, "Expected start")
    if with_reason:
        headers = (*headers, "Why waiting")
    return tabulate(rows, headers=headers, disable_numparse=True)


def instances_text(job: dict) -> str:
    """What a job runs on, per instance type: ``1 x ml.p5.48xlarge + 2 x ml.c5.18xlarge``."""
    instances = job.get("instances") or {job["instance_type"]: job["instance_count"]}
    text = " + ".join(f"{count} x {itype}" for itype, count in instances.items())
    if job.get("training_plan"):
        text += f" on plan {job['training_plan'].rsplit('/', 1)[-1]}"
    return text


def pool_lines(pools: list[dict]) -> list[str]:
    """Idle warm pools of GET /jobs, a line each: whose, what they hold, until when."""
    return [
        f"warm pool of {p['job']}: {p['instance_count']} x {p['instance_type']}, "
        f"expires in {duration(p['expires_in_seconds'])}"
        + (f" (share {p['share']})" if p.get("share") else "")
        for p in pools
    ]


def plan_lines(plans: list[dict]) -> list[str]:
    """Training plans of GET /jobs, a line each: the window open now (or next), how many
    reserved instances count and how many the queue uses, and any problem."""
    lines = []
    for p in plans:
        line = f"training plan {p['name']} ({p['instance_type']}, {p['status']}): "
        window = p.get("window")
        if p["reserved"]:
            line += f"{p['in_use']} of {p['reserved']} reserved in use, until "
            line += f"{window['usable_until']} (ends {window['end']})"
        elif window:
            line += f"{window['instances']} reserved from {window['start']} to {window['end']}"
        else:
            line += "no reservation left"
        if p.get("error"):
            line += f" — {p['error']}"
        lines.append(line)
    return lines


def outside_lines(outside: list[dict]) -> list[str]:
    """Jobs on capped types the queue did not start (GET /jobs), a line each: they hold
    instances the queue cannot use until they end."""
    return [
        f"outside the queue: {j['sagemaker_job_name']}, "
        + ", ".join(f"{n} x {t}" for t, n in j["instances"].items())
        + f" (for {duration(j['running_seconds'])})"
        for j in outside
    ]


def shares_table(shares: list[dict]) -> str:
    """Rows of GET /shares: per share and instance type, what it may hold and holds."""
    if not shares:
        return "(no quota shares: one queue)"
    rows = []
    for share in shares:
        label = share["name"] + (" (default)" if share.get("default") else "")
        strategy = share["strategy"]
        if share.get("borrow_limit") is not None:
            limit = share["borrow_limit"]
            strategy += " (unlimited)" if limit == -1 else f" ({limit}%)"
        for itype, use in share["instance_types"].items():
            rows.append(
                (label, strategy, itype, use["limit"], use["in_use"], use["borrowed"], use["lent"])
            )
            label, strategy = "", ""
    return tabulate(rows, headers=SHARE_HEADERS, disable_numparse=True)


def _time(job: dict) -> str:
    if job.get("running_seconds") is not None:
        return f"running {duration(job['running_seconds'])}"
    if job.get("waiting_seconds") is not None:
        return f"waiting {duration(job['waiting_seconds'])}"
    return ""


def duration(seconds: float) -> str:
    """3s, 4m05s, 2h03m."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def hold_lines(holds: list[dict]) -> list[str]:
    """The admins' holds, one line each: "the queue is held by ... since ..."."""
    lines = []
    for hold in holds:
        what = f"share {hold['share']}" if hold.get("share") else "the queue"
        how = "drained (running jobs stopped and requeued)" if hold["drain"] else "held"
        lines.append(
            f"{what} is {how} by {hold['by']} since {hold['since']}: nothing starts until "
            "an admin runs smq queue resume"
            + (f" --share {hold['share']}" if hold.get("share") else "")
        )
    return lines
