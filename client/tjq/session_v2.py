"""`QueueTrainingJobSession` for the SageMaker Python SDK v2: ``estimator.fit()`` queues.

Imported by :mod:`tjq.session` when SDK v2 is installed.
"""

from __future__ import annotations

import time

from sagemaker.session import Session, _check_job_status

from tjq.errors import JobEnded
from tjq.job_logs import follow
from tjq.progress import FINISHED
from tjq.route import RoutedSession


class QueueTrainingJobSession(RoutedSession, Session):
    """A SageMaker ``Session`` (SDK v2) whose CreateTrainingJob goes to the queue; nothing
    else changes.

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
    as the SDK does for a finished job (raising if it failed), polling every
    ``poll_seconds``. Describing a queued job by its name describes its latest SageMaker job
    (a resumed job runs under a new name). A ``boto_session`` passed in is routed too.
    """

    def __init__(self, api_url: str | None = None, *, poll_seconds: float = 10.0, **kwargs):
        self.poll_seconds = poll_seconds
        super().__init__(api_url, **kwargs)

    # -- what the SDK calls ---------------------------------------------------------------------

    def wait_for_job(self, job, poll=None):
        """Wait on the queue (not on SageMaker, which may not have the job yet)."""
        if not self.route.follows(job):
            return super().wait_for_job(job, poll)
        description = self._follow(job)
        _check_job_status(job, description, "TrainingJobStatus")
        return description

    def logs_for_job(self, job_name, wait=False, poll=10, log_type="All", timeout=None):
        """The job's progress through the queue and its training logs, attempt after
        attempt (each after a line saying which); with ``wait``, until it ends."""
        if not self.route.follows(job_name):
            return super().logs_for_job(job_name, wait, poll, log_type, timeout)

        logs = self.boto_session.client("logs")
        follow(
            job_name,
            lambda: self.queue.job(job_name),
            logs,
            self._out,
            wait=wait,
            poll_seconds=self.poll_seconds,
            report=lambda job: self.route.report(job_name, job),
        )
        if wait:
            self.wait_for_job(job_name)  # it has ended: raises as the SDK does if it failed
        return None

    # -- internals ---------------------------------------------------------------------------

    def _follow(self, name: str) -> dict:
        while True:
            description = self.route.describe(name)
            job = self.route.last_seen(name)
            if job["state"] in FINISHED:
                break
            time.sleep(self.poll_seconds)
        if not job["attempts"] and description["TrainingJobStatus"] != "Failed":
            raise JobEnded(f"{name} was {job['state']} before it ever started")
        return description
