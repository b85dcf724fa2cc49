"""The queue's use cases: submit, cancel, reprioritise, react to SageMaker, reconcile, schedule.

Each public method reads what it needs, makes one decision, writes it with a conditional
write, and then runs a scheduling pass, so whatever frees capacity starts the next job
straight away (no lost wake-up).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from job_queue.config import Layout, Settings
from job_queue.errors import InvalidRequest, JobConflict, JobNotFound, StaleState
from job_queue.models import Attempt, Job, JobState
from job_queue.request import Submission, parse_priority, validate_submission
from job_queue.sagemaker import (
    TAG_JOB,
    TAG_QUEUE,
    SageMakerGateway,
    StartOutcome,
    attempt_name,
    is_capacity_failure,
)
from job_queue.scheduler import Plan, ShareLedger, WaitingJob, make_planner
from job_queue.scheduler.shares import ShareUsage
from job_queue.share_config import SharesError, dumps_shares, parse_shares
from job_queue.store import DynamoJobStore, Pool

logger = Logger(child=True)

_RETRIES = 8  # re-reads after a lost race before giving up on one request
_SCHEDULING_ROUNDS = 16  # a pass that keeps losing races means others keep scheduling
_START_GRACE_SECONDS = 60.0  # a start younger than this may still be under way elsewhere
_ENDED = ("Completed", "Failed", "Stopped")


@dataclass
class Report:
    """What an invocation did, for metrics: starts (with their wait), preemptions, usage."""

    waits_at_start: list[float] = field(default_factory=list)
    preemptions: int = 0
    instances_in_use: dict[str, int] = field(default_factory=dict)
    queue_depth: int | None = None
    share_usage: list[ShareUsage] = field(default_factory=list)
    waiting_by_share: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Submitted:
    job: Job
    position: int | None
    created: bool


class QueueService:
    """The queue's behaviour, over a store and a SageMaker gateway.

    Example::

        service = QueueService(DynamoJobStore(dynamodb, "queue"),
                               SageMakerGateway(sagemaker, "queue"), settings)
        submitted = service.submit(create_training_job_request)
    """

    def __init__(
        self,
        store: DynamoJobStore,
        sagemaker: SageMakerGateway,
        settings: Settings,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.sagemaker = sagemaker
        self.settings = settings
        self.clock = clock
        self.report = Report()

    # -- API -------------------------------------------------------------------------------

    def submit(self, request: dict) -> Submitted:
        """Queue a CreateTrainingJob request; an identical resubmission returns the job."""
        layout = self.layout()
        submission = validate_submission(request, layout.capacity, self.settings.allowed_role_arns)
        share = _share_for(submission, layout)
        existing = self.store.get(submission.name)
        if existing is None:
            job = Job(
                name=submission.name,
                priority=submission.priority,
                seq=self.store.next_seq(),
                demand=submission.demand,
                state=JobState.PENDING,
                submitted_at=self.clock(),
                request=submission.request,
                request_hash=submission.request_hash,
                share=share,
            )
            if self.store.add(job):
                logger.info("job queued", extra={"job": job.name, "priority": job.priority})
                self.schedule()
                return self._submitted(self.store.get(job.name), created=True)
            existing = self.store.get(submission.name)  # a concurrent submission won
        if existing.request_hash != submission.request_hash:
            raise JobConflict(
                f"a job named {submission.name} already exists ({existing.state}) with a "
                "different request; choose another TrainingJobName"
            )
        return self._submitted(existing, created=False)

    def get(self, name: str) -> Job:
        job = self.store.get(name)
        if job is None:
            raise JobNotFound(f"no job named {name} in the queue")
        return job

    def position(self, job: Job) -> int | None:
        return self.store.position(job) if job.state.is_waiting else None

    def layout(self, pool: Pool | None = None) -> Layout:
        """The capacity and quota shares in effect (shares set at run time are kept on the
        pool item)."""
        pool = pool or self.store.pool()
        return self.settings.layout(pool.shares_text, pool.shares_deployed)

    def queue(self) -> tuple[Pool, list[WaitingJob], Layout]:
        """Active jobs, the waiting queue in queue order, and the capacity in effect."""
        pool = self.store.pool()
        layout = self.layout(pool)
        partitions = [None, *(s.name for s in layout.shares)]
        return pool, list(self.store.waiting(list(layout.capacity), shares=partitions)), layout

    def shares(self) -> tuple[Layout, list[ShareUsage], dict[str, int]]:
        """The shares in effect, each share's use per instance type, and its waiting jobs."""
        pool = self.store.pool()
        layout = self.layout(pool)
        usage = ShareLedger(layout.shares, pool.jobs).usage()
        types = list(layout.capacity)
        return layout, usage, {s.name: self.store.depth(types, s.name) for s in layout.shares}

    def set_shares(self, value: object) -> Layout:
        """Replace the quota shares without a deployment, then schedule: a lowered limit
        makes jobs over it reclaimable, a raised one lets waiting jobs start."""
        try:
            shares = parse_shares(value)
        except SharesError as exc:
            raise InvalidRequest(str(exc)) from exc
        default = self.settings.default_share
        if default is not None and default not in {s.name for s in shares}:
            raise InvalidRequest(
                f"the default share {default} (DefaultShare) must remain among the shares"
            )
        for _ in range(_RETRIES):
            pool = self.store.pool()
            try:
                self.store.set_shares(dumps_shares(shares), self.settings.shares_text, pool.version)
                break
            except StaleState:
                continue
        else:
            raise JobConflict("the queue kept changing while the shares were replaced; try again")
        logger.info("shares changed", extra={"shares": [s.name for s in shares]})
        self.schedule()
        return self.layout()

    def cancel(self, name: str) -> Job:
        """A pending job leaves the queue; an active one is stopped and ends cancelled."""
        for _ in range(_RETRIES):
            job = self.get(name)
            if job.state.is_finished:
                raise JobConflict(f"job {name} already ended ({job.state}); nothing to cancel")
            if job.state == JobState.CANCELLING:
                return job
            now = self.clock()
            try:
                if job.state.is_waiting:
                    self.store.cancel_waiting(job, now)
                else:
                    self.store.begin_stop(job, JobState.CANCELLING, now)
            except StaleState:
                continue
            logger.info("job cancelled", extra={"job": name, "was": job.state.value})
            if job.state in (JobState.RUNNING, JobState.PREEMPTING):
                self.sagemaker.stop(job.attempt_name)
            # A starting job is stopped by its starter once CreateTrainingJob returns.
            self.schedule()
            return self.get(name)
        raise JobConflict(f"job {name} is changing state too often; try again")

    def set_priority(self, name: str, value: object) -> Job:
        """Change a pending or active job's priority and reschedule at once."""
        priority = parse_priority(value)
        for _ in range(_RETRIES):
            job = self.get(name)
            if job.state.is_finished or job.state == JobState.CANCELLING:
                raise JobConflict(f"job {name} is {job.state}; its priority can no longer change")
            if job.priority == priority:
                return job
            try:
                self.store.change_priority(job, priority, self.clock())
            except StaleState:
                continue
            logger.info(
                "priority changed", extra={"job": name, "from": job.priority, "to": priority}
            )
            self.schedule()
            return self.get(name)
        raise JobConflict(f"job {name} is changing state too often; try again")

    # -- SageMaker events and the sweep ----------------------------------------------------

    def on_state_change(self, detail: dict) -> None:
        """A 'SageMaker Training Job State Change' event. Foreign, stale and repeated events
        change nothing."""
        tags = detail.get("Tags") or {}
        sagemaker_name = detail.get("TrainingJobName")
        if tags.get(TAG_QUEUE) != self.settings.queue_name or not tags.get(TAG_JOB):
            logger.debug("event for a job this queue did not start", extra={"job": sagemaker_name})
            return
        self._apply_status(
            tags[TAG_JOB],
            sagemaker_name,
            detail.get("TrainingJobStatus"),
            detail.get("FailureReason"),
        )
        self.schedule()

    def reconcile(self) -> None:
        """Repair drift (a missed event, an interrupted start or stop) from DescribeTrainingJob
        on the jobs the table says hold instances, then schedule."""
        pool = self.store.pool()
        for active in pool.jobs:
            try:
                self._repair(active)
            except (StaleState, ClientError) as exc:
                # Another invocation moved it on, or SageMaker refused for now: the next
                # sweep looks again. One job must not stop the sweep for the others.
                logger.warning(f"could not check job now: {exc}", extra={"job": active.name})
        layout = self.layout(pool)
        self.report.queue_depth = self.store.depth(list(layout.capacity))
        for share in layout.shares:
            self.report.waiting_by_share[share.name] = self.store.depth(
                list(layout.capacity), share.name
            )
        if layout.shares:
            self.report.queue_depth += sum(self.report.waiting_by_share.values())
        self.schedule()

    def _repair(self, active) -> None:
        job = self.store.get(active.name)
        if job is None or not job.state.holds_instances:
            return
        found = self.sagemaker.describe(job.attempt_name)
        claimed_long_ago = self.clock() - active.started_at > _START_GRACE_SECONDS
        if found is None:
            if not claimed_long_ago:
                return  # its start may still be under way in another invocation
            if job.state == JobState.STARTING:
                logger.info("retrying an interrupted start", extra={"job": job.name})
                self._create(job, job.attempt_name)
            else:  # stopped before SageMaker ever created it
                self._apply_status(job.name, job.attempt_name, "Stopped", None)
        elif found.status in _ENDED:
            logger.info("repairing a missed event", extra={"job": job.name, "status": found.status})
            self._apply_status(job.name, job.attempt_name, found.status, found.failure_reason)
        elif job.state == JobState.STARTING:
            self._mark_running(job)
        elif job.state.is_stopping and found.status == "InProgress":
            self.sagemaker.stop(job.attempt_name)

    # -- scheduling ------------------------------------------------------------------------

    def schedule(self) -> Plan:
        """One scheduling pass: read the pool and as much of the queue as needed, plan, act.

        A lost race (another invocation changed the pool) re-reads and plans again.
        """
        plan = Plan()
        for _ in range(_SCHEDULING_ROUNDS):
            pool, plan = self._plan()
            if plan.empty:
                return plan
            try:
                self._carry_out(plan, pool)
                return plan
            except StaleState:
                logger.debug("another invocation changed the queue; planning again")
        logger.warning("scheduling pass gave up after repeated races; the next event retries")
        return plan

    def _plan(self) -> tuple[Pool, Plan]:
        pool = self.store.pool()
        layout = self.layout(pool)
        self._record_usage(pool, layout)
        planner = make_planner(
            pool.jobs, layout.capacity, self.clock(), self.settings.policy, layout.shares
        )
        # The planner says which instance types are still open, so the store stops reading
        # a type's queue once a job of that type is held back.
        partitions = [s.name for s in layout.shares] or [None]
        for waiting in self.store.waiting(list(layout.capacity), planner.is_open, partitions):
            planner.offer(waiting)
            if not planner.open_types:
                break
        return pool, planner.plan()

    def _carry_out(self, plan: Plan, pool: Pool) -> None:
        version = pool.version
        now = self.clock()
        for preemption in plan.preemptions:
            victim = self.store.get(preemption.victim.name)
            if victim is None or victim.state != JobState.RUNNING:
                raise StaleState(f"{preemption.victim.name} is no longer running")
            self.store.begin_stop(
                victim,
                JobState.PREEMPTING,
                now,
                preempted_by=preemption.preemptor,
                pool_version=version,
            )
            version += 1
            logger.info(preemption.reason, extra={"job": victim.name})
            self.report.preemptions += 1
            self.sagemaker.stop(victim.attempt_name)
        claimed: list[tuple[Job, str]] = []
        try:
            for waiting in plan.starts:
                job = self.store.get(waiting.name)
                if job is None or not job.state.is_waiting:
                    raise StaleState(f"{waiting.name} is no longer waiting")
                name = attempt_name(job.name, job.seq, len(job.attempts) + 1)
                self.store.claim(waiting, name, version, now)
                version += 1
                claimed.append((replace(job, state=JobState.STARTING, attempt_name=name), name))
        finally:
            # What was claimed is started even if a later claim lost a race.
            for job, name in claimed:
                self._create(job, name)

    def _create(self, job: Job, sagemaker_name: str) -> None:
        number = len(job.attempts) + 1
        result = self.sagemaker.start(job.request, sagemaker_name, job.name, number)
        log = {"job": job.name, "sagemaker_job": sagemaker_name, "outcome": result.outcome.value}
        if result.outcome == StartOutcome.UNKNOWN:
            logger.warning(
                f"start outcome unknown, the sweep will check: {result.message}", extra=log
            )
            return
        try:
            if result.outcome == StartOutcome.STARTED:
                self._mark_running(job)
                self.report.waits_at_start.append(self.clock() - job.submitted_at)
                logger.info("job started", extra=log)
            elif result.outcome == StartOutcome.REFUSED:
                logger.warning(f"start refused, will retry: {result.message}", extra=log)
                self._requeue_refused(job, result.message)
            else:
                logger.warning(f"start failed: {result.message}", extra=log)
                self.store.settle(job, JobState.FAILED, self.clock(), failure_reason=result.message)
        except StaleState:
            # Cancelled while CreateTrainingJob was under way.
            current = self.store.get(job.name)
            if (
                current
                and current.state == JobState.CANCELLING
                and current.attempt_name == sagemaker_name
            ):
                if result.outcome == StartOutcome.STARTED:
                    self.sagemaker.stop(sagemaker_name)
                else:
                    self.store.settle(current, JobState.CANCELLED, self.clock())

    def _mark_running(self, job: Job) -> None:
        attempt = Attempt(len(job.attempts) + 1, job.attempt_name, self.clock())
        self.store.mark_running(job, attempt)

    def _requeue_refused(self, job: Job, message: str, attempts=None) -> None:
        failures = job.start_failures + 1
        delay = min(
            self.settings.start_retry_max_seconds,
            self.settings.start_retry_base_seconds * 2 ** (failures - 1),
        )
        self.store.settle(
            job,
            JobState.PENDING,
            self.clock(),
            not_before=self.clock() + delay,
            start_failures=failures,
            last_error=message,
            **({"attempts": attempts} if attempts is not None else {}),
        )

    def _apply_status(self, name: str, sagemaker_name: str, status: str | None, reason: str | None):
        """Settle a job whose current SageMaker job reached ``status``."""
        for _ in range(_RETRIES):
            job = self.store.get(name)
            if job is None or job.attempt_name != sagemaker_name or not job.state.holds_instances:
                return  # unknown, an earlier attempt's late event, or already settled
            try:
                if status == "InProgress" and job.state == JobState.STARTING:
                    self._mark_running(job)
                elif status in _ENDED:
                    self._settle(job, status, reason)
                return
            except StaleState:
                continue

    def _settle(self, job: Job, status: str, reason: str | None) -> None:
        now = self.clock()
        if status == "Completed":
            outcome, to_state = "completed", JobState.COMPLETED
        elif status == "Failed" and is_capacity_failure(reason) and not job.state.is_stopping:
            attempts = _ended(job, "capacity-error", now, reason)
            self._requeue_refused(job, reason, attempts=attempts)
            return
        elif status == "Failed":
            outcome, to_state = "failed", JobState.FAILED
        elif job.state == JobState.PREEMPTING:
            outcome, to_state = "preempted", JobState.PREEMPTED
        elif job.state == JobState.CANCELLING:
            outcome, to_state = "cancelled", JobState.CANCELLED
        else:
            outcome, to_state = "stopped", JobState.STOPPED
        changes = {"attempts": _ended(job, outcome, now, reason)}
        if to_state == JobState.FAILED:
            changes["failure_reason"] = reason or "SageMaker reported Failed without a reason"
        self.store.settle(job, to_state, now, **changes)
        logger.info(f"job {to_state}", extra={"job": job.name, "sagemaker_job": job.attempt_name})

    # -- helpers ---------------------------------------------------------------------------

    def _submitted(self, job: Job, created: bool) -> Submitted:
        return Submitted(job, self.position(job), created)

    def _record_usage(self, pool: Pool, layout: Layout) -> None:
        in_use = dict.fromkeys(layout.capacity, 0)
        for active in pool.jobs:
            for itype, count in active.demand.items():
                in_use[itype] = in_use.get(itype, 0) + count
        self.report.instances_in_use = in_use
        if layout.shares:
            self.report.share_usage = ShareLedger(layout.shares, pool.jobs).usage()


def _share_for(submission: Submission, layout: Layout) -> str | None:
    """The job's share: its ``share`` tag, else the default share; checked against the
    shares in effect (None when the queue has no shares)."""
    if not layout.shares:
        return None
    name = submission.share or layout.default_share
    valid = ", ".join(s.name for s in layout.shares)
    if name is None:
        raise InvalidRequest(
            f"this queue has quota shares: tag the job with share = one of {valid}"
        )
    share = layout.share(name)
    if share is None:
        raise InvalidRequest(f"share {name!r} does not exist; the shares are {valid}")
    for itype, count in submission.demand.items():
        most = share.most(itype)
        if count > most:
            raise InvalidRequest(
                f"the job needs {count} x {itype} but share {name} may hold at most "
                f"{most:g} (limit {share.limit(itype)}, strategy {share.strategy.value}); "
                "it could never start"
            )
    return name


def _ended(job: Job, outcome: str, now: float, reason: str | None) -> list[Attempt]:
    """The job's attempts with the current one closed (added if it never got marked running)."""
    attempts = list(job.attempts)
    if not attempts or attempts[-1].sagemaker_job_name != job.attempt_name:
        attempts.append(Attempt(len(attempts) + 1, job.attempt_name, now))
    attempts[-1] = replace(
        attempts[-1],
        ended_at=now,
        outcome=outcome,
        failure_reason=reason if outcome in ("failed", "capacity-error") else None,
        preempted_by=job.preempted_by if outcome == "preempted" else None,
    )
    return attempts
