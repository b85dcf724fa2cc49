"""Metrics of a replay, as `smq simulate --json` reports them.

* wait = first start - submit; jct = end - submit;
* utilization = instance-seconds held (starting, running, stopping) / instance-seconds
  available from the first submission to the last end;
* goodput = instance-seconds of work that counted toward completion / available;
* lost = instance-seconds of work thrown away by preemption, plus time spent stopping;
* idle_while_waiting = instance-seconds free while a waiting job would have fit in them;
* with failures: ``failed`` (jobs that ended failed, each with its ``failure_reason``) and
  ``retried`` (failed attempts that RetryOnFailure requeued);
* with dependencies: ``cancelled`` (jobs whose dependency could never hold);
* with submitters named: ``by_submitter`` and ``fairness`` (:mod:`tjq.simulate.fairness`);
* warm pools: ``warm_starts`` and ``cold_starts`` (attempts started on a pool or not),
  ``released_pools``, ``warm_pool_instance_s`` (instance-seconds held by idle pools: what
  they are billed for), ``provisioning_instance_s`` (instance-seconds spent starting
  attempts, cold or warm) and ``refused_starts``; utilization counts pools as held.

Percentiles interpolate linearly between the closest ranks (as numpy's default does).
"""

from __future__ import annotations

from job_queue.models import JobState
from tjq.simulate.fairness import by_submitter
from tjq.simulate.records import SimResult
from tjq.simulate.stats import percentile, summary

__all__ = ["percentile", "report"]


def report(result: SimResult) -> dict:
    """The JSON object of `smq simulate --json`: per-job rows and the metrics."""
    jobs = []
    held = useful = lost = 0.0
    for job in result.jobs:
        spec = job.spec
        wait = None if job.first_start_s is None else job.first_start_s - spec.submit_s
        jct = None if job.end_s is None else job.end_s - spec.submit_s
        jobs.append(
            {
                "name": spec.name,
                "state": job.state,
                "submit_s": spec.submit_s,
                "first_start_s": job.first_start_s,
                "end_s": job.end_s,
                "wait_s": wait,
                "jct_s": jct,
                "preemptions": job.preemptions,
                "lost_instance_s": round(job.lost_instance_s, 3),
                "warm_starts": sum(a.warm for a in job.attempts),
                **({"failure_reason": job.failure_reason} if job.failure_reason else {}),
                **({"retried": job.retried} if job.retried else {}),
                **({"share": spec.share} if result.settings.shares else {}),
                **({"submitter": spec.submitter} if spec.submitter else {}),
            }
        )
        if spec.instance_type in result.settings.uncapped:
            continue  # on instances the capacity does not count
        held += sum((a.end - a.start) * spec.instance_count for a in job.attempts if a.end)
        if job.state is JobState.COMPLETED:
            useful += spec.duration_s * spec.instance_count
        lost += job.lost_instance_s
    first = min(j.spec.submit_s for j in result.jobs)
    last = max((j.end_s for j in result.jobs if j.end_s is not None), default=first)
    available = sum(result.settings.capacity.values()) * (last - first)
    pooled = sum((p.until - p.since) * p.instances for p in result.pools if p.until is not None)
    held += sum(
        max(0.0, min(p.until, last) - p.since) * p.instances
        for p in result.pools
        if p.until is not None
    )
    attempts = [(a, j.spec) for j in result.jobs for a in j.attempts]
    waits = [j["wait_s"] for j in jobs if j["wait_s"] is not None]
    jcts = [j["jct_s"] for j in jobs if j["jct_s"] is not None]
    by_priority: dict[int, list[float]] = {}
    for row, job in zip(jobs, result.jobs, strict=True):
        if row["wait_s"] is not None:
            by_priority.setdefault(job.spec.priority, []).append(row["wait_s"])
    metrics = {
        "jobs": len(jobs),
        "makespan_s": last - first,
        "utilization": round(held / available, 6) if available else 0.0,
        "goodput": round(useful / available, 6) if available else 0.0,
        "idle_while_waiting_instance_s": round(result.idle_while_waiting_instance_s, 3),
        "preemptions": sum(j["preemptions"] for j in jobs),
        "lost_instance_s": round(lost, 3),
        "wait_s": summary(waits),
        "jct_s": summary(jcts),
        "wait_s_by_priority": {
            str(priority): summary(values, ("mean", "p95", "max"))
            for priority, values in sorted(by_priority.items(), reverse=True)
        },
    }
    settings = result.settings
    if settings.keep_alive_s or settings.warm_start_latency or result.pools:
        metrics.update(
            warm_starts=sum(a.warm for a, _ in attempts),
            cold_starts=sum(not a.warm for a, _ in attempts),
            released_pools=sum(p.ended_by == "released" for p in result.pools),
            warm_pool_instance_s=round(pooled, 3),
            provisioning_instance_s=round(
                sum(a.latency * spec.instance_count for a, spec in attempts), 3
            ),
            refused_starts=sum(j.refused_starts for j in result.jobs),
            progress_s_by_priority=_progress_by_priority(result),
        )
    failed = [j for j in result.jobs if j.state is JobState.FAILED]
    if failed or any(j.retried for j in result.jobs):
        # The queue's limits at work: jobs that failed (their own error, a retry rule used
        # up, a cap), and failed attempts a RetryOnFailure rule requeued.
        metrics.update(failed=len(failed), retried=sum(j.retried for j in result.jobs))
    cancelled = [j for j in result.jobs if j.state is JobState.CANCELLED]
    if cancelled:  # their dependency could never hold (a parent failed, or completed)
        metrics["cancelled"] = len(cancelled)
    if result.settings.shares:
        metrics["by_share"] = _by_share(result, jobs, last - first)
    if any(job.spec.submitter for job in result.jobs):
        metrics["by_submitter"], metrics["fairness"] = by_submitter(result)
    return {"jobs": jobs, "metrics": metrics}


def _progress_by_priority(result: SimResult) -> dict:
    """Per priority: time from submission to the first progress (start plus its latency)."""
    by_priority: dict[int, list[float]] = {}
    for job in result.jobs:
        if job.attempts:
            first = job.attempts[0]
            by_priority.setdefault(job.spec.priority, []).append(
                first.start + first.latency - job.spec.submit_s
            )
    return {
        str(priority): summary(values, ("mean", "p95", "max"))
        for priority, values in sorted(by_priority.items(), reverse=True)
    }


def _by_share(result: SimResult, rows: list[dict], span: float) -> dict:
    """Per share: jobs, waits, and utilization = instance-seconds its jobs held / its own
    limit's instance-seconds (above 1 when it borrowed more than it lent)."""
    out = {}
    for share in result.settings.shares:
        mine = [
            (row, job)
            for row, job in zip(rows, result.jobs, strict=True)
            if job.spec.share == share.name
        ]
        held = sum(
            (a.end - a.start) * job.spec.instance_count
            for _, job in mine
            for a in job.attempts
            if a.end
        )
        own = sum(share.capacity.values()) * span
        waits = [row["wait_s"] for row, _ in mine if row["wait_s"] is not None]
        out[share.name] = {
            "jobs": len(mine),
            "wait_s": summary(waits, ("mean", "p95", "max")),
            "utilization": round(held / own, 6) if own else None,
        }
    return out
