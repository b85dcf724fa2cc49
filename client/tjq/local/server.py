"""`smq local-api`: the queue's API on 127.0.0.1, over emulated AWS, in real time.

Four endpoints, all on the loopback interface:

* the queue API (same routes and answers as the deployed API, stage ``/prod``), which
  passes each request to the real Lambda handler as an API Gateway event;
* an IAM endpoint that answers ``SimulatePrincipalPolicy`` (the role check of SDK v3) from
  the emulated role's policies, and passes the rest of IAM on to moto;
* a SageMaker endpoint: training-job operations are answered by :class:`LocalSageMaker`
  (jobs finish after ``run_seconds``, or their ``simulated-run-seconds`` tag; a stop takes
  ``stop_seconds``), every other SageMaker operation is passed on to moto;
* moto (S3, STS, DynamoDB, ...), for everything else the SageMaker SDK calls.

A background thread applies SageMaker status changes as they fall due and delivers their
state-change events to the handler; another runs the reconcile sweep every minute.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tjq.local.calls import REGION, local_user
from tjq.local.cloud import LocalCloud
from tjq.local.iam import is_simulation, simulate_principal_policy, unknown_role

STAGE = "/prod"
DEFAULT_BUCKET = "sagemaker-local"


class LocalApi:
    """The local API and its emulated AWS, started and stopped together.

    Example::

        with LocalApi(port=8080, capacity={"ml.p5.48xlarge": 2}) as local:
            print(local.environment())    # what to export in the training script's shell
    """

    def __init__(
        self,
        port: int = 0,
        capacity: dict[str, int] | None = None,
        run_seconds: float = 60.0,
        stop_seconds: float = 5.0,
        sweep_seconds: float = 60.0,
        host: str = "127.0.0.1",
        **cloud_options,
    ) -> None:
        """``cloud_options`` are :class:`LocalCloud`'s (shares, allowed roles, keep-alive,
        the emulated warm-pool quota and start times ...). LocalApis in one process share
        moto's state: give each that runs at the same time its own ``table_name``."""
        self.host = host
        self._port = port
        self._cloud_options = {
            "capacity": capacity or {"ml.p5.48xlarge": 2},
            "run_seconds": run_seconds,
            "stop_seconds": stop_seconds,
            **cloud_options,
        }
        self._sweep_seconds = sweep_seconds
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._servers: list[ThreadingHTTPServer] = []

    def __enter__(self) -> LocalApi:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        for variable, value in _DUMMY_CREDENTIALS.items():
            os.environ.setdefault(variable, value)
        # A fixed API port puts the other endpoints on the three after it, so that the same
        # exports (or --env-file) work after a restart; port 0: any free ports.
        moto_port, sagemaker_port, iam_port = (
            (self._port + 1, self._port + 2, self._port + 3) if self._port else (0, 0, 0)
        )
        self._moto = ThreadedMotoServer(
            ip_address=self.host, port=_free_port(self.host, moto_port), verbose=False
        )
        self._moto.start()
        self.aws_url = "http://{}:{}".format(*self._moto.get_host_and_port())
        self.cloud = LocalCloud(
            clock=time.time, endpoint_url=self.aws_url, **self._cloud_options
        ).__enter__()
        api = self._serve(self._port, _api_handler(self.cloud))
        sagemaker = self._serve(sagemaker_port, _sagemaker_handler(self.cloud, self.aws_url))
        iam = self._serve(iam_port, _iam_handler(self.cloud, self.aws_url))
        self.api_url = f"http://{self.host}:{api.server_address[1]}{STAGE}"
        self.sagemaker_url = f"http://{self.host}:{sagemaker.server_address[1]}"
        self.iam_url = f"http://{self.host}:{iam.server_address[1]}"
        self._config_file = _sdk_config_file()
        self._background(self._pump, 0.2)
        self._background(self.cloud.sweep, self._sweep_seconds)

    def stop(self) -> None:
        self._stopping.set()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        if getattr(self, "cloud", None):
            self.cloud.__exit__(None, None, None)
        if getattr(self, "_moto", None):
            self._moto.stop()
        if getattr(self, "_config_file", None):
            os.unlink(self._config_file)

    def environment(self) -> dict[str, str]:
        """Variables that point an unchanged training script (and `smq`) at this API."""
        return {
            "SMQ_API_URL": self.api_url,
            "AWS_ENDPOINT_URL": self.aws_url,
            "AWS_ENDPOINT_URL_SAGEMAKER": self.sagemaker_url,
            "AWS_ENDPOINT_URL_IAM": self.iam_url,
            "AWS_DEFAULT_REGION": REGION,
            **_DUMMY_CREDENTIALS,
            # Default bucket for the SDK (no STS lookup) and no SDK telemetry.
            "SAGEMAKER_USER_CONFIG_OVERRIDE": self._config_file,
        }

    def _pump(self) -> None:
        self.cloud.pump()

    def _serve(self, port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer((self.host, port), handler)
        server.daemon_threads = True
        self._servers.append(server)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self._threads.append(thread)
        return server

    def _background(self, work, every: float) -> None:
        def loop() -> None:
            while not self._stopping.wait(every):
                try:
                    work()
                except Exception as exc:  # keep serving; a Lambda would be retried too
                    print(f"local-api: {work.__name__} failed: {exc!r}", flush=True)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self._threads.append(thread)


_DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


_CREDENTIAL = re.compile(r"^AWS4-HMAC-SHA256 .*Credential=(?P<key>[^/,\s]+)/")


def signed_by(authorization: str) -> str | None:
    """The access key id of a SigV4 ``Authorization`` header (None: not signed). The local
    API checks no signature: it only names the caller after the key."""
    found = _CREDENTIAL.match(authorization)
    return found["key"] if found else None


def _api_handler(cloud: LocalCloud) -> type[BaseHTTPRequestHandler]:
    class QueueApiHandler(_QuietHandler):
        def _route(self) -> None:
            url = urlsplit(self.path)
            path = url.path
            if not path.startswith(STAGE + "/"):
                return self._reply(404, {"message": f"no such path; the API lives under {STAGE}"})
            # API Gateway with AWS_IAM auth refuses unsigned requests before the Lambda.
            access_key = signed_by(self.headers.get("Authorization", ""))
            if access_key is None:
                return self._reply(403, {"message": "Missing Authentication Token"})
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else None
            response = cloud.invoke_api(
                self.command,
                path[len(STAGE) :] + (f"?{url.query}" if url.query else ""),
                body,
                {k.lower(): v for k, v in self.headers.items()},
                caller=local_user(access_key),
            )
            self._reply(response["statusCode"], response.get("body") or "")

        do_GET = do_POST = do_PUT = do_DELETE = _route

    return QueueApiHandler


def _sagemaker_handler(cloud: LocalCloud, moto_url: str) -> type[BaseHTTPRequestHandler]:
    class SageMakerHandler(_QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            operation = self.headers.get("X-Amz-Target", "").removeprefix("SageMaker.")
            if cloud.sagemaker.handles(operation):
                status, payload = cloud.sagemaker.respond(operation, body)
                return self._reply(status, payload, "application/x-amz-json-1.1")
            self._forward(moto_url, body)  # everything else SageMaker does is moto's

    return SageMakerHandler


def _iam_handler(cloud: LocalCloud, moto_url: str) -> type[BaseHTTPRequestHandler]:
    class IamHandler(_QuietHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if refused := unknown_role(cloud.iam, body):
                return self._reply(*refused, "text/xml")
            if is_simulation(body):
                status, payload = simulate_principal_policy(cloud.iam, body)
                return self._reply(status, payload, "text/xml")
            self._forward(moto_url, body)  # the rest of IAM is moto's

    return IamHandler


class _QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args) -> None:
        pass

    def _forward(self, url: str, body: bytes) -> None:
        """Pass the request on to ``url`` (moto) and its answer back."""
        target = urlsplit(url)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        connection.request(self.command, self.path, body=body, headers=headers)
        answer = connection.getresponse()
        self._reply(answer.status, answer.read(), answer.getheader("Content-Type") or "")

    def _reply(self, status: int, body, content_type: str = "application/json") -> None:
        if isinstance(body, dict):
            body = json.dumps(body)
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _free_port(host: str, port: int = 0) -> int:
    """``port`` if it is free (OSError if not), or any free port (``port`` 0)."""
    import socket

    with socket.socket() as probe:
        probe.bind((host, port))  # moto's server thread would hang on a port in use
        return probe.getsockname()[1]


def _sdk_config_file() -> str:
    config = {
        "SchemaVersion": "1.0",
        "SageMaker": {
            "PythonSDK": {
                "Modules": {
                    "Session": {"DefaultS3Bucket": DEFAULT_BUCKET},
                    "TelemetryOptOut": True,
                }
            }
        },
    }
    handle, path = tempfile.mkstemp(prefix="smq-local-sagemaker-", suffix=".yaml")
    with os.fdopen(handle, "w") as file:
        json.dump(config, file)  # JSON is YAML
    return path
