"""`QueueTrainingJobSession`: `estimator.fit()` queues the job instead of starting it.

Importing this module imports the SageMaker Python SDK v2 (a few seconds); ``import tjq``
alone does not.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

from sagemaker.exceptions import UnexpectedStatusException
from sagemaker.session import Session, _check_job_status

from job_queue import tags
from job_queue.errors import InvalidRequest
from job_queue.models import JobState
from job_queue.request import parse_priority
from tjq.api import QueueClient
from tjq.errors import InvalidJob, JobEnded

_FINISHED = {state.value for state in JobState if state.is_finished}
_WAITING = {state.value for state in JobState if state.is_waiting}
_STARTED = (JobState.STARTING.value, JobState.RUNNING.value)


class QueueTrainingJobSession(Session):
    """A SageMaker ``Session`` that sends CreateTrainingJob to the queue; nothing else changes.

    Example::

        from sagemaker.pytorch import PyTorch
        from tjq import QueueTrainingJobSession

        session = QueueTrainingJobSession(priority=2)      # SMQ_API_URL from the environment
        PyTorch(entry_point="train.py", role=role, instance_type="ml.p5.48xlarge",
                instance_count=1, framework_version="2.3", py_version="py311",
                sagemaker_session=session).fit(wait=False)

    A job's priority is its ``priority`` tag; ``priority=`` sets it for jobs without one.
    Likewise its quota share: the ``share`` tag, or ``share=`` (for queues with shares).
    ``fit(wait=True)`` follows the job through the queue, printing each change, then returns
    as the SDK does for a finished job (raising if it failed). Describing a queued job by its
    name describes its latest SageMaker job (a resumed job runs under a new name).
    """

    def __init__(
        self,
        api_url: str | None = None,
        *,
        priority: int | None = None,
        share: str | None = None,
        api_id: str | None = None,
        queue: QueueClient | None = None,
        poll_seconds: float = 10.0,
        out: Callable[[str], None] = print,
        **session_kwargs,
    ) -> None:
        self.priority = None if priority is None else _integer_priority(priority, "priority=")
        self.share = share
        super().__init__(**session_kwargs)
        self.queue = queue or QueueClient.from_environment(
            api_url, api_id=api_id, boto_session=self.boto_session
        )
        self.poll_seconds = poll_seconds
        self._out = out
        self._queued: set[str] = set()
        self._last_seen: dict[str, dict] = {}  # what was last reported of each queued job
        self.sagemaker_client.meta.events.register(
            "before-parameter-build.sagemaker.DescribeTrainingJob", self._describe_latest_attempt
        )

    # -- what the SDK calls ---------------------------------------------------------------------

    def _intercept_create_request(self, request, create, func_name=None):
        if func_name != "train":
            return super()._intercept_create_request(request, create, func_name)
        request = self._with_tags(request)
        answer = self.queue.submit(request)
        name = request["TrainingJobName"]
        self._queued.add(name)
        self._last_seen[name] = answer["job"]
        self._say(name, _describe_state(answer["job"], answer.get("position")))
        return None

    def wait_for_job(self, job, poll=None):
        """Wait on the queue (not on SageMaker, which may not have the job yet)."""
        description = self._follow(job)
        _check_job_status(job, description, "TrainingJobStatus")
        return description

    def logs_for_job(self, job_name, wait=False, poll=10, log_type="All", timeout=None):
        """Report the job's progress through the queue; with ``wait``, until it ends."""
        if job_name not in self._queued:
            return super().logs_for_job(job_name, wait, poll, log_type, timeout)
        if not wait:
            job = self.queue.job(job_name)
            self._say(job_name, _describe_state(job, job.get("position")))
            return None
        self.wait_for_job(job_name)
        return None

    # -- internals ---------------------------------------------------------------------------

    def _with_tags(self, request: dict) -> dict:
        """The request with the session's priority and share, where its tags set none."""
        request = copy.deepcopy(request)
        given = request.get("Tags") or []
        if any(t.get("Key") == tags.PRIORITY for t in given):
            _integer_priority(tags.value(given, tags.PRIORITY), "the priority tag")
        defaults = {tags.PRIORITY: self.priority, tags.SHARE: self.share}
        added = {k: str(v) for k, v in defaults.items() if v is not None}
        request["Tags"] = tags.with_tags(given, added, replace=False)
        if not request["Tags"]:
            del request["Tags"]
        return request

    def _follow(self, name: str) -> dict:
        while True:
            job = self.queue.job(name)
            note = _progress(self._last_seen.get(name), job)
            if note:
                self._say(name, note)
            self._last_seen[name] = job
            if job["state"] in _FINISHED:
                break
            time.sleep(self.poll_seconds)
        if not job["attempts"]:
            if job["state"] == JobState.FAILED:
                reason = job["failure_reason"]
                raise UnexpectedStatusException(
                    message=f"Error for Training job {name}: Failed. Reason: {reason}",
                    allowed_statuses=["Completed", "Stopped"],
                    actual_status="Failed",
                )
            raise JobEnded(f"{name} was {job['state']} before it ever started")
        return self.sagemaker_client.describe_training_job(
            TrainingJobName=job["attempts"][-1]["sagemaker_job_name"]
        )

    def _describe_latest_attempt(self, params, **_) -> None:
        # A queued job that was preempted and resumed runs under a new SageMaker name.
        name = params.get("TrainingJobName")
        if name in self._queued:
            current = self.queue.job(name).get("sagemaker_job_name")
            if current:
                params["TrainingJobName"] = current

    def _say(self, name: str, message: str) -> None:
        self._out(f"[queue] {name}: {message}")


def _integer_priority(value, what: str) -> int:
    """The queue's own check (an integer in its range), raised before anything is sent."""
    try:
        return parse_priority(value, field=what)
    except InvalidRequest as exc:
        raise InvalidJob(str(exc)) from None


def _describe_state(job: dict, position: int | None) -> str:
    state = job["state"]
    if state in _WAITING:
        share = f", share {job['share']}" if job.get("share") else ""
        return f"queued at position {position} (priority {job['priority']}{share})"
    if state in _STARTED:
        return f"started as SageMaker job {job['sagemaker_job_name']}{_on_pool(job)}"
    return state


def _on_pool(job: dict) -> str:
    """ ", on the warm pool of <SageMaker job>" for an attempt that started on one."""
    attempts = job.get("attempts") or []
    if attempts and attempts[-1].get("start") == "warm":
        return f", on the warm pool of {attempts[-1]['warm_pool_of']}"
    return ""


def _progress(last: dict | None, job: dict) -> str | None:
    """What changed between two looks at a job, in words; None if nothing did."""
    state = job["state"]
    if last is None:
        return _describe_state(job, job.get("position"))
    if state == last["state"]:
        if state in _WAITING and job.get("position") != last.get("position"):
            return f"now at position {job['position']}"
        return None
    if state in _STARTED:
        if last["state"] in _STARTED:
            return None
        verb = "resumed" if job["preemptions"] else "started"
        return f"{verb} as SageMaker job {job['sagemaker_job_name']}{_on_pool(job)}"
    if state == JobState.PREEMPTING:
        return f"preempted by {job['preempted_by']}; stopping"
    if state == JobState.PREEMPTED:
        return f"waiting to resume, at position {job.get('position')}"
    if state == JobState.FAILED:
        return f"failed: {job['failure_reason']}"
    return state
