"""The queue's use cases: submit, cancel, reprioritise, react to SageMaker, reconcile, schedule.

Each public method reads what it needs, makes one decision, writes it with a conditional
write, and then runs a scheduling pass, so whatever frees capacity starts the next job
straight away (no lost wake-up).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from job_queue import access, checkpoints, lifecycle, outside, tags, warm_pools
from job_queue.access import Caller
from job_queue.actions import Actions
from job_queue.admission import admit
from job_queue.config import Settings
from job_queue.dependents import DependentJobs
from job_queue.errors import JobConflict, JobNotFound, SageMakerError, StaleState
from job_queue.layout import Layout
from job_queue.listing import Listing, list_page
from job_queue.models import Action, AuditEntry, Job, JobState
from job_queue.outlook import Outlook, outlook_of, reasons, still_waiting
from job_queue.report import Report
from job_queue.request import parse_priority, validate_submission
from job_queue.retry import RETRIES, busy, until_settled
from job_queue.run_time_settings import RunTimeSettings
from job_queue.sagemaker import SageMakerGateway, SageMakerStatus
from job_queue.scheduler import (
    ActiveJob,
    LostWork,
    Plan,
    fair_share,
)
from job_queue.scheduler.forecast import RunHistory
from job_queue.scheduler.order import SavedAt
from job_queue.scheduler.snapshot import OutsideJob, WarmPool, after, started_names
from job_queue.scheduling import Scheduled, View, plan_pass
from job_queue.store import DynamoJobStore, Holders

logger = Logger(child=True)

_SCHEDULING_ROUNDS = 16  # a pass that keeps losing races means others keep scheduling


@dataclass(frozen=True)
class Submitted:
    """A submission's answer: the job, its place in line, and whether it is new."""

    job: Job
    outlook: Outlook
    created: bool


class QueueService(RunTimeSettings):
    """The queue's behaviour, over a store and a SageMaker gateway.

    Example::

        service = QueueService(DynamoJobStore(dynamodb, "queue"),
                               SageMakerGateway(sagemaker, "queue"), settings)
        submitted = service.submit(create_training_job_request, caller)
    """

    def __init__(
        self,
        store: DynamoJobStore,
        sagemaker: SageMakerGateway,
        settings: Settings,
        clock: Callable[[], float] = time.time,
        checkpoint_times: SavedAt | None = None,
    ) -> None:
        self.store = store
        self._saved_at = checkpoint_times  # read only when a pass chooses victims
        self.sagemaker = sagemaker
        self.settings = settings
        self.clock = clock
        self.report = Report()
        self._backoff = lifecycle.Backoff(
            settings.start_retry_base_seconds, settings.start_retry_max_seconds
        )
        self._actions = Actions(store, sagemaker, clock, self._backoff, self.report)
        self.dependents = DependentJobs(store, self.report, clock)

    # -- API -------------------------------------------------------------------------------

    def submit(self, request: dict, caller: Caller) -> Submitted:
        """Queue a CreateTrainingJob request; an identical resubmission returns the job.

        The holders are read once (with the run-time history, in one call): the layout, the
        pass and the answer's outlook all start from that reading (a pass that loses a race
        reads them again)."""
        held, history = self.store.holders_and_history()
        layout = self.layout(held)
        submission = validate_submission(request, self.settings.allowed_role_arns)
        admitted = admit(submission, layout)
        share = admitted.share
        access.check_submit(
            caller, submission.priority, layout.share(share), self._ceiling(layout, share)
        )
        self.dependents.check_parents(submission.dependency)
        queued = warm_pools.with_default_keep_alive(request, self.settings.keep_alive_seconds)
        queued = checkpoints.with_default_location(
            queued, self.settings.checkpoint_s3_uri, submission.name
        )
        now = self.clock()
        job = Job(
            name=submission.name,
            priority=submission.priority,
            seq=self.store.next_seq(),
            demand=admitted.demand,
            helpers=admitted.helpers,
            state=JobState.PENDING,
            submitted_at=now,
            request=queued,
            request_hash=submission.request_hash,
            share=share,
            submitted_by=caller.arn,
            submitter=submission.fair_share_id or caller.principal,
            history=(AuditEntry(now, Action.SUBMITTED, caller.arn),),
            checkpoint=submission.checkpoint,
            dependency=submission.dependency,
        )
        if not self.store.add(job):  # a job of that name is queued already
            existing = self.store.get(submission.name)
            if existing.request_hash != submission.request_hash:
                raise JobConflict(
                    f"a job named {submission.name} already exists ({existing.state}) with a "
                    "different request; choose another TrainingJobName"
                )
            return Submitted(existing, self.outlook(existing, (held, history)), created=False)
        self._actions.changed(job, JobState.PENDING, now, submitted=True)
        logger.info("job queued", extra={"job": job.name, "priority": job.priority})
        scheduled = self.schedule(held)
        started = started_names(scheduled.plan)
        if job.name in started:
            return Submitted(self.get(job.name), Outlook(), created=True)  # with its attempt
        out_of_line = None
        if job.dependency is not None and (job := self.get(job.name)).waits_on_parents:
            out_of_line = self.dependents.out_of_line(held)
        # Its place in line reads on from where the pass stopped reading the queue.
        answer = outlook_of(
            scheduled.reading, scheduled.policy, scheduled.seen, job, history, started, out_of_line
        )
        if answer.position is None and not (job := self.get(job.name)).state.is_waiting:
            return Submitted(job, Outlook(), created=True)  # an event's pass started it
        self.report.submitted_waiting(job.name, answer.waiting_for)
        return Submitted(job, answer, created=True)

    def get(self, name: str) -> Job:
        job = self.store.get(name)
        if job is None:
            raise JobNotFound(f"no job named {name} in the queue")
        return job

    def outlook(self, job: Job, read: tuple[Holders, RunHistory] | None = None) -> Outlook:
        """A waiting job's place in line and expected start (:mod:`job_queue.outlook`;
        ``read``: the holders and run history this request has read already)."""
        if not job.state.is_waiting:
            return Outlook()
        held, history = read or self.store.holders_and_history()
        viewed = self.view(held)
        out_of_line = self.dependents.out_of_line(held) if job.waits_on_parents else None
        return outlook_of(
            viewed.reading, viewed.policy, viewed.seen, job, history, out_of_line=out_of_line
        )

    def view(self, held: Holders) -> View:
        """What a pass sees from the holders just read (``held``)."""
        layout = self.layout(held)
        policy = self.settings.policy_in_effect(held.weights_text, held.weights_deployed)
        accounts = self.store.accounts(held)
        seen = self.with_budgets(layout.seen(held, self.clock(), accounts), layout, held)
        fair = policy.fair_share
        standing = fair_share.standings(seen, fair) if fair else None
        return View(layout, policy, seen, self.store.reading(accounts, standing), accounts)

    def layout(self, held: Holders | None = None) -> Layout:
        """The capacity and quota shares in effect (shares set at run time are kept on the
        holders' item)."""
        held = held or self.store.holders()
        return self.settings.layout(held.shares_text, held.shares_deployed, held.plans)

    def listing(self, limit: int, token: str | None = None) -> Listing:
        """One page of the queue: the holders, and ``limit`` waiting jobs from ``token``."""
        held, history = self.store.holders_and_history()
        viewed = self.view(held)
        return list_page(self.store, held, viewed, history, limit, token, self.dependents)

    def cancel(self, name: str, caller: Caller) -> Job:
        """A pending job leaves the queue; an active one is stopped and ends cancelled.
        Only its submitter or an admin may cancel it."""

        def cancel_once() -> tuple[Job, float | None]:
            job = self.get(name)
            access.check_owner(caller, name, job.submitted_by, "cancel")
            if job.state is JobState.CANCELLED:
                return job, None  # a cancel asked again (its answer was lost): done already
            if job.state.is_finished:
                raise JobConflict(f"job {name} already ended ({job.state}); nothing to cancel")
            if job.state == JobState.CANCELLING:
                return job, None  # already on its way: nothing to write
            now = self.clock()
            audit = AuditEntry(now, Action.CANCELLED, caller.arn)
            if job.state.is_waiting:
                self.store.end_waiting(job, now, audit)
            else:
                self.store.begin_stop(job, JobState.CANCELLING, now, audit=audit)
            return job, now

        job, now = until_settled(cancel_once, RETRIES, busy(f"job {name}"))
        if now is None:
            return job
        to = JobState.CANCELLED if job.state.is_waiting else JobState.CANCELLING
        self._actions.changed(job, to, now, f"cancelled by {caller.arn}")
        logger.info("job cancelled", extra={"job": name, "was": job.state.value})
        if job.state in (JobState.RUNNING, JobState.PREEMPTING):
            self.sagemaker.stop(job.attempt_name)
        # A starting job is stopped by its starter once CreateTrainingJob returns.
        self.schedule()
        return self.get(name)

    def set_priority(self, name: str, value: object, caller: Caller) -> Job:
        """Change a pending or active job's priority and reschedule at once. Only its
        submitter or an admin may, and only an admin above the priority ceiling."""
        priority = parse_priority(value)

        def change_once() -> tuple[Job, Holders | None]:
            job = self.get(name)
            access.check_owner(caller, name, job.submitted_by, "change the priority of")
            if job.state.is_finished or job.state == JobState.CANCELLING:
                raise JobConflict(f"job {name} is {job.state}; its priority can no longer change")
            if job.priority == priority:
                return job, None
            held = self.store.holders()
            access.check_priority_change(
                caller, job.priority, priority, self._ceiling(self.layout(held), job.share)
            )
            now = self.clock()
            audit = AuditEntry(
                now,
                Action.PRIORITY_CHANGED,
                caller.arn,
                from_priority=job.priority,
                to_priority=priority,
            )
            self.store.change_priority(job, priority, now, audit)
            return job, held

        job, held = until_settled(change_once, RETRIES, busy(f"job {name}"))
        if held is None:
            return job  # it had that priority already
        logger.info("priority changed", extra={"job": name, "from": job.priority, "to": priority})
        # A waiting job's change leaves the holders as read; an active job's entry moved on.
        self.schedule(held if job.state.is_waiting else None)
        return self.get(name)

    # -- SageMaker events and the sweep ----------------------------------------------------

    def on_state_change(self, detail: dict) -> None:
        """A 'SageMaker Training Job State Change' event. Foreign, stale and repeated events
        change nothing. A job that may have left a warm pool is described first; if SageMaker
        does not answer, the event fails and is retried (the sweep repairs it anyway)."""
        sagemaker_name = detail.get("TrainingJobName")
        event_tags = detail.get("Tags") or {}
        name = tags.queued_job(event_tags, self.settings.queue_name)
        if name is None:
            if outside.is_outside(event_tags):
                self._on_outside(detail)
            else:
                logger.debug("event for another queue's job", extra={"job": sagemaker_name})
            return
        status = SageMakerStatus.parse(detail.get("TrainingJobStatus"))
        reason = detail.get("FailureReason")
        job = self.store.get(name)
        found = None
        if lifecycle.may_leave_pool(job, sagemaker_name, status, reason):
            found = self.sagemaker.describe(sagemaker_name)
        self._actions.decide(
            job,
            lambda current: lifecycle.on_status(
                current,
                sagemaker_name,
                status,
                reason,
                self.clock(),
                self._backoff,
                found,
                self.settings.limits,
            ),
        )
        self.schedule()

    def _on_outside(self, detail: dict) -> None:
        """A job no queue started, on the capped types: hold or free its instances."""
        decision = outside.on_event(detail, self.layout().capacity, self.clock())
        if self._actions.act_on_outside(decision):
            self.schedule()

    def reconcile(self) -> None:
        """Repair drift (a missed event, an interrupted start or stop, a warm pool that ended,
        an outside job that ended) from DescribeTrainingJob on everything the table says
        holds instances, then schedule."""
        self.refresh_plans()
        held = self.store.holders()
        for holder in [*held.jobs, *held.pools, *held.outside]:
            try:
                if isinstance(holder, OutsideJob):
                    found = self.sagemaker.describe(holder.name)
                    # Whatever it frees, the pass at the end of the sweep uses.
                    self._actions.act_on_outside(outside.on_description(holder, found))
                elif isinstance(holder, WarmPool):
                    found = self.sagemaker.describe(holder.name)
                    self._actions.act_on_pool(
                        holder, lifecycle.on_pool(holder, found, self.clock())
                    )
                else:
                    self._repair(holder)
            except (StaleState, SageMakerError) as exc:
                # Another invocation moved it on, or SageMaker refused for now: the next
                # sweep looks again. One holder must not stop the sweep for the others.
                name = getattr(holder, "job", None) or holder.name
                logger.warning(f"could not check now: {exc}", extra={"job": name})
        layout, accounts = self.layout(held), self.store.accounts(held)
        self.report.queue_depth = self.store.depth(list(layout.capacity), None, accounts)
        for share in layout.shares:
            self.report.waiting_by_share[share.name] = self.store.depth(
                list(layout.capacity), share.name, accounts
            )
        if layout.shares:
            self.report.queue_depth += sum(self.report.waiting_by_share.values())
        # Kept for GET /jobs, which then need not count a deep queue on every page.
        self.store.set_waiting_count(self.report.queue_depth, self.clock())
        scheduled = self.schedule()
        started = started_names(scheduled.plan)
        waiting = still_waiting(scheduled.reading, scheduled.seen, started)
        why = reasons(scheduled.seen, waiting, scheduled.policy)
        unread = self.report.queue_depth - len(started) - len(waiting)
        out_of_line = self.dependents.settled.waiting.values()  # as the pass's first step saw
        self.report.count_reasons([*why.values(), *out_of_line], unread)
        if self._actions.head_of_line(held.blocking, why, self.settings.limits.head_of_line):
            self.schedule()  # the jobs behind one it failed may start now
        self.report_last_month(held)
        self.warn_of_budgets(scheduled.seen, held)

    def _repair(self, active: ActiveJob) -> None:
        job = self.store.get(active.name)
        if job is None or not job.state.holds_instances:
            return
        described = job.attempt_name
        found = self.sagemaker.describe(described)
        self._actions.decide(
            job,
            lambda current: lifecycle.on_description(
                current,
                described,
                found,
                active.started_at,
                self.clock(),
                self._backoff,
                self.settings.limits,
            ),
        )

    # -- scheduling ------------------------------------------------------------------------

    def schedule(self, held: Holders | None = None) -> Scheduled:
        """One scheduling pass: read the holders (``held``: as this invocation just read
        them), settle the jobs out of line for their dependency, read as much of the queue
        as needed, plan, act. A lost race (another invocation
        changed the holders) reads them again and plans again."""
        last: Scheduled | None = None  # set by the first round

        def pass_once() -> Scheduled:
            nonlocal held, last
            current, held = held or self.store.holders(), None  # a retry reads them anew
            if last is None:  # the first round: jobs whose dependency holds join the line
                self.dependents.settle(current)
            viewed = self.view(current)
            seen, reading, policy = viewed.seen, viewed.reading, viewed.policy
            last = Scheduled(Plan(), seen, reading, policy)
            self.report.record_usage(seen.active, seen.pools, viewed.layout, seen.outside, seen.now)
            lost_work = LostWork(seen.now, self._saved_at)
            decided = plan_pass(seen, viewed.layout, reading, policy, lost_work)
            if not decided.empty:
                self._actions.carry_out(decided, current)  # StaleState: another acted first
            return Scheduled(decided, after(seen, decided), reading, policy)

        def gave_up() -> Scheduled:
            logger.warning("scheduling pass gave up after repeated races; the next event retries")
            return last

        return until_settled(pass_once, _SCHEDULING_ROUNDS, gave_up)

    # -- helpers ---------------------------------------------------------------------------

    def _ceiling(self, layout: Layout, share: str | None) -> access.Ceiling:
        return access.ceiling(self.settings.max_priority, layout.share(share))
