"""SDK v3's own log display, across a queued job's attempts.

``ModelTrainer.train(wait=True, logs=True)`` shows the training logs with sagemaker-core's
``MultiLogStreamHandler``: it asks CloudWatch Logs for the streams named after the job (one
per instance), keeps them, and reads them on. A queued job runs as one SageMaker job per
attempt, with streams of its own. So, for the jobs a :class:`~tjq.route.QueueRoute` queued,
this route answers those two calls itself: the streams are one per host, ``<job>/algo-<n>``,
and each reads as the host's stream of every attempt in turn, with a line saying which
attempt starts. Everything else goes to CloudWatch Logs unchanged.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import weakref

from tjq.job_logs import LOG_GROUP, AttemptLogs, attempt_line, host_of
from tjq.route import QueueRoute, _answer

_STREAMS = "before-call.cloudwatch-logs.DescribeLogStreams"
_EVENTS = "before-call.cloudwatch-logs.GetLogEvents"


class _HostStream:
    """One host's stream across a job's attempts: what has been read of it."""

    def __init__(self) -> None:
        self.readers: dict[str, AttemptLogs] = {}
        self.announced: set[str] = set()
        self.served = 0  # answers given: the token of the next one


class LogRoute:
    """Answers DescribeLogStreams and GetLogEvents for the jobs its routes queued (every
    :class:`~tjq.route.QueueRoute` added)."""

    def __init__(self) -> None:
        self._routes: list[weakref.ref[QueueRoute]] = []  # a session's, while it lives
        self._logs = None  # the client the handlers are on, for the attempts' real streams
        self._hosts: dict[str, _HostStream] = {}
        self._bypass = threading.local()

    def add(self, route: QueueRoute) -> None:
        """Answer for ``route``'s jobs too (a later route first)."""
        self._routes = [ref for ref in self._routes if ref() is not None]
        self._routes.insert(0, weakref.ref(route))

    def install(self, events, logs_client) -> LogRoute:
        """Answer for clients using ``events``; ``logs_client`` reads the real streams."""
        self._logs = logs_client
        for event, handler, unique_id in (
            (_STREAMS, self._on_streams, "tjq-logs-streams"),
            (_EVENTS, self._on_events, "tjq-logs-events"),
        ):
            events.unregister(event, unique_id=unique_id)
            events.register(event, handler, unique_id=unique_id)
        return self

    # -- botocore handlers -----------------------------------------------------------------

    def _on_streams(self, params, **_):
        body = json.loads(params["body"] or b"{}")
        name = self._job_of_prefix(body)
        route = self._route_of(name)
        if route is None:
            return None
        job = route.last_seen(name) or {}
        hosts = max(1, int(job.get("instance_count") or 1))
        streams = [{"logStreamName": f"{name}/algo-{n}"} for n in range(1, hosts + 1)]
        return _answer({"logStreams": streams})

    def _on_events(self, params, **_):
        body = json.loads(params["body"] or b"{}")
        stream = body.get("logStreamName", "")
        name, _, host = stream.partition("/")
        route = self._route_of(name)
        if (
            getattr(self._bypass, "on", False)
            or body.get("logGroupName") != LOG_GROUP
            or route is None
            or not host.startswith("algo-")
            or "-" in host.removeprefix("algo-")  # a real stream: algo-<n>-<epoch>
        ):
            return None
        state = self._hosts.setdefault(stream, _HostStream())
        events = self._new_events(route.last_seen(name) or {}, name, host, state)
        state.served += 1
        token = f"tjq/{stream}/{state.served}"
        return _answer({"events": events, "nextForwardToken": token, "nextBackwardToken": token})

    # -- internals -------------------------------------------------------------------------

    def _job_of_prefix(self, body: dict) -> str | None:
        if getattr(self._bypass, "on", False) or body.get("logGroupName") != LOG_GROUP:
            return None
        return (body.get("logStreamNamePrefix") or "").removesuffix("/") or None

    def _route_of(self, name: str | None) -> QueueRoute | None:
        """The route that queued job ``name``, if any."""
        routes = (ref() for ref in self._routes)
        return next((r for r in routes if r is not None and name and r.follows(name)), None)

    def _new_events(self, job: dict, name: str, host: str, state: _HostStream) -> list[dict]:
        events = []
        with self._bypassed():
            for attempt in job.get("attempts") or []:
                sagemaker_name = attempt["sagemaker_job_name"]
                reader = state.readers.setdefault(
                    sagemaker_name, AttemptLogs(self._logs, sagemaker_name)
                )
                found = [
                    event
                    for stream in reader.streams()
                    if host_of(stream) == host
                    for event in reader.new_events(stream)
                ]
                if found and sagemaker_name not in state.announced:
                    state.announced.add(sagemaker_name)
                    now = int(time.time() * 1000)
                    line = attempt_line(name, attempt)
                    events.append({"timestamp": now, "message": line, "ingestionTime": now})
                events += found
        return events

    @contextlib.contextmanager
    def _bypassed(self):
        self._bypass.on = True
        try:
            yield
        finally:
            self._bypass.on = False


_SHARED: LogRoute | None = None  # sagemaker-core reads every job's logs with one client


def show_attempts_in_sdk_logs(route: QueueRoute, boto_session) -> None:
    """Make SDK v3's log display read the logs of ``route``'s jobs across their attempts:
    the newest session gives sagemaker-core a logs client (of its ``boto_session``) with the
    one :class:`LogRoute` on it, and every session adds its route. (The newest, not the
    first: a notebook that points a new session at another endpoint or account has its logs
    read there, not through a client of an endpoint that may be gone.)"""
    global _SHARED
    from sagemaker.core.utils.logs import CloudWatchLogsClient

    logs = boto_session.client("logs")
    _SHARED = _SHARED or LogRoute()
    _SHARED.install(logs.meta.events, logs)
    CloudWatchLogsClient.client = logs  # what a first CloudWatchLogsClient() will use
    existing = type(CloudWatchLogsClient)._instances.get(CloudWatchLogsClient)
    if existing is not None:
        existing.client = logs
    _SHARED.add(route)
