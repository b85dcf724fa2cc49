"""Carrying out decisions against the table and SageMaker: a pass's plan, and the lifecycle
decisions of :mod:`job_queue.lifecycle`.

The order of a plan: idle warm pools are released (ended in SageMaker, then taken out of
the table, so their instances count as held until they are gone), running jobs are preempted,
waiting jobs are claimed — every claim checks the holders' version the plan saw — and the
claimed jobs are created. A job started on a warm pool is then checked against SageMaker:
did the pool move to it?
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from aws_lambda_powertools import Logger
from botocore.exceptions import ClientError

from job_queue import carry, head_of_line, lifecycle, outside, plans, tags
from job_queue.errors import SageMakerError, StaleState
from job_queue.head_of_line import Act, Blocked, Blocking, HeadOfLineLimit
from job_queue.models import Action, Attempt, AuditEntry, Job, JobState
from job_queue.queue_events import JobBlocked, PoolReleased, StateChange
from job_queue.report import Report
from job_queue.retry import RETRIES, until_settled
from job_queue.sagemaker import SageMakerGateway, StartOutcome, StartResult, attempt_name
from job_queue.scheduler import Plan
from job_queue.scheduler.snapshot import Release, WarmPool
from job_queue.scheduler.waiting_for import WaitingFor
from job_queue.store import DynamoJobStore, Holders

logger = Logger(child=True)

_UNKNOWN = object()  # SageMaker would not say


class Actions:
    """Writes decisions; a write that loses a race raises StaleState (or re-reads and
    decides again, where it says so)."""

    def __init__(
        self,
        store: DynamoJobStore,
        sagemaker: SageMakerGateway,
        clock: Callable[[], float],
        backoff: lifecycle.Backoff,
        report: Report,
    ) -> None:
        self.store, self.sagemaker, self.clock = store, sagemaker, clock
        self.backoff, self.report = backoff, report

    # -- a pass's plan ----------------------------------------------------------------------

    def carry_out(self, plan: Plan, held: Holders) -> None:
        """Release, preempt, claim, create — in that order (see the module's docstring)."""
        version = held.version
        now = self.clock()
        for release in plan.releases:
            if not self._release(release, now):
                return  # SageMaker refused for now: the next event or sweep plans again
        for preemption in plan.preemptions:
            victim = self.store.get(preemption.victim.name)
            if victim is None or victim.state != JobState.RUNNING:
                raise StaleState(f"{preemption.victim.name} is no longer running")
            lost = None if preemption.lost_work_s is None else round(preemption.lost_work_s)
            audit = AuditEntry(
                now, Action.PREEMPTED, preempted_by=preemption.preemptor, lost_work_s=lost
            )
            self.store.begin_stop(
                victim,
                JobState.PREEMPTING,
                now,
                preempted_by=preemption.preemptor,
                pool_version=version,
                audit=audit,
            )
            version += 1
            reason = preemption.reason
            if lost is not None:
                reason += f"; work lost (estimated): {lost} s"
            self.changed(victim, JobState.PREEMPTING, now, reason)
            logger.info(reason, extra={"job": victim.name, "lost_work_s": lost})
            self.report.preemptions += 1
            if lost is not None:
                self.report.lost_instance_seconds.append(lost * sum(victim.demand.values()))
            self.sagemaker.stop(victim.attempt_name)
        claimed: list[tuple[Job, WarmPool | None]] = []
        try:
            for waiting in plan.starts:
                job = self.store.get(waiting.name)
                if job is None or not job.state.is_waiting:
                    raise StaleState(f"{waiting.name} is no longer waiting")
                name = attempt_name(job.name, job.seq, len(job.attempts) + 1)
                pool = plan.warm.get(waiting.name)
                on_plan = plan.plans.get(waiting.name)
                self.store.claim(waiting, name, version, now, warm=pool, plan=on_plan)
                version += 1
                warm = pool.name if pool is not None else None
                where = f"on the warm pool of {warm}" if warm else None
                where = f"on training plan {on_plan.rsplit('/', 1)[-1]}" if on_plan else where
                self.changed(
                    job,
                    JobState.STARTING,
                    now,
                    where,
                    sagemaker_job_name=name,
                    attempt=len(job.attempts) + 1,
                )
                starting = replace(
                    job,
                    state=JobState.STARTING,
                    attempt_name=name,
                    warm_pool=warm,
                    training_plan=on_plan,
                )
                if pool is not None:
                    pool = replace(pool, claimed_by=name, claimed_at=now)
                claimed.append((starting, pool))
        finally:
            # What was claimed is started even if a later claim lost a race.
            for job, pool in claimed:
                self.create(job, job.attempt_name, pool)

    def _release(self, release: Release, now: float) -> bool:
        # SageMaker first, then the table: until the table forgets the pool, its instances
        # count as held, so an invocation that dies in between leaves the queue short of
        # capacity for a sweep (which finds the pool gone), never over its cap. A pass that
        # claimed the pool meanwhile only starts cold.
        pool = release.pool
        try:
            self.sagemaker.release_pool(pool.name)
        except SageMakerError as exc:
            logger.warning(f"could not release a warm pool: {exc}", extra={"job": pool.job})
            return False
        audit = AuditEntry(now, Action.POOL_RELEASED, released_for=release.for_job)
        try:
            self.report.billed(self.store.release_pool(pool, now, audit))
        except StaleState:
            raise StaleState(f"the warm pool of {pool.job} is no longer idle") from None
        logger.info(release.reason, extra={"job": pool.job, "sagemaker_job": pool.name})
        self.report.changes.append(
            PoolReleased(pool.job, pool.name, release.for_job, now, pool.share, release.reason)
        )
        return True

    # -- starting a job ---------------------------------------------------------------------

    def create(self, job: Job, sagemaker_name: str, pool: WarmPool | None = None) -> None:
        """CreateTrainingJob for ``job``'s claimed attempt, and what its outcome means; on a
        warm ``pool`` (claimed for it), whether SageMaker moved the pool to it."""
        request = plans.request_on(job.request, job.training_plan)
        try:
            request = self._with_parents_models(request)
        except SageMakerError as exc:  # it cannot start without them: as a refused start
            result = StartResult(StartOutcome.REFUSED, f"could not read a parent's model: {exc}")
        else:
            result = self.sagemaker.start(request, sagemaker_name, job.name, len(job.attempts) + 1)
        log = {"job": job.name, "sagemaker_job": sagemaker_name, "outcome": result.outcome.value}
        if result.outcome is StartOutcome.UNKNOWN:
            logger.warning(
                f"start outcome unknown, the sweep will check: {result.message}", extra=log
            )
            return  # the sweep checks the job, and the pool it claimed
        if result.outcome is StartOutcome.REFUSED:
            self.report.refused_starts += 1
            logger.warning(f"start refused, will retry: {result.message}", extra=log)
        elif result.outcome is StartOutcome.INVALID:
            logger.warning(f"start failed: {result.message}", extra=log)
        pool_found = self._describe_pool(pool) if pool is not None else _UNKNOWN
        described = None if pool_found is _UNKNOWN else pool_found
        warm = lifecycle.started_on(job, sagemaker_name, described)

        def decide(current: Job | None) -> lifecycle.Decision:
            if current is None:
                return lifecycle.Ignore("the job is gone")
            return lifecycle.on_start(
                current, sagemaker_name, result, self.clock(), self.backoff, warm
            )

        # Cancelled while CreateTrainingJob was under way, it is decided again as it is now.
        decided_on = self.decide(job, decide)
        if decided_on is job and result.outcome is StartOutcome.STARTED:
            self.report.waits_at_start.append(self.clock() - job.submitted_at)
            self.report.warm_starts += warm is not None
            logger.info("job started" + (" on a warm pool" if warm else ""), extra=log)
        if pool is not None and pool_found is not _UNKNOWN:
            self.act_on_pool(pool, lifecycle.on_pool(pool, described, self.clock(), True))

    def _with_parents_models(self, request: dict) -> dict:
        """``request`` with the models of the parents it uses filled in (each one's last
        attempt, which completed: an afterok dependency held). SageMakerError if SageMaker
        cannot say where one is now."""
        models = {}
        for parent in carry.parents_used(request):
            found = self.store.get(parent)
            last = found.attempts[-1].sagemaker_job_name if found and found.attempts else None
            described = self.sagemaker.describe(last) if last else None
            if not described or not described.model_artifacts:
                raise SageMakerError(f"{parent} left no model that SageMaker knows of")
            models[parent] = described.model_artifacts
        return carry.resolve(request, models) if models else request

    def _describe_pool(self, pool: WarmPool):
        """The job that left ``pool``, described (None: SageMaker has no such job), or
        ``_UNKNOWN`` if SageMaker would not say: the sweep checks the pool later."""
        try:
            return self.sagemaker.describe(pool.name)
        except SageMakerError as exc:
            logger.warning(f"could not check a warm pool now: {exc}", extra={"job": pool.job})
            return _UNKNOWN

    # -- lifecycle decisions ----------------------------------------------------------------

    def decide(
        self, job: Job | None, decide: Callable[[Job | None], lifecycle.Decision]
    ) -> Job | None:
        """Carry out ``decide(job)``; when the write loses a race, re-read and decide again.
        The job as last read when a decision held (None: it kept changing, or is gone)."""
        current, name = job, job and job.name

        def decide_once() -> Job | None:
            nonlocal current
            try:
                self.act(current, decide(current))
                return current
            except StaleState:
                current = self.store.get(name)  # read again, decide again
                raise

        return until_settled(decide_once, RETRIES, lambda: None)

    def act(self, job: Job, decision: lifecycle.Decision) -> None:
        """Write one lifecycle decision (raises StaleState if the job changed meanwhile)."""
        now = self.clock()
        match decision:
            case lifecycle.Ignore(why):
                logger.debug(f"nothing to do: {why}", extra={"job": job and job.name})
            case lifecycle.MarkRunning(attempt):
                self.store.mark_running(job, attempt)
                self.changed(job, JobState.RUNNING, now, attempt=attempt.number)
            case lifecycle.Settle(state, attempts, failure_reason, pool, note):
                changes: dict = {}
                if attempts is not None:
                    changes["attempts"] = attempts
                if failure_reason is not None:
                    changes["failure_reason"] = failure_reason
                self.report.billed(self.store.settle(job, state, now, pool=pool, **changes))
                ended = attempts[-1] if attempts else None
                reason = failure_reason or (ended and (ended.preempted_by or ended.failure_reason))
                if state is JobState.PREEMPTED and reason:
                    reason = f"preempted by {reason}"
                reason = note or reason
                self.changed(job, state, now, reason, attempt=ended and ended.number)
                if state is JobState.COMPLETED and attempts:
                    self._record_run(job, attempts[-1])
                log = {"job": job.name, "sagemaker_job": job.attempt_name}
                logger.info(f"job {state}" + (", leaving a warm pool" if pool else ""), extra=log)
            case lifecycle.BackOff(not_before, failures, last_error, attempts):
                changes = {} if attempts is None else {"attempts": attempts}
                held = self.store.settle(
                    job,
                    JobState.PENDING,
                    now,
                    not_before=not_before,
                    start_failures=failures,
                    last_error=last_error,
                    **changes,
                )
                self.report.billed(held)
                self.changed(job, JobState.PENDING, now, f"start refused, will retry: {last_error}")
            case lifecycle.RetryStart():
                logger.info("retrying an interrupted start", extra={"job": job.name})
                self.create(job, job.attempt_name)
            case lifecycle.Stop(why):
                logger.info(f"stopping: {why}", extra={"job": job.name})
                self.sagemaker.stop(job.attempt_name)
            case lifecycle.StopForGood(why):
                audit = AuditEntry(now, Action.LIMIT_REACHED, tags.MAX_TOTAL_RUNTIME)
                self.store.begin_stop(
                    job, JobState.CANCELLING, now, audit=audit, failure_reason=why
                )
                self.changed(job, JobState.CANCELLING, now, why)
                logger.info(f"stopping for good: {why}", extra={"job": job.name})
                self.sagemaker.stop(job.attempt_name)

    def changed(self, job: Job, to_state: JobState, now: float, reason=None, **known) -> None:
        """Note a state change just written, for the queue's events (``job`` as it was)."""
        self.report.changes.append(StateChange.of(job, to_state, now, reason, **known))

    def head_of_line(
        self,
        kept: Mapping[str, Blocking],
        why: Mapping[str, WaitingFor],
        limits: tuple[HeadOfLineLimit, ...],
    ) -> bool:
        """After the sweep's pass: act on the jobs first in line past their HeadOfLineLimits
        and keep the counts for the next sweep (``kept``: the last sweep's). True if a job
        was failed (the jobs behind it may start)."""
        now = self.clock()
        counts, blocked = head_of_line.check(kept, why, limits, now)
        if counts != kept:
            self.store.set_blocking(counts)
        return sum(self.end_blocked(b, now) for b in blocked) > 0

    def end_blocked(self, blocked: Blocked, now: float) -> bool:
        """A job waited first in line past its HeadOfLineLimits: say so (its event, the
        metric) and, with action cancel, fail it. True if it was failed (its line moves)."""
        job = self.store.get(blocked.job)
        if job is None or not job.state.is_waiting:
            return False  # it started or ended since the pass: nothing is blocked
        self.report.blocked += 1
        action = blocked.action.value
        change = JobBlocked(job.name, blocked.why, blocked.waited_s, action, job.share, now)
        self.report.changes.append(change)
        logger.warning(blocked.message, extra={"job": job.name, "action": action})
        if blocked.action is not Act.CANCEL:
            return False
        audit = AuditEntry(now, Action.BLOCKED, "HeadOfLineLimits")
        try:
            self.store.end_waiting(job, now, audit, failure_reason=blocked.message)
        except StaleState:
            return False  # it moved on meanwhile; the next sweep counts again
        self.changed(job, JobState.FAILED, now, blocked.message)
        return True

    def _record_run(self, job: Job, attempt: Attempt) -> None:
        """Add a completed job's last attempt to the run times that expected starts use; a
        failed write costs one sample, never the job."""
        try:
            self.store.record_run(job.demand, job.priority, attempt.ended_at - attempt.started_at)
        except ClientError as exc:
            logger.warning(f"could not record the run time: {exc}", extra={"job": job.name})

    def act_on_outside(self, decision: outside.Hold | outside.Forget | None) -> bool:
        """Write a decision about a job started outside the queue; True if it freed
        instances (a pass may start more)."""
        if isinstance(decision, outside.Hold) and self.store.hold_outside(decision.job):
            counted = ", ".join(f"{n} x {t}" for t, n in decision.job.demand.items())
            logger.warning(
                f"a job started outside the queue holds {counted}",
                extra={"sagemaker_job": decision.job.name},
            )
        elif isinstance(decision, outside.Forget) and self.store.forget_outside(decision.name):
            logger.info(
                f"a job started outside the queue ended: {decision.why}",
                extra={"sagemaker_job": decision.name},
            )
            return True
        return False

    def act_on_pool(self, pool: WarmPool, decision: lifecycle.PoolDecision) -> None:
        """Write one decision about a warm pool; one that changed meanwhile is left alone."""
        log = {"job": pool.job, "sagemaker_job": pool.name}
        try:
            match decision:
                case lifecycle.ForgetPool(why, billed_s):
                    if pool.claimed_by is None:
                        held = self.store.release_pool(pool, self.clock(), billed_s=billed_s)
                    else:
                        held = self.store.drop_pool(pool, billed_s)
                    self.report.billed(held)
                    logger.info(f"warm pool gone: {why}", extra=log)
                case lifecycle.UnclaimPool(why):
                    self.store.unclaim_pool(pool)
                    logger.info(f"warm pool idle again: {why}", extra=log)
        except StaleState:
            logger.debug("the warm pool changed meanwhile", extra=log)
