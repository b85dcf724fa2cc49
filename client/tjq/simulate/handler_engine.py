"""The second engine: a workload replayed through the real Lambda handler, DynamoDB store and
SageMaker emulation (:class:`tjq.local.LocalCloud`) on the same virtual clock.

Slow (every decision is real API calls against moto), so for small workloads: it is how the
tests show that the fast engine decides exactly as the deployed queue would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from job_queue import tags
from job_queue.ledger import Span, UsageRecord
from tjq.local.calls import training_request
from tjq.local.cloud import LocalCloud
from tjq.simulate.records import Decision, SimSettings
from tjq.simulate.workload import WorkloadJob


@dataclass(frozen=True)
class HandlerReplay:
    """What the real handler did with a workload: starts and preemptions (seconds since the
    first submission), each job's end state, and its usage ledger (on the same clock)."""

    decisions: list[Decision]
    states: dict[str, str]
    ledger: list[UsageRecord]


def decisions_through_handler(
    jobs: Sequence[WorkloadJob], settings: SimSettings
) -> tuple[list[Decision], dict[str, str]]:
    """Starts and preemptions (seconds since the first submission) and each job's end state."""
    replay = replay_through_handler(jobs, settings)
    return replay.decisions, replay.states


def replay_through_handler(jobs: Sequence[WorkloadJob], settings: SimSettings) -> HandlerReplay:
    """The workload through the real handler (see :class:`HandlerReplay`)."""
    specs = {job.name: job for job in jobs}
    cloud = LocalCloud(
        capacity=dict(settings.capacity),
        stop_seconds=settings.stop_latency,
        policy=settings.policy,
        shares=settings.shares,
        keep_alive_seconds=int(settings.keep_alive_s),
        limits=settings.limits,
        budgets=settings.budgets,
        prices=settings.prices,
    )
    with cloud:
        start = cloud.clock()
        emulator = cloud.sagemaker

        def latency(attempt) -> float:
            return settings.warm_start_latency if attempt.warm_from else settings.start_latency

        def failed(spec: WorkloadJob) -> list:
            # The job's attempts that failed with the workload's failure reason.
            return [
                a
                for a in emulator.jobs.values()
                if a.tags.get(tags.JOB) == spec.name
                and a.status == "Failed"
                and a.failure_reason == spec.failure_reason
            ]

        def kept(spec: WorkloadJob) -> float:
            # The progress the checkpoints of the job's stopped (or failed) attempts kept.
            done = 0.0
            for earlier in emulator.jobs.values():
                if earlier.tags.get(tags.JOB) != spec.name:
                    continue
                if earlier.stopped_at is not None:
                    worked = max(0.0, earlier.stopped_at - earlier.created_at - latency(earlier))
                    done = spec.kept_work(done + worked)
                elif earlier in failed(spec):
                    worked = earlier.ends_at - earlier.created_at - latency(earlier)
                    done = spec.crash_kept(done + worked)
            return done

        def saved_at(job) -> float | None:
            # What the newest object under the job's checkpoint location would say.
            spec = specs[job.name]
            running = [
                a
                for a in emulator.jobs.values()
                if a.tags.get(tags.JOB) == job.name and a.status == "InProgress"
            ]
            if not running:
                return None
            since = running[-1].created_at + latency(running[-1])
            return spec.last_saved_at(kept(spec), since, cloud.clock())

        def plan_attempt(attempt) -> None:
            # How long this SageMaker job runs: what is left of the job's work (after the
            # checkpoints of its stopped attempts), capped by its max runtime.
            spec = specs[attempt.tags[tags.JOB]]
            remaining = spec.duration_s - kept(spec)
            work = remaining if spec.max_runtime_s is None else min(remaining, spec.max_runtime_s)
            attempt.ends_at = attempt.created_at + latency(attempt) + work
            if work < remaining:
                attempt.end_reason = ("Failed", "MaxRuntimeExceeded: training job ran too long")
            elif spec.failure_reason and not failed(spec):  # the trace's failure, once
                attempt.end_reason = ("Failed", spec.failure_reason)

        emulator.on_create = plan_attempt
        cloud.deps = replace(cloud.deps, checkpoint_times=saved_at)
        budgeted = bool(settings.budgets) or any(s.budget for s in settings.shares)
        swept: set[float] = set()

        def advance_to(target: float) -> None:
            # The sweep that finds a budget's window freed (the fast engine passes then too).
            while budgeted and (due := _budget_frees(cloud, swept)) is not None and due <= target:
                cloud.advance(max(0.0, due - cloud.clock()))
                cloud.sweep()
                swept.add(due)
            cloud.advance(target - cloud.clock())

        for job in sorted(jobs, key=lambda j: j.submit_s):  # stable: file order breaks ties
            advance_to(start + job.submit_s)
            request = training_request(
                job.name,
                job.priority,
                instance_type=job.instance_type,
                instance_count=job.instance_count,
                share=job.share if settings.shares else None,
            )
            if job.checkpoint is not None:
                request["Tags"].append({"Key": tags.CHECKPOINT, "Value": str(job.checkpoint)})
            request["Tags"] += job.limit_tags()
            if job.submitter is not None:
                request["Tags"].append({"Key": tags.FAIR_SHARE_ID, "Value": job.submitter})
            limit = {"MaxRuntimeInSeconds": int(job.max_runtime_s)} if job.max_runtime_s else {}
            request["StoppingCondition"] = limit
            # The workload's warm-pool configuration, as a field SageMaker matches pools on.
            request["ResourceConfig"]["VolumeKmsKeyId"] = f"alias/{job.configuration}"
            if job.keep_alive_s is not None:
                request["ResourceConfig"]["KeepAlivePeriodInSeconds"] = int(job.keep_alive_s)
            status, body = cloud.api("POST", "/add-job", request)
            if status != 201:
                raise RuntimeError(f"{job.name} was refused: {body}")
        while (due := emulator.next_change_at()) is not None or (
            budgeted and (due := _budget_frees(cloud, swept)) is not None
        ):
            advance_to(due)
        attempts = emulator.jobs.values()
        decisions = [Decision(a.created_at - start, "start", a.tags[tags.JOB]) for a in attempts]
        decisions += [
            Decision(a.stopped_at - start, "preempt", a.tags[tags.JOB])
            for a in attempts
            if a.stopped_at is not None
        ]
        states = {
            job.name: cloud.api("GET", f"/jobs/{job.name}")[1]["job"]["state"] for job in jobs
        }
        cloud.sweep()  # it notices the pools that expired, and ends their records
        ledger = [_shifted(r, start) for r in cloud.deps.store.usage_records(start)]
    return HandlerReplay(sorted(decisions, key=_order), states, ledger)


def _budget_frees(cloud: LocalCloud, swept: set[float]) -> float | None:
    """The earliest time a job waiting for its budget may start, not swept at yet."""
    frees = [
        datetime.fromisoformat(why["until"]).timestamp()
        for row in cloud.jobs()
        if (why := row.get("waiting_for")) and why["code"] == "budget" and why["until"]
    ]
    return min((t for t in frees if t not in swept), default=None)


def _shifted(record: UsageRecord, start: float) -> UsageRecord:
    spans = tuple(Span(s.phase, s.start - start, s.end - start) for s in record.spans)
    return replace(record, spans=spans)


def sorted_decisions(decisions: Sequence[Decision]) -> list[Decision]:
    return sorted(decisions, key=_order)


def _order(decision: Decision) -> tuple[float, str, str]:
    return (round(decision.time, 6), decision.action, decision.job)
