"""The whole queue on one machine: emulated AWS, the real handler, a simulated clock."""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import boto3
from moto import mock_aws
from moto.events.models import EventPattern

from job_queue import checkpoints
from job_queue.capacity_config import split_capacity
from job_queue.config import Settings
from job_queue.costs import Prices
from job_queue.handler import SCHEDULED, Dependencies, handle
from job_queue.limits import DEFAULT_LIMITS, Limits
from job_queue.models import MAX_PRIORITY
from job_queue.sagemaker import outside_pattern, state_change_pattern
from job_queue.scheduler import Policy, Share, total_capacity
from job_queue.scheduler.budgets import Budget, Holder
from job_queue.share_config import dumps_shares, plan_entries_of
from job_queue.store.table import ATTRIBUTE_DEFINITIONS, KEY_SCHEMA, TTL_ATTRIBUTE
from tjq.local.calls import (
    ACCOUNT,
    DEFAULT_CALLER,
    EVERY_LOCAL_USER,
    REGION,
    ROLE_ARN,
    api_event,
)
from tjq.local.clock import SimClock
from tjq.local.dynamodb_usage import DynamoDBUsage, Serialized
from tjq.local.emulated_container import Containers
from tjq.local.emulated_events import log_queue_events
from tjq.local.emulated_plans import plans_from_options
from tjq.local.iam import create_training_roles
from tjq.local.sagemaker import LocalSageMaker


@functools.cache
def _session() -> boto3.session.Session:
    """One session for every local cloud of a process: reading the services' models, once
    per session, is most of what creating a client costs."""
    return boto3.session.Session()


@dataclass(frozen=True)
class LambdaContext:
    """What the Lambda runtime passes as ``context``."""

    function_name: str = "training-job-queue"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:training-job-queue"
    aws_request_id: str = "local"


class LocalCloud:
    """moto DynamoDB + :class:`LocalSageMaker` + the real handler, on a :class:`SimClock`.

    Requests go through the handler exactly as API Gateway would send them; SageMaker
    status changes reach it as EventBridge events that match the deployed rule.

    Example::

        with LocalCloud(capacity={"ml.p5.48xlarge": 2}) as cloud:
            status, body = cloud.api("POST", "/add-job", request)
            cloud.advance(600)          # jobs run, finish, and the queue moves on
    """

    def __init__(
        self,
        capacity: dict[str, int | str],
        allowed_role_arns: tuple[str, ...] = (ROLE_ARN,),
        run_seconds: float = 600.0,
        stop_seconds: float = 60.0,
        queue_name: str = "training-job-queue",
        table_name: str = "training-job-queue",
        clock: Callable[[], float] | None = None,
        endpoint_url: str | None = None,
        policy: Policy | None = None,
        shares: Sequence[Share] = (),
        default_share: str | None = None,
        keep_alive_seconds: int = 0,
        warm_pool_quota: dict[str, int] | None = None,
        cold_start_seconds: float = 0.0,
        warm_start_seconds: float = 0.0,
        admins: Sequence[str] = (EVERY_LOCAL_USER,),
        max_priority: int = MAX_PRIORITY,
        training_plans: Sequence[str] = (),
        checkpoint_s3_uri: str = "",
        limits: Limits = DEFAULT_LIMITS,
        prices: Prices | None = None,
        budgets: Mapping[Holder, Budget] | None = None,
        run_scripts: bool = False,
        wrap_client: Callable[[str, object], object] | None = None,
    ) -> None:
        """``run_scripts`` runs each job's training script (real time only: `smq local-api`
        passes the wall clock); ``checkpoint_s3_uri`` the CheckpointS3Uri setting;
        ``wrap_client(service, client)`` stands between the handler and each of its
        DynamoDB, SageMaker and EventBridge clients (the fault suite's faulty network)."""
        # Simulated time and in-process moto by default; `smq local-api` passes the wall
        # clock and a moto server's URL instead.
        self.clock = clock or SimClock()
        self._endpoint_url = endpoint_url
        # With quota shares, as in the Lambda, their limits make up the capacity; types
        # given as "unlimited" are not capped (and have no emulated account limit).
        capacity, uncapped, plans = split_capacity(capacity)
        capacity = total_capacity(shares) if shares else capacity
        plans = plan_entries_of(shares) if shares else plans
        emulated = plans_from_options(training_plans, self.clock(), REGION, ACCOUNT)
        self.settings = Settings(
            table_name=table_name,
            capacity=capacity,
            shares=tuple(shares),
            shares_text=dumps_shares(shares) if shares else "",
            default_share=default_share,
            allowed_role_arns=frozenset(allowed_role_arns),
            queue_name=queue_name,
            policy=policy or Policy(),
            keep_alive_seconds=keep_alive_seconds,
            admin_principals=tuple(admins),
            uncapped=uncapped,
            training_plans=plans,
            # The emulated plans are the ones the queue may describe (TrainingPlanArns).
            training_plan_arns=frozenset(plan.arn for plan in emulated),
            max_priority=max_priority,
            checkpoint_s3_uri=checkpoints.check_base_uri(checkpoint_s3_uri),
            limits=limits,
            prices=prices or Prices(),
            budgets=dict(budgets or {}),
        )
        self._run_scripts = run_scripts
        self._wrap = wrap_client or (lambda _service, client: client)
        # Only jobs over the queue's capacity would hit these limits: the queue must not.
        # Unless told otherwise, the account may keep its whole capacity in warm pools.
        self.sagemaker = LocalSageMaker(
            self.clock,
            run_seconds,
            stop_seconds,
            account_limits=dict(capacity),
            region=REGION,
            warm_pool_quota=dict(capacity) if warm_pool_quota is None else warm_pool_quota,
            cold_start_seconds=cold_start_seconds,
            warm_start_seconds=warm_start_seconds,
        )
        # Plans given as NAME=TYPE:COUNT:START:END, offsets from now (smq local-api's option).
        self.sagemaker.add_plans(emulated)
        # The template's two rules: this queue's jobs, and jobs no queue started on its types.
        self._rules = [
            EventPattern.load(json.dumps(state_change_pattern(queue_name))),
            EventPattern.load(json.dumps(outside_pattern(sorted(capacity)))),
        ]
        self._mock = None if endpoint_url else mock_aws()
        self._lost_events = 0
        # Lambda gives each execution environment one invocation at a time, and Powertools'
        # resolver keeps the request it is answering in a class attribute: requests answered
        # on overlapping threads would read each other's. So API requests take turns here;
        # SageMaker's events and the sweep (no resolver) still overlap them, as in AWS.
        self._api_turn = threading.Lock()
        self.delivered: list[dict] = []
        self.dynamodb_usage = DynamoDBUsage()

    def __enter__(self) -> LocalCloud:
        if self._mock:
            self._mock.start()
        lock = threading.Lock()
        dynamodb = self._client("dynamodb")
        try:
            dynamodb.create_table(
                TableName=self.settings.table_name,
                KeySchema=KEY_SCHEMA,
                AttributeDefinitions=ATTRIBUTE_DEFINITIONS,
                BillingMode="PAY_PER_REQUEST",
            )
            dynamodb.update_time_to_live(
                TableName=self.settings.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
            )
        except dynamodb.exceptions.ResourceInUseException:
            pass  # the table survives a restart of the emulator's client
        sagemaker = self._client("sagemaker")
        self.sagemaker.install(sagemaker)
        self.sagemaker_client = sagemaker  # as anyone else in the account calls SageMaker
        self.iam = self._client("iam")
        create_training_roles(self.iam, sorted(self.settings.allowed_role_arns))
        self.dynamodb = Serialized(dynamodb, lock, self.dynamodb_usage)
        events = self._client("events")
        self.logs = self._client("logs")
        log_queue_events(events, self.logs, self.settings.queue_name, REGION, ACCOUNT)
        self.sagemaker.logs = self.logs  # the emulated containers write a few lines each
        self.s3 = self._client("s3")
        if self.settings.checkpoint_s3_uri:
            bucket, _ = checkpoints.split_uri(self.settings.checkpoint_s3_uri)
            with contextlib.suppress(self.s3.exceptions.BucketAlreadyOwnedByYou):
                self.s3.create_bucket(Bucket=bucket)
        if self._run_scripts:
            self.sagemaker.containers = Containers(self.s3)
        self.deps = Dependencies.from_clients(
            self.settings,
            self._wrap("dynamodb", self.dynamodb),
            self._wrap("sagemaker", sagemaker),
            clock=self.clock,
            sleep=getattr(self.clock, "sleep", time.sleep),
            events=self._wrap("events", events),
            s3=self.s3,
        )
        return self

    def _client(self, service: str):
        return _session().client(service, region_name=REGION, endpoint_url=self._endpoint_url)

    def __exit__(self, *exc) -> None:
        self.sagemaker.close()
        if self._mock:
            self._mock.stop()

    # -- what users and AWS do --------------------------------------------------------------

    def api(
        self,
        method: str,
        path: str,
        body: dict | str | None = None,
        caller: str = DEFAULT_CALLER,
    ) -> tuple[int, dict]:
        """Call the private API as API Gateway would invoke the Lambda, signed by ``caller``
        (an IAM user or role session ARN)."""
        if body is not None and not isinstance(body, str):
            body = json.dumps(body)
        response = self.invoke_api(method, path, body, caller=caller)
        return response["statusCode"], json.loads(response["body"] or "null")

    def invoke_api(
        self,
        method: str,
        path: str,
        body: str | None,
        headers: dict | None = None,
        caller: str = DEFAULT_CALLER,
    ) -> dict:
        """The Lambda's proxy response to an API Gateway REST event for ``path`` (with its
        query string, if any)."""
        event = api_event(method, path, body, headers, caller)
        with self._api_turn:
            return handle(event, LambdaContext(), self.deps)

    def pump(self) -> None:
        """Wall-clock mode: apply the status changes due by now and deliver their events."""
        self.sagemaker.run_until(self.clock())
        self.deliver_events()

    def advance(self, seconds: float) -> None:
        """Let simulated time pass: jobs finish and stop, and their events are delivered."""
        target = self.clock() + seconds
        self.deliver_events()
        while (due := self.sagemaker.next_change_at()) is not None and due <= target:
            self.clock.set(due)
            self.sagemaker.run_until(due)
            self.deliver_events()
        self.clock.set(target)

    def sweep(self) -> None:
        """The scheduled reconcile sweep."""
        handle(
            {"detail-type": SCHEDULED, "source": "aws.events", "detail": {}},
            LambdaContext(),
            self.deps,
        )

    def lose_next_events(self, count: int) -> None:
        """EventBridge drops the next ``count`` matching events (the sweep must repair)."""
        self._lost_events += count

    def matches(self, event: dict) -> bool:
        """Whether one of the template's rules sends this SageMaker event to the queue."""
        return any(rule.matches_event(event) for rule in self._rules)

    def deliver_events(self) -> None:
        """Invoke the handler with every queued SageMaker event the rule matches."""
        while self.sagemaker.events:
            event = self.sagemaker.events.popleft()
            if not self.matches(event):
                continue
            if self._lost_events:
                self._lost_events -= 1
                continue
            self.delivered.append(event)
            handle(event, LambdaContext(), self.deps)

    # -- reading -----------------------------------------------------------------------------

    def jobs(self) -> list[dict]:
        """Every row of GET /jobs, page after page."""
        from tjq.api import every_row

        def page(token: str | None) -> dict:
            status, body = self.api("GET", "/jobs" + (f"?next_token={token}" if token else ""))
            assert status == 200, body
            return body

        return every_row(page)

    def table(self) -> list[tuple[str, str, int]]:
        """(name, state, priority) per row of GET /jobs, as the blog's table shows them."""
        return [(j["name"], j["state"], j["priority"]) for j in self.jobs()]
