"""Lambda entry point: routes API Gateway requests, SageMaker state changes and the
scheduled sweep to the queue service. Wiring only.

Handler: ``job_queue.handler.lambda_handler``.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from botocore.config import Config

from job_queue import queue_events
from job_queue.checkpoints import CheckpointTimes
from job_queue.config import Settings
from job_queue.routes import make_app
from job_queue.sagemaker import SageMakerGateway
from job_queue.service import QueueService
from job_queue.store import DynamoJobStore

STATE_CHANGE = "SageMaker Training Job State Change"
SCHEDULED = "Scheduled Event"

logger = Logger()


@dataclass(frozen=True)
class Dependencies:
    """What outlives one invocation: settings and AWS clients (created once per container)."""

    settings: Settings
    store: DynamoJobStore
    sagemaker: SageMakerGateway
    clock: Callable[[], float] = time.time
    plans_read: threading.Event = field(default_factory=threading.Event)  # at cold start
    events: object | None = None  # EventBridge client for the queue's events (None: none)
    # When jobs that save at an interval last saved (None: by their declaration alone).
    checkpoint_times: CheckpointTimes | None = None

    @classmethod
    def from_clients(
        cls,
        settings: Settings,
        dynamodb,
        sagemaker,
        clock=time.time,
        sleep=time.sleep,
        events=None,
        s3=None,
    ):
        return cls(
            settings=settings,
            store=DynamoJobStore(
                dynamodb,
                settings.table_name,
                settings.finished_retention_days * 86400,
                settings.policy.fair_share,
            ),
            sagemaker=SageMakerGateway(sagemaker, settings.queue_name, sleep=sleep),
            clock=clock,
            events=events,
            checkpoint_times=None if s3 is None else CheckpointTimes(s3),
        )


@functools.cache
def _from_environment() -> Dependencies:
    config = Config(
        retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20
    )
    return Dependencies.from_clients(
        Settings.from_environment(),
        boto3.client("dynamodb", config=config),
        boto3.client("sagemaker", config=config),
        events=boto3.client("events", config=config),
        s3=boto3.client("s3", config=config),
    )


def lambda_handler(event: dict, context) -> dict | None:
    return handle(event, context, _from_environment())


@logger.inject_lambda_context(clear_state=True)
def handle(event: dict, context, deps: Dependencies) -> dict | None:
    """Process one event with the given dependencies (the local runner passes its own)."""
    service = QueueService(
        deps.store, deps.sagemaker, deps.settings, deps.clock, deps.checkpoint_times
    )
    try:
        kind = event.get("detail-type")
        if not deps.plans_read.is_set():
            if kind != SCHEDULED:  # the sweep reads them anyway
                service.refresh_plans()
            deps.plans_read.set()
        if "httpMethod" in event:
            return make_app(service).resolve(event, context)
        if kind == STATE_CHANGE:
            service.on_state_change(event.get("detail") or {})
        elif kind == SCHEDULED:
            service.reconcile()
        else:
            logger.warning("ignoring an event of unknown kind", extra={"detail_type": kind})
        return None
    finally:
        _emit_metrics(service)
        if deps.events is not None and service.report.changes:
            queue_events.publish(deps.events, service.report.changes, deps.settings.queue_name)


def _emit_metrics(service: QueueService) -> None:
    # One metrics object per invocation: nothing is shared between overlapping invocations.
    metrics = EphemeralMetrics(
        namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "TrainingJobQueue"),
        service=service.settings.queue_name,
    )
    report = service.report
    if report.waits_at_start:
        metrics.add_metric("JobsStarted", MetricUnit.Count, len(report.waits_at_start))
        metrics.add_metric("WarmStarts", MetricUnit.Count, report.warm_starts)
        for wait in report.waits_at_start:
            metrics.add_metric("WaitSecondsAtStart", MetricUnit.Seconds, wait)
    if report.preemptions:
        metrics.add_metric("Preemptions", MetricUnit.Count, report.preemptions)
    for lost in report.lost_instance_seconds:
        metrics.add_metric("LostInstanceSeconds", MetricUnit.Seconds, lost)
    if report.blocked:
        metrics.add_metric("BlockedJobs", MetricUnit.Count, report.blocked)
    if report.refused_starts:
        metrics.add_metric("RefusedStarts", MetricUnit.Count, report.refused_starts)
    for itype, count in report.capacity.items():
        metrics.add_metric(f"Capacity.{itype}", MetricUnit.Count, count)
    for itype, count in report.instances_in_use.items():
        metrics.add_metric(f"InstancesInUse.{itype}", MetricUnit.Count, count)
    for itype, count in report.warm_pool_instances.items():
        metrics.add_metric(f"WarmPoolInstances.{itype}", MetricUnit.Count, count)
    if report.outside_instances:
        # The alarm watches the total: instances of capped types the queue did not start.
        total = sum(report.outside_instances.values())
        metrics.add_metric("InstancesOutsideQueue", MetricUnit.Count, total)
        for itype, count in report.outside_instances.items():
            metrics.add_metric(f"InstancesOutsideQueue.{itype}", MetricUnit.Count, count)
    if report.queue_depth is not None:
        metrics.add_metric("QueueDepth", MetricUnit.Count, report.queue_depth)
    for usage in report.share_usage:
        where = f"{usage.share}.{usage.instance_type}"
        metrics.add_metric(f"ShareInUse.{where}", MetricUnit.Count, usage.in_use)
        metrics.add_metric(f"ShareBorrowed.{where}", MetricUnit.Count, usage.borrowed)
    for share, count in report.waiting_by_share.items():
        metrics.add_metric(f"ShareWaiting.{share}", MetricUnit.Count, count)
    for code, count in report.waiting_by_reason.items():
        metrics.add_metric(f"WaitingJobs.{code}", MetricUnit.Count, count)
    if report.billable_instance_s:
        # What the usage ledger recorded (ended attempts and pools): the dashboard's
        # billable instance-hours per share.
        total = sum(report.billable_instance_s.values())
        metrics.add_metric("BillableInstanceSeconds", MetricUnit.Seconds, total)
        for share, seconds in report.billable_instance_s.items():
            if share is not None:
                metrics.add_metric(f"BillableInstanceSeconds.{share}", MetricUnit.Seconds, seconds)
    if metrics.metric_set:
        metrics.flush_metrics()
