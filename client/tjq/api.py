"""A signed HTTP client for the queue's private API.

Requests are signed with SigV4 (service ``execute-api``) using the caller's boto3 credentials.
A private API is reached either by its own URL (private DNS on the VPC endpoint) or through
the VPC endpoint's DNS name, with the API id in the ``x-apigw-api-id`` header.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from urllib.parse import quote, urlencode, urlsplit

import boto3
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from tjq.errors import (
    AccessDenied,
    JobConflict,
    JobNotFound,
    NoCredentials,
    NotConfigured,
    QueueApiError,
    QueueUnreachable,
    UnknownShare,
)

_ERRORS_BY_STATUS = {403: AccessDenied, 404: JobNotFound, 409: JobConflict}
_RETRY_STATUSES = {429, 500, 502, 503, 504}
_CONNECT_RETRIES = 2  # a refused connection rarely heals in seconds: fail fast


class QueueClient:
    """The queue's REST API.

    Example::

        client = QueueClient("https://abc123.execute-api.us-east-1.amazonaws.com/prod")
        client.submit(create_training_job_request)
        client.jobs()

    Through a VPC endpoint's DNS name::

        QueueClient("https://vpce-0a1b2c3d-xyz.execute-api.us-east-1.vpce.amazonaws.com/prod",
                    api_id="abc123")
    """

    def __init__(
        self,
        url: str,
        api_id: str | None = None,
        region: str | None = None,
        boto_session: boto3.Session | None = None,
        timeout: tuple[float, float] = (5.0, 30.0),
        retries: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not url:
            raise NotConfigured(
                "no queue API URL: set SMQ_API_URL (or pass --url to smq, url= in Python) to "
                "the ApiUrl output of the deployed stack, or `source` the --env-file of "
                "`smq local-api`"
            )
        if urlsplit(url).scheme not in ("http", "https"):
            raise NotConfigured(f"the queue API URL {url!r} must start with https:// or http://")
        self.url = url.rstrip("/")
        self.api_id = api_id
        self._session = boto_session or boto3.Session()
        self.region = (
            region or _region_from_url(self.url) or self._session.region_name or "us-east-1"
        )
        self._http = requests.Session()
        self._timeout = timeout
        self._retries = retries
        self._sleep = sleep

    @classmethod
    def from_environment(cls, url: str | None = None, **kwargs) -> QueueClient:
        """Settings from arguments, else SMQ_API_URL, SMQ_API_ID and SMQ_REGION."""
        return cls(
            url or os.environ.get("SMQ_API_URL", ""),
            api_id=kwargs.pop("api_id", None) or os.environ.get("SMQ_API_ID") or None,
            region=kwargs.pop("region", None) or os.environ.get("SMQ_REGION") or None,
            **kwargs,
        )

    # -- the routes ---------------------------------------------------------------------------

    def submit(self, request: dict) -> dict:
        """POST /add-job: ``{"job": ..., "position": ...}``."""
        return self._call("POST", "/add-job", request)

    def jobs(self, limit: int | None = None, next_token: str | None = None) -> dict:
        """GET /jobs, one page: ``{"jobs": [...], "next_token", "waiting", "capacity" ...}``:
        the jobs holding instances, then up to ``limit`` waiting jobs (the API's default is
        100) from ``next_token``."""
        query = {"limit": limit, "next_token": next_token}
        query = urlencode({k: v for k, v in query.items() if v is not None})
        return self._call("GET", "/jobs" + (f"?{query}" if query else ""))

    def all_jobs(self, limit: int = 1000) -> list[dict]:
        """Every row of GET /jobs, page after page (the active jobs once)."""
        return every_row(lambda token: self.jobs(limit, token))

    def job(self, name: str) -> dict:
        """GET /jobs/{name}: the job with its attempts."""
        return self._call("GET", f"/jobs/{quote(name)}")["job"]

    def cancel(self, name: str) -> dict:
        return self._call("DELETE", f"/jobs/{quote(name)}")["job"]

    def set_priority(self, name: str, priority: int) -> dict:
        return self._call("PUT", f"/jobs/{quote(name)}/priority", {"priority": priority})["job"]

    def shares(self) -> dict:
        """GET /shares: the quota shares, their use per instance type, their waiting jobs."""
        return self._call("GET", "/shares")

    def usage(
        self, since: str | None = None, until: str | None = None, by: str | None = None
    ) -> dict:
        """GET /usage: the usage ledger's report (``report``: instance-hours by phase, cost,
        jobs, preemptions, per submitter, share, type or job, over ``since``..``until``: ISO
        8601 times or ``30d``, ``12h`` before now), and fair share's usage, weight and
        standing per submitter, and who is next."""
        query = urlencode(
            {k: v for k, v in {"since": since, "until": until, "by": by}.items() if v}
        )
        return self._call("GET", "/usage" + (f"?{query}" if query else ""))

    def timeline(self, since: str | None = None, until: str | None = None) -> dict:
        """GET /timeline: each attempt and warm pool that held instances over ``since``..
        ``until`` (ISO 8601 times or ``24h``, ``7d`` before now; default the last day),
        oldest first, with its phases, how it ended and when its job joined the line."""
        query = urlencode({k: v for k, v in {"since": since, "until": until}.items() if v})
        return self._call("GET", "/timeline" + (f"?{query}" if query else ""))

    def set_weights(self, weights: dict) -> dict:
        """PUT /usage/weights: replace the fair-share weights (admins), answered as usage()."""
        return self._call("PUT", "/usage/weights", weights)

    def set_budgets(self, budgets: dict) -> dict:
        """PUT /budgets: replace the submitters' budgets (admins), answered as usage()."""
        return self._call("PUT", "/budgets", budgets)

    def set_shares(self, shares: list) -> dict:
        """PUT /shares: replace the quota shares (a shares file's list) without deploying."""
        return self._call("PUT", "/shares", shares)

    def change_hold(self, action: str, share: str | None = None) -> dict:
        """POST /queue/hold, /queue/drain or /queue/resume (``action``; admins): of the whole
        queue, or of ``share``. Answers the holds in effect and who changed them."""
        return self._call("POST", f"/queue/{action}", {"share": share} if share else None)

    # -- HTTP ---------------------------------------------------------------------------------

    def credentials(self):
        """The AWS credentials requests are signed with; NoCredentials if there are none."""
        credentials = self._session.get_credentials()
        if credentials is None:
            raise NoCredentials(
                "no AWS credentials to sign the request with (configure them as for the AWS "
                "CLI: aws configure, AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
            )
        return credentials.get_frozen_credentials()

    def _call(self, method: str, path: str, body: dict | list | None = None) -> dict:
        data = json.dumps(body) if body is not None else None
        for attempt in range(self._retries + 1):
            try:
                response = self._send(method, path, data)
            except requests.RequestException as exc:
                if attempt >= min(self._retries, _CONNECT_RETRIES):
                    raise QueueUnreachable(
                        f"cannot reach the queue API at {self.url}: {_reason(exc)}"
                    ) from None
            else:
                if response.status_code not in _RETRY_STATUSES or attempt == self._retries:
                    return _answer(response)
            self._sleep(min(8.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0))
        raise AssertionError("unreachable")

    def _send(self, method: str, path: str, data: str | None) -> requests.Response:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.api_id:
            headers["x-apigw-api-id"] = self.api_id
        request = AWSRequest(method=method, url=self.url + path, data=data, headers=headers)
        SigV4Auth(self.credentials(), "execute-api", self.region).add_auth(request)
        return self._http.request(
            method, request.url, data=data, headers=dict(request.headers), timeout=self._timeout
        )


def check_share(answer: dict, share: str) -> None:
    """UnknownShare unless ``share`` is one of the queue's shares (``answer``: a GET /jobs
    page, which names them)."""
    shares = answer.get("shares") or []
    if share not in shares:
        queue = answer.get("queue", "the queue")
        known = f"its shares are {', '.join(shares)}" if shares else "it has no quota shares"
        raise UnknownShare(f"share {share!r} is not a share of queue {queue}: {known}")


def every_row(page: Callable[[str | None], dict]) -> list[dict]:
    """The rows of every page of GET /jobs (``page(next_token)`` fetches one). Each page lists
    the active jobs again; they are kept once."""
    rows, seen, token = [], set(), None
    while True:
        answer = page(token)
        rows += [row for row in answer["jobs"] if row["name"] not in seen]
        seen.update(row["name"] for row in answer["jobs"])
        token = answer.get("next_token")
        if not token:
            return rows


def _answer(response: requests.Response) -> dict:
    try:
        body = response.json()
    except ValueError:
        body = {"message": response.text.strip() or response.reason}
    if response.status_code < 400:
        return body
    message = (body or {}).get("message") or (body or {}).get("Message") or response.reason
    error = _ERRORS_BY_STATUS.get(response.status_code, QueueApiError)
    raise error(response.status_code, message)


def _region_from_url(url: str) -> str | None:
    # abc123.execute-api.us-east-1.amazonaws.com or vpce-...execute-api.us-east-1.vpce...
    parts = urlsplit(url).hostname.split(".") if urlsplit(url).hostname else []
    if "execute-api" in parts:
        index = parts.index("execute-api")
        if index + 1 < len(parts):
            return parts[index + 1]
    return None


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.Timeout):
        return "the request timed out"
    if isinstance(exc, requests.ConnectionError):
        return "connection refused or host not found"
    return type(exc).__name__
