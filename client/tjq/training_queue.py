"""`TrainingQueue`: the queue in the shape of the SDK's AWS Batch ``TrainingQueue``.

An AWS Batch user writes ``from sagemaker.train.aws_batch.training_queue import
TrainingQueue``; here, ``from tjq import TrainingQueue`` and the same calls: ``TrainingQueue(
queue_name)``, ``submit`` (a v3 ``ModelTrainer`` or a v2 ``Estimator``), ``map``,
``list_jobs``, ``list_jobs_by_share``, ``get_job``, and the returned job's (a
``TrainingQueuedJob``) ``describe``, ``update``, ``terminate``, ``wait``, ``result`` and
``get_model_trainer``. A queue is found by its name (:mod:`tjq.queue_lookup`), or given by its
API's URL. Job names may be AWS Batch job names (underscores, up to 128 characters): the
queue derives the SageMaker job name from them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import boto3

from job_queue import carry
from job_queue import tags as tag_names
from job_queue.models import JobState
from job_queue.scheduler.dependencies import DEFAULT_KIND, Dependency
from tjq import sdk_objects
from tjq.api import QueueClient, check_share, every_row
from tjq.errors import JobNotFound, JobNotStarted
from tjq.progress import FINISHED, describe_state, expected_text, reason_text
from tjq.queue_lookup import find_queue, is_url
from tjq.route import check_tags, checkpointing, integer_priority

# The statuses AWS Batch reports, for the queue's states (the job's ``state`` is the
# queue's own; ``status`` is for code written against Batch).
BATCH_STATUS = {
    JobState.PENDING: "RUNNABLE",
    JobState.PREEMPTED: "RUNNABLE",
    JobState.STARTING: "STARTING",
    JobState.RUNNING: "RUNNING",
    JobState.PREEMPTING: "RUNNING",
    JobState.CANCELLING: "RUNNING",
    JobState.COMPLETED: "SUCCEEDED",
    JobState.FAILED: "FAILED",
    JobState.CANCELLED: "FAILED",
    JobState.STOPPED: "FAILED",
}


class TrainingQueue:
    """The queue's API as AWS Batch's ``TrainingQueue``.

    Example::

        from tjq import TrainingQueue

        queue = TrainingQueue("training-job-queue")  # the stack's name (or SMQ_API_URL's)
        job = queue.submit(model_trainer, inputs, priority=5, quota_share_name="vision")
        job.result()                                # waits; raises if the job failed

    ``TrainingQueue()`` uses ``SMQ_API_URL``; ``TrainingQueue("https://...")`` that URL.
    """

    def __init__(
        self,
        queue_name: str | None = None,
        *,
        api_id: str | None = None,
        boto_session: boto3.Session | None = None,
        queue: QueueClient | None = None,
        poll_seconds: float = 5.0,
        out: Callable[[str], None] = print,
    ) -> None:
        self.boto_session = boto_session or boto3.Session()
        by_name = queue is None and queue_name is not None and not is_url(queue_name)
        self.queue_name = queue_name if by_name else None
        if by_name:
            self.queue = find_queue(queue_name, self.boto_session, api_id=api_id)
        else:
            self.queue = queue or QueueClient.from_environment(
                queue_name, api_id=api_id, boto_session=self.boto_session
            )
        self.poll_seconds = poll_seconds
        self._out = out
        self._shares: bool | None = None  # whether the queue has quota shares, once asked

    def _has_shares(self) -> bool:
        if self._shares is None:
            self._shares = bool(self.queue.shares()["shares"])
        return self._shares

    def submit(
        self,
        training_job,
        inputs=None,
        job_name: str | None = None,
        retry_config: dict | None = None,
        priority: int | None = None,
        share_identifier: str | None = None,
        timeout: dict | None = None,
        tags: dict[str, str] | None = None,
        quota_share_name: str | None = None,
        preemption_config: dict | None = None,
        *,
        checkpoint: str | int | None = None,
        depends_on: list[QueuedJob | str] | QueuedJob | str | None = None,
        dependency: str = DEFAULT_KIND.value,
        name_suffix: str = "",
    ) -> QueuedJob:
        """Queue ``training_job`` (a ``ModelTrainer`` or an ``Estimator``) with ``inputs``,
        as the SDK's AWS Batch ``TrainingQueue.submit`` (the same parameters, in its order).

        ``job_name`` may be an AWS Batch job name (the SageMaker job gets a name derived from
        it). ``priority`` and the share (``quota_share_name``; or ``share_identifier``, which
        is also the share on a queue with quota shares, and on one without them whom fair
        share charges the job to, its ``fair-share-id`` tag) replace the job's own tags;
        ``tags`` are added to the training job's tags; ``checkpoint`` (``"on-stop"`` or
        seconds) sets its ``checkpoint`` tag, how it saves its progress;
        ``preemption_config={"preemptionRetriesBeforeTermination": N}`` its
        ``max-preemptions`` tag, how often it may be preempted and requeued;
        ``depends_on`` (queued jobs, or their names) its ``depends-on`` tag: the job waits
        out of line until they end as ``dependency`` says (``afterok``: all completed;
        ``afternotok``: none completed; ``after``: however they ended). Batch's
        ``retry_config`` and ``timeout`` have no meaning here and are refused if given (the
        queue's RetryOnFailure setting retries infrastructure failures; MaxRuntimeInSeconds
        bounds a job). Checked before anything is uploaded.
        """
        _refuse_batch_only(retry_config=retry_config, timeout=timeout)
        sdk_objects.check_mode(training_job)  # and its kind: TypeError for anything else
        if share_identifier is not None and quota_share_name is not None:
            raise ValueError("give share_identifier or quota_share_name, not both")
        chosen = {key: str(value) for key, value in (tags or {}).items()}
        if priority is not None:
            chosen[tag_names.PRIORITY] = str(integer_priority(priority, "priority="))
        if checkpoint is not None:
            chosen[tag_names.CHECKPOINT] = checkpointing(checkpoint, "checkpoint=")
        if preemption_config is not None:
            chosen[tag_names.MAX_PREEMPTIONS] = _preemption_retries(preemption_config)
        if depends_on is not None:
            chosen[tag_names.DEPENDS_ON] = _dependency(depends_on, dependency)
        # The priority the job will have: the chosen tag, else its own.
        check_tags([*sdk_objects.tags_of(training_job), *_as_tags(chosen)])
        share = quota_share_name
        if share_identifier is not None:
            if self._has_shares():
                share = share_identifier
            else:  # as AWS Batch's fair-share identifier
                chosen[tag_names.FAIR_SHARE_ID] = share_identifier
        if share is not None:
            chosen[tag_names.SHARE] = share
        request = sdk_objects.training_request(training_job, inputs, job_name)
        if name_suffix:
            # The SDK names a job <base>-<second>: a map's jobs would all share one name.
            request["TrainingJobName"] = request["TrainingJobName"][: 63 - len(name_suffix)]
            request["TrainingJobName"] += name_suffix
        request["Tags"] = tag_names.with_tags(request.get("Tags") or [], chosen, replace=True)
        answer = self.queue.submit(request)
        job = QueuedJob(self, request["TrainingJobName"])
        self._out(f"[queue] {job.job_name}: {describe_state(answer['job'])}")
        return job

    def map(
        self,
        training_job,
        inputs: list,
        job_names: list[str] | None = None,
        retry_config: dict | None = None,
        priority: int | None = None,
        share_identifier: str | None = None,
        timeout: dict | None = None,
        tags: dict[str, str] | None = None,
        quota_share_name: str | None = None,
    ) -> list[QueuedJob]:
        """One job per element of ``inputs``, named by ``job_names`` if given (otherwise as
        the SDK names them, with ``-1``, ``-2`` ... appended)."""
        _refuse_batch_only(retry_config=retry_config, timeout=timeout)
        if job_names is not None and len(job_names) != len(inputs):
            raise ValueError(
                f"{len(job_names)} job names for {len(inputs)} inputs: give one name per input"
            )
        names = job_names or [None] * len(inputs)
        return [
            self.submit(
                training_job,
                value,
                name,
                priority=priority,
                share_identifier=share_identifier,
                tags=tags,
                quota_share_name=quota_share_name,
                name_suffix="" if name else f"-{index}",
            )
            for index, (value, name) in enumerate(zip(inputs, names, strict=True), start=1)
        ]

    def list_jobs(self, job_name: str | None = None, status: str | None = None) -> list[QueuedJob]:
        """The jobs in the queue now (waiting or holding instances), or the one named
        ``job_name`` whatever its state; ``status`` is a queue state (``pending``,
        ``running`` ...) or an AWS Batch status (``RUNNABLE``, ``RUNNING`` ...)."""
        if job_name is not None:
            try:
                return [self.get_job(job_name)]
            except JobNotFound:
                return []
        wanted = _states_for(status)
        return [
            QueuedJob(self, row["name"])
            for row in self.queue.all_jobs()
            if wanted is None or row["state"] in wanted
        ]

    def list_jobs_by_share(
        self,
        status: str | None = None,
        share_identifier: str | None = None,
        quota_share_name: str | None = None,
    ) -> list[QueuedJob]:
        """The jobs of one share in the queue now (``quota_share_name``, or
        ``share_identifier``: the queue has one kind of share), of ``status`` if given (as in
        :meth:`list_jobs`)."""
        if share_identifier is not None and quota_share_name is not None:
            raise ValueError("give share_identifier or quota_share_name, not both")
        share = quota_share_name if quota_share_name is not None else share_identifier
        if share is None:
            raise ValueError("list_jobs_by_share needs quota_share_name= (or share_identifier=)")
        wanted = _states_for(status)
        first = self.queue.jobs(1000)
        check_share(first, share)
        rows = every_row(lambda token: first if token is None else self.queue.jobs(1000, token))
        return [
            QueuedJob(self, row["name"])
            for row in rows
            if row.get("share") == share and (wanted is None or row["state"] in wanted)
        ]

    def get_job(self, name: str) -> QueuedJob:
        """The job named ``name`` (``JobNotFound`` if the queue has none)."""
        self.queue.job(name)
        return QueuedJob(self, name)


class QueuedJob:
    """A job in the queue, as AWS Batch's ``TrainingQueuedJob``."""

    def __init__(self, queue: TrainingQueue, job_name: str) -> None:
        self.queue = queue
        self.job_name = job_name

    def __repr__(self) -> str:
        return f"QueuedJob({self.job_name!r})"

    def describe(self) -> dict:
        """The queue's view of the job (GET /jobs/{name}), with AWS Batch's ``status`` and
        ``statusReason`` for code written against Batch."""
        job = self.queue.queue.job(self.job_name)
        return {**job, "status": BATCH_STATUS[JobState(job["state"])], "statusReason": _why(job)}

    def output(self, what: str = "model") -> str:
        """A reference to the model this job leaves, for a job that depends on it (with
        ``afterok``): an input channel's data or a hyperparameter. The queue fills in its
        ``ModelArtifacts.S3ModelArtifacts`` when that job starts."""
        return carry.output_uri(self.job_name, what)

    def update(self, scheduling_priority: int) -> dict:
        """Change the job's priority (it moves in the queue, and may preempt or be preempted)."""
        priority = integer_priority(scheduling_priority, "scheduling_priority")
        return self.queue.queue.set_priority(self.job_name, priority)

    def terminate(self, reason: str | None = "Default terminate reason") -> None:
        """Cancel the job: out of the queue if it waits, stopped if it runs."""
        self.queue.queue.cancel(self.job_name)
        self.queue._out(f"[queue] {self.job_name}: cancelled ({reason})")

    def wait(self, timeout: float | None = None) -> dict:
        """Wait until the job ends, or ``timeout`` seconds; the last :meth:`describe`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            described = self.describe()
            if described["state"] in FINISHED:
                return described
            if deadline is not None and time.monotonic() >= deadline:
                return described
            time.sleep(self.queue.poll_seconds)

    def result(self, timeout: float | None = None) -> dict:
        """:meth:`wait`, then the description of a completed job; ``RuntimeError`` with the
        reason if it failed or was stopped, ``TimeoutError`` if it is still going."""
        described = self.wait(timeout)
        if described["state"] == JobState.COMPLETED:
            return described
        if described["state"] in FINISHED:
            raise RuntimeError(f"{self.job_name}: {described['statusReason']}")
        raise TimeoutError(f"{self.job_name} is still {described['state']} after {timeout} s")

    def get_model_trainer(self):
        """A v3 ``ModelTrainer`` as the job ran, once it has run (``JobNotStarted`` before),
        whose ``train()`` queues again."""
        from tjq.session import QueueTrainingJobSession

        job = self.queue.queue.job(self.job_name)
        if not job["attempts"]:
            raise JobNotStarted(
                f"{self.job_name} has not run yet: it is {describe_state(job)}; "
                "a ModelTrainer comes back once it has started"
            )
        session = QueueTrainingJobSession(
            queue=self.queue.queue, boto_session=self.queue.boto_session, out=self.queue._out
        )
        return sdk_objects.model_trainer_of(self.job_name, session)


# The SDK's name for a queued job's class.
TrainingQueuedJob = QueuedJob


def _preemption_retries(config: object) -> str:
    """``preemption_config`` as AWS Batch's SubmitServiceJob takes it, as the job's
    ``max-preemptions`` tag."""
    key = "preemptionRetriesBeforeTermination"
    if not isinstance(config, dict) or set(config) != {key}:
        raise ValueError(f"preemption_config= must be {{{key!r}: N}}, got {config!r}")
    retries = config[key]
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(
            f"preemption_config[{key!r}] must be a whole number from 0, got {retries!r}"
        )
    return str(retries)


def _dependency(depends_on, kind: str) -> str:
    """The ``depends-on`` tag of ``depends_on`` (QueuedJobs or names); ValueError naming the
    problem."""
    parents = depends_on if isinstance(depends_on, list | tuple) else [depends_on]
    names = [p.job_name if isinstance(p, QueuedJob) else p for p in parents]
    try:
        return str(Dependency.of(kind, names))
    except ValueError as exc:
        raise ValueError(f"depends_on= and dependency= must {exc}") from None


def _refuse_batch_only(**given) -> None:
    """Batch's own settings the queue has no use for: refused, never silently dropped."""
    for name, value in given.items():
        if value is not None:
            raise ValueError(
                f"{name}= is AWS Batch's setting and has no meaning for this queue; leave it "
                "out (the queue's RetryOnFailure setting retries infrastructure failures; a "
                "job's MaxRuntimeInSeconds bounds it)"
            )


def _why(job: dict) -> str | None:
    state = job["state"]
    if state == JobState.FAILED:
        return job.get("failure_reason")
    if state == JobState.CANCELLED:
        return "cancelled in the queue"
    if state == JobState.STOPPED:
        return "stopped outside the queue"
    if state == JobState.PREEMPTING:
        return f"preempted by {job.get('preempted_by')}"
    expected = expected_text(job)
    reason = reason_text(job)
    if expected:
        return f"expected to start {expected}" + (f"; {reason}" if reason else "")
    return reason


def _states_for(status: str | None) -> set[str] | None:
    if status is None:
        return None
    queue_states = {s.value for s in JobState}
    by_batch = {s.value for s, batch in BATCH_STATUS.items() if batch == status}
    wanted = by_batch or {status} & queue_states
    if wanted and wanted <= FINISHED:
        raise ValueError(
            f"list_jobs lists the jobs in the queue now, none of them {status}; "
            "ask for a finished job by name: get_job(name)"
        )
    if wanted:
        return wanted
    raise ValueError(
        f"unknown status {status!r}: a queue state ({', '.join(sorted(queue_states))}) "
        f"or an AWS Batch status ({', '.join(sorted(set(BATCH_STATUS.values())))})"
    )


def _as_tags(values: dict[str, str]) -> list[dict]:
    return [{"Key": key, "Value": value} for key, value in values.items()]
