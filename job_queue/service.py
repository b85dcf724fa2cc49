"""The queue's use cases: submit, cancel, reprioritise, react to SageMaker, reconcile, schedule.

Each public method reads what it needs, makes one decision, writes it with a conditional
write, and then runs a scheduling pass, so whatever frees capacity starts the next job
straight away (no lost wake-up).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from aws_lambda_powertools import Logger

from job_queue import access, checkpoints, lifecycle, outside, plans, tags, warm_pools
from job_queue.access import Caller
from job_queue.actions import Actions
from job_queue.admission import admit
from job_queue.config import Layout, Settings
from job_queue.errors import JobConflict, JobNotFound, SageMakerError, StaleState
from job_queue.listing import Listing, list_page
from job_queue.models import Action, AuditEntry, Job, JobState
from job_queue.outlook import Outlook, outlook_of
from job_queue.report import Report
from job_queue.request import parse_priority, validate_submission
from job_queue.retry import until_settled
from job_queue.sagemaker import SageMakerGateway, SageMakerStatus
from job_queue.scheduler import (
    ActiveJob,
    LostWork,
    Plan,
    Planner,
)
from job_queue.scheduler.order import SavedAt
from job_queue.scheduler.shares import ShareUsage, usage_with_plans
from job_queue.scheduler.snapshot import OutsideJob, WarmPool
from job_queue.share_config import dumps_shares, plan_entries_of
from job_queue.store import DynamoJobStore, Holders
from job_queue.store.table import UNCAPPED

logger = Logger(child=True)

_RETRIES = 8  # re-reads after a lost race before giving up on one request
_SCHEDULING_ROUNDS = 16  # a pass that keeps losing races means others keep scheduling


@dataclass(frozen=True)
class Submitted:
    """A submission's answer: the job, its place in line, and whether it is new."""

    job: Job
    outlook: Outlook
    created: bool


class QueueService:
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

    # -- API -------------------------------------------------------------------------------

    def submit(self, request: dict, caller: Caller) -> Submitted:
        """Queue a CreateTrainingJob request; an identical resubmission returns the job."""
        layout = self.layout()
        submission = validate_submission(request, self.settings.allowed_role_arns)
        admitted = admit(submission, layout)
        share = admitted.share
        access.check_submit(
            caller, submission.priority, layout.share(share), self._ceiling(layout, share)
        )
        queued = warm_pools.with_default_keep_alive(request, self.settings.keep_alive_seconds)
        queued = checkpoints.with_default_location(
            queued, self.settings.checkpoint_s3_uri, submission.name
        )
        existing = self.store.get(submission.name)
        if existing is None:
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
                history=(AuditEntry(now, Action.SUBMITTED, caller.arn),),
            )
            if self.store.add(job):
                self._actions.changed(job, JobState.PENDING, now, submitted=True)
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

    def outlook(self, job: Job) -> Outlook:
        """A waiting job's place in line and expected start (:mod:`job_queue.outlook`)."""
        if not job.state.is_waiting:
            return Outlook()
        held = self.store.holders()
        layout = self.layout(held)
        return outlook_of(self.store, self.settings, held, layout, job, self.clock())

    def layout(self, held: Holders | None = None) -> Layout:
        """The capacity and quota shares in effect (shares set at run time are kept on the
        holders' item)."""
        held = held or self.store.holders()
        return self.settings.layout(held.shares_text, held.shares_deployed, held.plans)

    def listing(self, limit: int, token: str | None = None) -> Listing:
        """One page of the queue: the holders, and ``limit`` waiting jobs from ``token``."""
        held = self.store.holders()
        return list_page(
            self.store, self.settings, held, self.layout(held), self.clock(), limit, token
        )

    def shares(self) -> tuple[Layout, list[ShareUsage], dict[str, int], Holders]:
        """The shares in effect, each share's use per instance type, its waiting jobs, and
        the holders they were read from (which say who last replaced the shares)."""
        held = self.store.holders()
        layout = self.layout(held)
        now = self.clock()
        holders = [*held.jobs, *held.idle_pools(now)]
        usage = usage_with_plans(layout.shares, holders, layout.plans, now)
        types = list(layout.capacity)
        waiting = {s.name: self.store.depth(types, s.name) for s in layout.shares}
        return layout, usage, waiting, held

    def set_shares(self, value: object, caller: Caller) -> Layout:
        """Replace the quota shares without a deployment (admins only), then schedule: a
        lowered limit makes jobs over it reclaimable, a raised one lets waiting jobs start."""
        access.check_admin(caller, "replace the shares")
        shares = self.settings.replacement_shares(value)

        def replace_once() -> None:
            held = self.store.holders()
            text, deployed = dumps_shares(shares), self.settings.shares_text
            self.store.set_shares(text, deployed, held.version, caller.arn, self.clock())

        until_settled(replace_once, _RETRIES, _busy("the queue", "while the shares were replaced"))
        logger.info("shares changed", extra={"shares": [s.name for s in shares]})
        self.schedule()
        return self.layout()

    def cancel(self, name: str, caller: Caller) -> Job:
        """A pending job leaves the queue; an active one is stopped and ends cancelled.
        Only its submitter or an admin may cancel it."""

        def cancel_once() -> tuple[Job, float | None]:
            job = self.get(name)
            access.check_owner(caller, name, job.submitted_by, "cancel")
            if job.state.is_finished:
                raise JobConflict(f"job {name} already ended ({job.state}); nothing to cancel")
            if job.state == JobState.CANCELLING:
                return job, None  # already on its way: nothing to write
            now = self.clock()
            audit = AuditEntry(now, Action.CANCELLED, caller.arn)
            if job.state.is_waiting:
                self.store.cancel_waiting(job, now, audit)
            else:
                self.store.begin_stop(job, JobState.CANCELLING, now, audit=audit)
            return job, now

        job, now = until_settled(cancel_once, _RETRIES, _busy(f"job {name}"))
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

        def change_once() -> tuple[Job, bool]:
            job = self.get(name)
            access.check_owner(caller, name, job.submitted_by, "change the priority of")
            if job.state.is_finished or job.state == JobState.CANCELLING:
                raise JobConflict(f"job {name} is {job.state}; its priority can no longer change")
            if job.priority == priority:
                return job, False
            access.check_priority_change(
                caller, job.priority, priority, self._ceiling(self.layout(), job.share)
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
            return job, True

        job, changed = until_settled(change_once, _RETRIES, _busy(f"job {name}"))
        if not changed:
            return job
        logger.info("priority changed", extra={"job": name, "from": job.priority, "to": priority})
        self.schedule()
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
                current, sagemaker_name, status, reason, self.clock(), self._backoff, found
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
        layout = self.layout(held)
        self.report.queue_depth = self.store.depth(list(layout.capacity))
        for share in layout.shares:
            self.report.waiting_by_share[share.name] = self.store.depth(
                list(layout.capacity), share.name
            )
        if layout.shares:
            self.report.queue_depth += sum(self.report.waiting_by_share.values())
        # Kept for GET /jobs, which then need not count a deep queue on every page.
        self.store.set_waiting_count(self.report.queue_depth, self.clock())
        self.schedule()

    def _repair(self, active: ActiveJob) -> None:
        job = self.store.get(active.name)
        if job is None or not job.state.holds_instances:
            return
        described = job.attempt_name
        found = self.sagemaker.describe(described)
        self._actions.decide(
            job,
            lambda current: lifecycle.on_description(
                current, described, found, active.started_at, self.clock(), self._backoff
            ),
        )

    # -- scheduling ------------------------------------------------------------------------

    def schedule(self) -> Plan:
        """One scheduling pass: read the holders and as much of the queue as needed, plan,
        act. A lost race (another invocation changed the holders) re-reads and plans again.
        """

        def pass_once() -> Plan:
            held, plan = self._plan()
            if not plan.empty:
                self._actions.carry_out(plan, held)  # StaleState: another invocation acted
            return plan

        def gave_up() -> Plan:
            logger.warning("scheduling pass gave up after repeated races; the next event retries")
            return Plan()

        return until_settled(pass_once, _SCHEDULING_ROUNDS, gave_up)

    def _plan(self) -> tuple[Holders, Plan]:
        held = self.store.holders()
        layout = self.layout(held)
        now = self.clock()
        pools = held.idle_pools(now)
        self.report.record_usage(held.jobs, pools, layout, held.outside, now)
        planner = Planner(
            held.jobs,
            layout.capacity,
            now,
            self.settings.policy,
            pools,
            held.outside,
            layout.plans,
            LostWork(now, self._saved_at),
            layout.shares,
        )
        partitions = [s.name for s in layout.shares] or [None]
        if layout.uncapped:
            # Jobs on uncapped types only start at once, whatever waits for capped ones.
            shares = list(dict.fromkeys([None, *partitions]))
            for waiting in self.store.waiting([UNCAPPED], shares=shares, multi=False):
                planner.offer(waiting)
        # The planner says which instance types are still open, so the store stops reading
        # a type's queue once a job of that type is held back.
        for waiting in self.store.waiting(list(layout.capacity), planner.is_open, partitions):
            planner.offer(waiting)
            if not planner.open_types:
                break
        return held, planner.plan()

    # -- training plans ----------------------------------------------------------------------

    def refresh_plans(self) -> None:
        """Read every training plan again (at cold start and in the sweep, never per event):
        one that cannot be read keeps its last reading, and the queue goes on without it."""
        held = self.store.holders()
        layout = self.layout(held)
        # With shares, the plans they name (shares set at run time may name others).
        entries = plan_entries_of(layout.shares) if layout.shares else self.settings.training_plans
        if entries:
            describe = self.sagemaker.describe_training_plan
            self.store.set_plans(plans.refresh(entries, held.plans, describe, self.clock()))

    # -- helpers ---------------------------------------------------------------------------

    def _ceiling(self, layout: Layout, share: str | None) -> access.Ceiling:
        return access.ceiling(self.settings.max_priority, layout.share(share))

    def _submitted(self, job: Job, created: bool) -> Submitted:
        return Submitted(job, self.outlook(job), created)


def _busy(what: str, during: str = "") -> Callable[[], NoReturn]:
    """What a request that kept losing races answers: 409, try again."""

    def refuse() -> NoReturn:
        if during:
            raise JobConflict(f"{what} kept changing {during}; try again")
        raise JobConflict(f"{what} is changing state too often; try again")

    return refuse
