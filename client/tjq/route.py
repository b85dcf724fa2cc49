"""Send a boto3 session's CreateTrainingJob to the queue: the one way SDK v2, SDK v3 and
plain boto3 tools all go through it.

botocore emits ``before-call.sagemaker.<Operation>`` just before it sends a request; a
handler that returns ``(http_response, parsed)`` answers instead of AWS. :class:`QueueRoute`
answers two operations that way, and leaves every other call alone:

* ``CreateTrainingJob`` is queued (the JSON protocol's body *is* the request);
* ``DescribeTrainingJob`` of a queued job is answered from the queue: its latest SageMaker
  job under the queue's name, ``InProgress`` while it waits (see :mod:`tjq.describe`).

A client copies its session's handlers when it is created, so routing a boto3 session
covers every SageMaker client made from it afterwards.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Callable
from datetime import UTC, datetime

import boto3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from job_queue import tags
from job_queue.errors import InvalidRequest
from job_queue.models import Checkpointing
from job_queue.request import parse_priority
from tjq.api import QueueClient
from tjq.describe import queued_description, training_job_arn
from tjq.errors import InvalidJob, JobNotFound, QueueUnreachable
from tjq.progress import progress

_CREATE = "before-call.sagemaker.CreateTrainingJob"
_DESCRIBE = "before-call.sagemaker.DescribeTrainingJob"


class QueueRoute:
    """The queue's side of a boto3 session: what CreateTrainingJob and DescribeTrainingJob
    answer, and the progress messages of the jobs it queued.

    ``priority``, ``share`` and ``checkpoint`` fill in the ``priority``, ``share`` and
    ``checkpoint`` tags of requests that have none; ``out`` receives each
    ``[queue] <job>: <what changed>`` line.
    """

    def __init__(
        self,
        queue: QueueClient,
        region: str,
        *,
        priority: int | None = None,
        share: str | None = None,
        checkpoint: str | int | None = None,
        out: Callable[[str], None] = print,
    ) -> None:
        self.queue = queue
        self.region = region
        self.priority = None if priority is None else integer_priority(priority, "priority=")
        self.share = share
        self.checkpoint = None if checkpoint is None else checkpointing(checkpoint, "checkpoint=")
        self._out = out
        self._client_factory: Callable[[], object] | None = None
        self._client = None
        self._bypass = threading.local()
        self._requests: dict[str, dict] = {}  # what this route queued, by job name
        self._last_seen: dict[str, dict] = {}  # what was last reported of each of them
        self._not_queued: set[str] = set()

    def install(self, events, client_factory: Callable[[], object]) -> QueueRoute:
        """Answer CreateTrainingJob and DescribeTrainingJob for clients using ``events`` (a
        boto3 session's or a client's); ``client_factory`` makes the client that describes
        SageMaker jobs themselves."""
        self._client_factory = client_factory
        for event, handler, unique_id in (
            (_CREATE, self._on_create, "tjq-queue-create"),
            (_DESCRIBE, self._on_describe, "tjq-queue-describe"),
        ):
            # A later route replaces an earlier one (botocore ignores a second registration
            # under the same id).
            events.unregister(event, unique_id=unique_id)
            events.register(event, handler, unique_id=unique_id)
        return self

    # -- the two operations ----------------------------------------------------------------

    def submit(self, request: dict) -> dict:
        """Queue a CreateTrainingJob request (with the route's default tags); the queue's
        answer, ``{"job": ..., "position": ...}``."""
        request = self.with_tags(request)
        answer = self.queue.submit(request)
        name = request["TrainingJobName"]
        self._requests[name] = request
        self._not_queued.discard(name)
        self.report(name, answer["job"])
        return answer

    def describe(self, name: str) -> dict | None:
        """DescribeTrainingJob's answer for queued job ``name``; None if the queue has no such
        job. Reports what changed since the last look, for jobs this route queued."""
        try:
            job = self.queue.job(name)
        except JobNotFound:
            return None
        self.report(name, job)
        attempt = self._latest_attempt(job)
        return queued_description(
            job, attempt, self._requests.get(name), self.region, datetime.now(UTC)
        )

    def follows(self, name: str) -> bool:
        """Whether this route queued job ``name``."""
        return name in self._requests

    def last_seen(self, name: str) -> dict | None:
        """The queue's view of job ``name`` at the last look."""
        return self._last_seen.get(name)

    def with_tags(self, request: dict) -> dict:
        """The request with the route's priority, share and checkpoint, where its tags set
        none; refused (:class:`InvalidJob`) if its priority or checkpoint tag is not valid."""
        request = copy.deepcopy(request)
        given = request.get("Tags") or []
        check_tags(given)
        defaults = {tags.PRIORITY: self.priority, tags.SHARE: self.share}
        defaults[tags.CHECKPOINT] = self.checkpoint
        added = {k: str(v) for k, v in defaults.items() if v is not None}
        request["Tags"] = tags.with_tags(given, added, replace=False)
        if not request["Tags"]:
            del request["Tags"]
        return request

    # -- botocore handlers -----------------------------------------------------------------

    def _on_create(self, params, **_):
        request = json.loads(params["body"] or b"{}")
        self.submit(request)
        arn = training_job_arn(request["TrainingJobName"], request.get("RoleArn"), self.region)
        return _answer({"TrainingJobArn": arn})

    def _on_describe(self, params, **_):
        if getattr(self._bypass, "on", False):
            return None
        name = json.loads(params["body"] or b"{}").get("TrainingJobName")
        if not name or (name in self._not_queued and not self.follows(name)):
            return None
        try:
            description = self.describe(name)
        except QueueUnreachable:
            if self.follows(name):
                raise
            return None  # not a job of ours, as far as anyone can tell: ask SageMaker
        if description is None:
            self._not_queued.add(name)
            return None
        return _answer(description)

    # -- internals -------------------------------------------------------------------------

    def _latest_attempt(self, job: dict) -> dict | None:
        attempts = job.get("attempts") or []
        if not attempts:
            return None
        if self._client is None:
            self._client = self._client_factory()
        try:
            with self._bypassed():
                return self._client.describe_training_job(
                    TrainingJobName=attempts[-1]["sagemaker_job_name"]
                )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ValidationException":
                return None  # claimed, not yet created
            raise

    @contextlib.contextmanager
    def _bypassed(self):
        self._bypass.on = True
        try:
            yield
        finally:
            self._bypass.on = False

    def report(self, name: str, job: dict) -> None:
        """Say what changed in job ``name`` (a job this route queued) since the last look."""
        if not self.follows(name):
            return
        note = progress(self._last_seen.get(name), job)
        self._last_seen[name] = job
        if note:
            self._out(f"[queue] {name}: {note}")


def reroute(
    target,
    api_url: str | None = None,
    *,
    priority: int | None = None,
    share: str | None = None,
    checkpoint: str | int | None = None,
    api_id: str | None = None,
    queue: QueueClient | None = None,
    out: Callable[[str], None] = print,
) -> QueueRoute:
    """Make CreateTrainingJob through ``target`` — a ``boto3.Session`` (every SageMaker
    client created from it afterwards) or a SageMaker client — go to the queue.

    Example::

        session = boto3.Session()
        tjq.reroute(session)                       # SMQ_API_URL from the environment
        session.client("sagemaker").create_training_job(**request)   # queued

    ``priority`` / ``share`` / ``checkpoint`` are the defaults for requests without those
    tags; the queue is ``api_url`` (else SMQ_API_URL) or the client ``queue``. Describing a
    queued job by its name then describes its latest SageMaker job. Rerouting the same
    target again replaces the earlier route.
    """
    if isinstance(target, boto3.Session):
        events, boto_session = target.events, target
        factory = lambda: target.client("sagemaker")  # noqa: E731
    elif hasattr(target, "meta") and hasattr(target.meta, "events"):
        service = target.meta.service_model.service_name
        if service != "sagemaker":
            raise TypeError(f"reroute() needs a SageMaker client, not a {service} client")
        events, boto_session = target.meta.events, None
        factory = lambda: target  # noqa: E731
    else:
        raise TypeError(
            f"reroute() takes a boto3.Session or a SageMaker client, not {type(target).__name__}"
        )
    queue = queue or QueueClient.from_environment(api_url, api_id=api_id, boto_session=boto_session)
    region = (boto_session.region_name if boto_session else target.meta.region_name) or queue.region
    route = QueueRoute(
        queue, region, priority=priority, share=share, checkpoint=checkpoint, out=out
    )
    return route.install(events, factory)


def integer_priority(value, what: str) -> int:
    """The queue's own check (an integer in its range), raised before anything is sent."""
    try:
        return parse_priority(value, field=what)
    except InvalidRequest as exc:
        raise InvalidJob(str(exc)) from None


def checkpointing(value, what: str) -> str:
    """How a job checkpoints, as its tag says it (``on-stop`` or seconds); InvalidJob
    otherwise, before anything is sent."""
    try:
        return str(Checkpointing.parse(value))
    except ValueError as exc:
        raise InvalidJob(f"{what} {exc}") from None


def check_tags(given: list[dict]) -> None:
    """Refuse (:class:`InvalidJob`) tags whose priority is not an integer in range, or whose
    checkpoint is neither ``on-stop`` nor seconds."""
    if any(t.get("Key") == tags.PRIORITY for t in given):
        integer_priority(tags.value(given, tags.PRIORITY), "the priority tag")
    if any(t.get("Key") == tags.CHECKPOINT for t in given):
        checkpointing(tags.value(given, tags.CHECKPOINT), "the checkpoint tag")


def _answer(parsed: dict) -> tuple[AWSResponse, dict]:
    """A successful botocore answer, as if the service had sent it."""
    parsed = {**parsed, "ResponseMetadata": {"HTTPStatusCode": 200, "RetryAttempts": 0}}
    return AWSResponse("", 200, {}, None), parsed


class RoutedSession:
    """What QueueTrainingJobSession is under either SDK, mixed in before the SDK's
    ``Session``: its boto3 session (the caller's ``boto_session``, or a new one) is routed
    to the queue before the SDK makes its clients from it.

    ``priority`` / ``share`` / ``checkpoint``: the defaults for jobs without those tags
    (``checkpoint``: ``"on-stop"`` or seconds, how the job saves its progress); ``out`` receives the
    ``[queue] ...`` progress lines; the queue is ``api_url`` (else SMQ_API_URL) or ``queue``.
    """

    def __init__(
        self,
        api_url: str | None = None,
        *,
        priority: int | None = None,
        share: str | None = None,
        checkpoint: str | int | None = None,
        api_id: str | None = None,
        queue: QueueClient | None = None,
        out: Callable[[str], None] = print,
        **session_kwargs,
    ) -> None:
        boto_session = session_kwargs.pop("boto_session", None) or boto3.Session()
        self.route = reroute(
            boto_session,
            api_url,
            priority=priority,
            share=share,
            checkpoint=checkpoint,
            api_id=api_id,
            queue=queue,
            out=out,
        )
        super().__init__(boto_session=boto_session, **session_kwargs)
        # A sagemaker_client passed in was made elsewhere: route it too.
        self.route.install(self.sagemaker_client.meta.events, lambda: self.sagemaker_client)
        self.queue = self.route.queue
        self._out = out

    @property
    def priority(self) -> int | None:
        """The priority of jobs without a priority tag."""
        return self.route.priority

    @property
    def share(self) -> str | None:
        """The quota share of jobs without a share tag."""
        return self.route.share
