"""A queued job's training logs, across its attempts: each attempt runs as its own SageMaker
job, whose container writes to CloudWatch Logs (group ``/aws/sagemaker/TrainingJobs``, streams
``<SageMaker job>/algo-<n>-<epoch>``). :class:`AttemptLogs` reads one attempt's new lines;
:func:`follow` prints them all, attempt after attempt, with a line saying which attempt, as
`smq logs` and the SDK v2 session do (the SDK v3 session hands the same lines to the SDK's own
log display, :mod:`tjq.log_route`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

from botocore.exceptions import ClientError

from tjq.progress import FINISHED

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
_HOST = re.compile(r"/(algo-\d+)-")


def host_of(stream: str) -> str:
    """``algo-1`` of ``train/algo-1-1767225600`` (the stream itself if it has no host)."""
    found = _HOST.search(stream)
    return found.group(1) if found else stream


class AttemptLogs:
    """The log lines of one SageMaker job, read a little at a time (each line once)."""

    def __init__(self, logs, sagemaker_job_name: str) -> None:
        self.logs = logs
        self.name = sagemaker_job_name
        self._tokens: dict[str, str] = {}  # stream -> the token to read on from

    def streams(self) -> list[str]:
        """The job's streams so far, by name (hosts in order)."""
        try:
            pages = self.logs.get_paginator("describe_log_streams").paginate(
                logGroupName=LOG_GROUP, logStreamNamePrefix=f"{self.name}/"
            )
            return sorted(s["logStreamName"] for page in pages for s in page["logStreams"])
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ResourceNotFoundException":
                return []  # no job has logged yet in this account and region
            raise

    def new_events(self, stream: str) -> Iterator[dict]:
        """Events of ``stream`` not read yet, oldest first."""
        while True:
            token = self._tokens.get(stream)
            answer = self.logs.get_log_events(
                logGroupName=LOG_GROUP,
                logStreamName=stream,
                startFromHead=True,
                **({"nextToken": token} if token else {}),
            )
            self._tokens[stream] = answer["nextForwardToken"]
            if not answer["events"] or answer["nextForwardToken"] == token:
                return
            yield from answer["events"]

    def new_lines(self) -> list[str]:
        """Every stream's new lines (prefixed by the host when there are several)."""
        streams = self.streams()
        lines = []
        for stream in streams:
            prefix = f"{host_of(stream)}: " if len(streams) > 1 else ""
            lines += [prefix + event["message"] for event in self.new_events(stream)]
        return lines


def attempt_line(name: str, attempt: dict) -> str:
    """The line before an attempt's logs."""
    return (
        f"[queue] {name}: logs of attempt {attempt['attempt']} "
        f"(SageMaker job {attempt['sagemaker_job_name']})"
    )


def follow(
    name: str,
    look: Callable[[], dict],
    logs,
    out: Callable[[str], None] = print,
    wait: bool = True,
    poll_seconds: float = 5.0,
    sleep: Callable[[float], None] = time.sleep,
    report: Callable[[dict], None] = lambda job: None,
) -> dict:
    """Print job ``name``'s logs, attempt after attempt; with ``wait``, until it has ended
    and its last lines are read. ``look()`` is the queue's view of the job now (GET
    /jobs/{name}); ``report(view)`` says what changed in it — before the lines, and once it
    has ended after its last ones. Returns the last view."""
    readers: dict[str, AttemptLogs] = {}
    announced: set[str] = set()
    drained = False
    while True:
        job = look()
        ended = job["state"] in FINISHED
        if not ended:
            report(job)
        for attempt in job.get("attempts") or []:
            sagemaker_name = attempt["sagemaker_job_name"]
            reader = readers.setdefault(sagemaker_name, AttemptLogs(logs, sagemaker_name))
            lines = reader.new_lines()
            if lines and sagemaker_name not in announced:
                announced.add(sagemaker_name)
                out(attempt_line(name, attempt))
            for line in lines:
                out(line)
        if not wait or (ended and drained):
            report(job)
            return job
        # Once it has ended, read once more: the last lines may reach the log a moment late.
        drained = ended
        sleep(poll_seconds)
