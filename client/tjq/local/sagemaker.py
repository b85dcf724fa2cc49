"""A SageMaker training-job service with a realistic lifecycle, for tests and demos.

moto's SageMaker completes a job the moment it is created, has no StopTrainingJob and lets a
name be reused. This one answers the real boto3 client (it is hooked into the client's
``before-call`` event, so requests are serialized and responses parsed by botocore as usual)
and behaves like the service on a simulated clock:

* CreateTrainingJob → InProgress; Completed after the job's run time
  (``default_run_seconds``, or the job's ``simulated-run-seconds`` tag);
* StopTrainingJob → Stopping, then Stopped after ``stop_seconds``; instances stay held
  while Stopping;
* with ``containers`` (:mod:`tjq.local.emulated_container`, real time only), a job whose
  code the SDK uploaded runs its script instead: it ends when the script does, a stop sends
  the script SIGTERM, and its checkpoints go to and come from its CheckpointConfig;
* names are unique forever (ResourceInUse), unknown names are a ValidationException, and
  so is a tag value SageMaker refuses (a comma, over 256 characters);
* an account quota per instance type (ResourceLimitExceeded beyond it), and faults to
  inject: refused or throttled creates, and jobs that fail for lack of capacity;
* managed warm pools: a job with ``KeepAlivePeriodInSeconds`` that completes, is stopped or
  fails for its own reasons (not for capacity) keeps its instances Available for that long,
  if the per-type warm-pool quota allows; a later job whose configuration matches (RoleArn,
  instance type and count, volume size and KMS key, VPC subnets and security groups,
  inter-container encryption, network isolation) starts on the oldest such pool (Reused /
  InUse); pools count toward the account quota; UpdateTrainingJob with keep-alive 0 ends one
  at once (Terminated); a cold start takes ``cold_start_seconds``, a warm one
  ``warm_start_seconds``, before the job's run time;
* training plans (:mod:`tjq.local.emulated_plans`): DescribeTrainingPlan, and jobs with a
  ``TrainingPlanArn`` run only inside a reservation of their plan with room (Pending
  before), outside the account's on-demand limits;
* every status change is queued as an EventBridge "SageMaker Training Job State Change".

Operations it does not implement fall through to whatever else answers the client (moto).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import deque
from collections.abc import Callable

from botocore.awsrequest import AWSResponse
from botocore.parsers import create_parser

from tjq.local import emulated_logs, emulated_plans
from tjq.local import emulated_pools as pools
from tjq.local.emulated_container import Containers
from tjq.local.emulated_faults import FaultInjection
from tjq.local.emulated_job import (
    HOLDING,
    EmulatedJob,
    SageMakerFault,
    demand_of,
    describe,
    state_change_event,
)
from tjq.local.emulated_plans import TrainingPlans
from tjq.local.emulated_time import StatusChanges

RUN_SECONDS_TAG = "simulated-run-seconds"
JSON_CONTENT_TYPE = "application/x-amz-json-1.1"
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_TAG_VALUE = re.compile(r"^[\w\s.:/=+\-@]*$")  # SageMaker's [\p{L}\p{Z}\p{N}_.:/=+\-@]*


class LocalSageMaker(FaultInjection, TrainingPlans, StatusChanges):
    """The emulated service. Attach it to a boto3 SageMaker client with :meth:`install`.

    Example::

        sagemaker = LocalSageMaker(clock, default_run_seconds=600, stop_seconds=60)
        client = boto3.client("sagemaker", region_name="us-east-1")
        sagemaker.install(client)
        sagemaker.refuse_next_creates(1)            # one ResourceLimitExceeded
    """

    def __init__(
        self,
        clock: Callable[[], float],
        default_run_seconds: float = 600.0,
        stop_seconds: float = 60.0,
        account_limits: dict[str, int] | None = None,
        region: str = "us-east-1",
        account: str = "123456789012",
        warm_pool_quota: dict[str, int] | None = None,
        cold_start_seconds: float = 0.0,
        warm_start_seconds: float = 0.0,
    ) -> None:
        self.clock = clock
        self.default_run_seconds = default_run_seconds
        self.stop_seconds = stop_seconds
        self.account_limits = dict(account_limits or {})
        # Instances per type the account may keep in warm pools (None: no limit).
        self.warm_pool_quota = None if warm_pool_quota is None else dict(warm_pool_quota)
        self.cold_start_seconds = cold_start_seconds
        self.warm_start_seconds = warm_start_seconds
        self.region, self.account = region, account
        self.jobs: dict[str, EmulatedJob] = {}
        self.plans: dict[str, emulated_plans.EmulatedPlan] = {}  # by ARN
        self.events: deque[dict] = deque()  # state-change events not yet delivered
        self.peak_in_use: dict[str, int] = {}
        self.calls: dict[str, int] = {}  # every operation the client called, by name
        self._init_faults()
        # Called with each new job; may change its ends_at / end_reason (the simulator does).
        self.on_create: Callable[[EmulatedJob], None] | None = None
        self.logs = None  # a CloudWatch Logs client: the containers' log lines go there
        # Runs the jobs' scripts (smq local-api --run-scripts); None: jobs run on the clock.
        self.containers: Containers | None = None
        self._lock = threading.RLock()
        self._operations = {
            "CreateTrainingJob": self.create_training_job,
            "DescribeTrainingJob": self.describe_training_job,
            "StopTrainingJob": self.stop_training_job,
            "UpdateTrainingJob": self.update_training_job,
            "ListTags": self.list_tags,
            "DescribeTrainingPlan": self.describe_training_plan,
        }

    # -- wiring ----------------------------------------------------------------------------

    def install(self, client) -> None:
        """Answer this boto3 client's training-job calls."""
        client.meta.events.register_first("before-call.sagemaker", self._answer)

    def handles(self, operation: str) -> bool:
        return operation in self._operations

    def respond(self, operation: str, body: bytes) -> tuple[int, bytes]:
        """Answer one JSON-protocol request: HTTP status and JSON body."""
        with self._lock:
            self.calls[operation] = self.calls.get(operation, 0) + 1
            self._expire_pools(self.clock())
            try:
                if self._failing.get(operation):
                    raise self._failing[operation].popleft()
                status, payload = 200, self._operations[operation](json.loads(body or b"{}"))
            except SageMakerFault as fault:
                status, payload = fault.status, {"__type": fault.code, "message": fault.message}
        return status, json.dumps(payload, default=str).encode()

    def _answer(self, model, params, **_):
        if not self.handles(model.name):
            with self._lock:
                self.calls[model.name] = self.calls.get(model.name, 0) + 1
            return None
        status, raw = self.respond(model.name, params.get("body") or b"{}")
        headers = {"x-amzn-requestid": str(uuid.uuid4()), "content-type": JSON_CONTENT_TYPE}
        parsed = create_parser("json").parse(
            {"status_code": status, "headers": headers, "body": raw}, model.output_shape
        )
        return AWSResponse("https://api.sagemaker.local/", status, headers, None), parsed

    def close(self) -> None:
        """Stop whatever runs on this machine for the emulated jobs (their scripts)."""
        if self.containers:
            self.containers.close()

    def set_run_seconds(self, name: str, seconds: float) -> None:
        """Change how long a running job still takes, counted from now."""
        with self._lock:
            self.jobs[name].ends_at = self.clock() + seconds

    # -- the API ---------------------------------------------------------------------------

    def create_training_job(self, request: dict) -> dict:
        name = request.get("TrainingJobName", "")
        if self._faults:
            raise self._faults.popleft()
        if not _NAME.match(name):
            raise SageMakerFault("ValidationException", f"Invalid TrainingJobName {name!r}")
        if name in self.jobs:
            raise SageMakerFault(
                "ResourceInUse", f"Training job names must be unique; {name} already exists"
            )
        for tag in request.get("Tags", []):
            if not (_TAG_VALUE.match(tag.get("Value", "")) and len(tag.get("Value", "")) <= 256):
                raise SageMakerFault(
                    "ValidationException",
                    f"Value '{tag.get('Value')}' at 'tags.{tag.get('Key')}.member.value' failed "
                    "to satisfy constraint: Member must satisfy regular expression pattern: "
                    r"^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$",
                )
        demand = demand_of(request.get("ResourceConfig", {}))
        try:
            plan = emulated_plans.plan_of(request, self.plans, demand)
        except ValueError as exc:
            raise SageMakerFault("ValidationException", str(exc)) from None
        pool = None if plan else self._matching_pool(request)
        for itype, count in demand.items():
            limit = None if plan else self.account_limits.get(itype)
            if pool is None and limit is not None and self._in_use(itype) + count > limit:
                raise SageMakerFault(
                    "ResourceLimitExceeded",
                    f"The account-level service limit '{itype} for training job usage' is "
                    f"{limit} Instances, with current utilization of {self._in_use(itype)}",
                )
        now = self.clock()
        tags = {t["Key"]: t["Value"] for t in request.get("Tags", [])}
        run_seconds = float(tags.get(RUN_SECONDS_TAG, self.default_run_seconds))
        start = self.warm_start_seconds if pool else self.cold_start_seconds
        job = EmulatedJob(
            name=name,
            arn=f"arn:aws:sagemaker:{self.region}:{self.account}:training-job/{name.lower()}",
            request=request,
            tags=tags,
            demand=demand,
            created_at=now,
            ends_at=now + start + run_seconds,
            keep_alive=int(
                (request.get("ResourceConfig") or {}).get("KeepAlivePeriodInSeconds") or 0
            ),
            plan=plan.arn if plan else None,
        )
        if pool is not None:
            pool.pool, pool.reused_by, pool.reused_at = pools.REUSED, name, now
            job.pool, job.warm_from = pools.IN_USE, pool.name
        if self._job_failures:
            reason, after = self._job_failures.popleft()
            job.ends_at = min(job.ends_at, now + start + after)
            job.end_reason = ("Failed", reason)
        elif self._capacity_failures:
            self._capacity_failures -= 1
            job.ends_at = now
            job.end_reason = (
                "Failed",
                "CapacityError: Unable to provision requested ML compute capacity. "
                "Please retry using a different ML instance type.",
            )
        if self.on_create:
            self.on_create(job)
        reservation = plan and emulated_plans.room_for(plan, demand, self._running(), now)
        self.jobs[name] = job
        job.pending = bool(plan) and reservation is None
        job.reservation_ends = reservation.end if reservation else None
        if self.containers and not job.pending and job.end_reason[0] == "Completed":
            job.container = self.containers.start(name, request)
        self._transition(job, "InProgress", "Pending" if job.pending else "Starting")
        for itype in demand:
            self.peak_in_use[itype] = max(self.peak_in_use.get(itype, 0), self._in_use(itype))
        if self._lost_responses:
            self._lost_responses -= 1
            raise SageMakerFault("InternalFailure", "We encountered an internal error.", 500)
        return {"TrainingJobArn": job.arn}

    def describe_training_job(self, request: dict) -> dict:
        return describe(self._job(request.get("TrainingJobName", "")), self.clock())

    def update_training_job(self, request: dict) -> dict:
        """Only what the queue does with it: end a job's warm pool (keep-alive 0)."""
        job = self._job(request.get("TrainingJobName", ""))
        keep_alive = (request.get("ResourceConfig") or {}).get("KeepAlivePeriodInSeconds")
        if keep_alive is None:
            raise SageMakerFault("ValidationException", "Nothing to update.")
        if not job.pool_available:
            raise SageMakerFault(
                "ValidationException",
                f"The warm pool of training job {job.name} is not available for update.",
            )
        job.keep_alive = int(keep_alive)
        job.pool_expires_at = job.ended_at + job.keep_alive
        if job.pool_expires_at <= self.clock():
            job.pool = pools.TERMINATED
        return {"TrainingJobArn": job.arn}

    def stop_training_job(self, request: dict) -> dict:
        job = self._job(request.get("TrainingJobName", ""))
        if job.status != "InProgress":
            raise SageMakerFault(
                "ValidationException",
                f"The request was rejected because the training job is in status {job.status}.",
            )
        job.stopped_at = self.clock()
        self._transition(job, "Stopping", "Stopping")
        if job.container:
            job.container.terminate()
        return {}

    def list_tags(self, request: dict) -> dict:
        arn = request.get("ResourceArn", "")
        for job in self.jobs.values():
            if job.arn == arn:
                return {"Tags": [{"Key": k, "Value": v} for k, v in job.tags.items()]}
        raise SageMakerFault("ValidationException", f"Resource {arn} not found.")

    def pools(self) -> list[EmulatedJob]:
        """The jobs whose warm pools are Available now, oldest first."""
        with self._lock:
            return sorted(
                (job for job in self.jobs.values() if job.pool_available),
                key=lambda job: (job.ended_at, job.name),
            )

    def in_use(self) -> dict[str, int]:
        """Instances held now (InProgress or Stopping), per type."""
        with self._lock:
            types = {t for job in self.jobs.values() for t in job.demand}
            return {t: self._in_use(t) for t in sorted(types)}

    # -- internals -------------------------------------------------------------------------

    def _job(self, name: str) -> EmulatedJob:
        job = self.jobs.get(name)
        if job is None:
            raise SageMakerFault("ValidationException", "Requested resource not found.")
        return job

    def _in_use(self, itype: str) -> int:
        """On-demand instances held: plan jobs use reserved capacity, pending ones none."""
        return sum(
            j.demand.get(itype, 0)
            for j in self.jobs.values()
            if (j.status in HOLDING and not j.plan) or j.pool_available
        )

    def _matching_pool(self, request: dict) -> EmulatedJob | None:
        return pools.matching(self.pools(), request, self.clock())

    def _transition(self, job: EmulatedJob, status: str, secondary: str) -> None:
        now = self.clock()
        job.status, job.secondary = status, secondary
        job.transitions.append({"Status": secondary, "StartTime": now, "StatusMessage": status})
        if secondary != "Pending":  # waiting for a plan's capacity: no container yet
            emulated_logs.write(self.logs, job, status)
        detail = self.describe_training_job({"TrainingJobName": job.name})
        detail["Tags"] = dict(job.tags)
        self.events.append(state_change_event(detail, self.account, self.region, now))
