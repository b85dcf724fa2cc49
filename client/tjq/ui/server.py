"""`smq ui`'s local server: one page, and the page's reads forwarded to the queue's API.

A browser cannot sign requests to the private API, so, as ``kubectl proxy`` does, a server
on this machine (127.0.0.1 only) signs them with the user's own credentials, through the
same :class:`~tjq.api.QueueClient` as the CLI: it works against a deployed API and against
`smq local-api` alike. What the page may ask is a short list (:class:`UiApi`); nothing
writes unless the server was started with ``allow_actions``, and even then the queue's own
rules decide (a 403's message is shown as the queue wrote it).

Any web page the user visits can make the browser send requests to 127.0.0.1, so the
server answers only requests addressed to itself by name (a DNS-rebinding page names its
own host) and takes actions only with a header a cross-site form cannot set.
"""

from __future__ import annotations

import errno
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from urllib.parse import parse_qs, unquote, urlsplit

from tjq.api import QueueClient
from tjq.errors import (
    NoCredentials,
    QueueApiError,
    QueueClientError,
    QueueUnreachable,
)

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
REFRESH_SECONDS = 5
ACTION_HEADER = "X-Smq-Ui"  # the page sets it; a form or a plain link cannot
_STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui.js": ("ui.js", "text/javascript; charset=utf-8"),
    "/charts.js": ("charts.js", "text/javascript; charset=utf-8"),
    "/ui.css": ("ui.css", "text/css; charset=utf-8"),
}
_JOB = re.compile(r"^/api/jobs/([^/]+)$")
_JOB_ACTION = re.compile(r"^/api/jobs/([^/]+)/(cancel|priority)$")
READ_ONLY = (
    "smq ui is read-only: start it with --allow-actions to cancel and reprioritise jobs from "
    "the page"
)


class PortInUse(QueueClientError):
    """The port the server was asked to listen on is taken."""


class UiApi:
    """What the page may ask of the queue, as (HTTP status, JSON body): reads always,
    actions (cancel, priority) only with ``allow_actions``."""

    def __init__(self, client: QueueClient, allow_actions: bool = False) -> None:
        self.client = client
        self.allow_actions = allow_actions

    def read(self, path: str, query: dict[str, str]) -> tuple[int, dict]:
        """A GET of the page: ``/api/config``, ``/api/jobs``, ``/api/jobs/NAME``,
        ``/api/shares`` or ``/api/timeline?since=&until=``."""
        if path == "/api/config":
            return 200, {
                "queue": self.client.url,
                "region": self.client.region,
                "allow_actions": self.allow_actions,
                "refresh_seconds": REFRESH_SECONDS,
            }
        if path == "/api/jobs":
            return self._asked(lambda: self.client.jobs(limit=200))
        if found := _JOB.match(path):
            return self._asked(lambda: {"job": self.client.job(unquote(found[1]))})
        if path == "/api/shares":
            return self._asked(self.client.shares)
        if path == "/api/timeline":
            since, until = query.get("since"), query.get("until")
            return self._asked(lambda: self.client.timeline(since, until))
        return 404, {"message": f"no such page or call: {path}"}

    def act(self, path: str, body: object) -> tuple[int, dict]:
        """A POST of the page: ``/api/jobs/NAME/cancel``, or ``/api/jobs/NAME/priority``
        with ``{"priority": N}``."""
        found = _JOB_ACTION.match(path)
        if found is None:
            return 404, {"message": f"no such action: {path}"}
        if not self.allow_actions:
            return 403, {"message": READ_ONLY}
        name, action = unquote(found[1]), found[2]
        if action == "cancel":
            return self._asked(lambda: {"job": self.client.cancel(name)})
        priority = body.get("priority") if isinstance(body, dict) else None
        if not isinstance(priority, int) or isinstance(priority, bool):
            return 400, {"message": 'the priority must be a whole number: {"priority": 5}'}
        return self._asked(lambda: {"job": self.client.set_priority(name, priority)})

    @staticmethod
    def _asked(call) -> tuple[int, dict]:
        try:
            return 200, call()
        except QueueApiError as exc:  # the queue's own answer, passed on as it is
            return exc.status, {"message": exc.message}
        except (QueueUnreachable, NoCredentials) as exc:
            return 502, {"message": str(exc), "unreachable": True}
        except QueueClientError as exc:
            return 400, {"message": str(exc)}


class UiServer(ThreadingHTTPServer):
    """The page and :class:`UiApi` on ``HOST``:``port`` (0: any free port)."""

    daemon_threads = True

    def __init__(self, api: UiApi, port: int = DEFAULT_PORT) -> None:
        self.api = api
        try:
            super().__init__((HOST, port), _Handler)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse(
                    f"port {port} is in use on {HOST}: stop what listens there, or choose "
                    "another with --port"
                ) from None
            raise
        self.port = self.server_address[1]
        self.url = f"http://{HOST}:{self.port}/"
        self._names = {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    def addressed_to_me(self, host: str | None) -> bool:
        return (host or "").lower() in self._names

    def start(self) -> threading.Thread:
        """Serve in a background thread (tests, notebooks); ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="smq-ui", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: UiServer
    server_version = "smq-ui"

    def do_GET(self) -> None:
        if not self._addressed_to_me():
            return
        url = urlsplit(self.path)
        if url.path in _STATIC:
            name, content_type = _STATIC[url.path]
            page = resources.files("tjq.ui").joinpath("static", name).read_bytes()
            return self._send(200, page, content_type)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        self._send_json(*self.server.api.read(url.path, query))

    def do_POST(self) -> None:
        if not self._addressed_to_me():
            return
        origin = self.headers.get("Origin")
        if self.headers.get(ACTION_HEADER) != "1" or (
            origin is not None and not self.server.addressed_to_me(urlsplit(origin).netloc)
        ):
            return self._send_json(403, {"message": "actions are taken from smq ui's own page"})
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._send_json(400, {"message": "the body must be JSON"})
        self._send_json(*self.server.api.act(urlsplit(self.path).path, body))

    def _addressed_to_me(self) -> bool:
        if self.server.addressed_to_me(self.headers.get("Host")):
            return True
        self._send_json(403, {"message": f"smq ui answers only {self.server.url}"})
        return False

    def _send_json(self, status: int, body: dict) -> None:
        self._send(status, json.dumps(body).encode(), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args) -> None:
        pass  # the page polls every few seconds: a line each would drown the terminal
