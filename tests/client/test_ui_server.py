"""`smq ui`'s local server, over HTTP as the page (or another web page) calls it: it serves
the page, forwards reads signed with the user's credentials, refuses to write unless told
to, answers only requests addressed to itself, and says plainly what is wrong when it cannot
start or cannot reach the queue."""

import json
import os
import re
import signal
import socket
import threading

import pytest
import requests
from tjq.api import QueueClient
from tjq.cli import main
from tjq.local.calls import training_request
from tjq.ui.server import READ_ONLY, UiApi, UiServer

from tests.client.conftest import G4, smq_process, wait_until


@pytest.fixture
def serve(local_env):
    """A `smq ui` server on the local API (``allow_actions`` as given), on a free port."""
    servers = []

    def start(allow_actions=False, client=None):
        server = UiServer(UiApi(client or QueueClient.from_environment(), allow_actions), 0)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def post(server, path, body=None, **headers):
    headers = {"X-Smq-Ui": "1", "Content-Type": "application/json", **headers}
    return requests.post(server.url.rstrip("/") + path, json=body or {}, headers=headers)


def test_the_page_and_its_script_are_served_from_the_package(serve):
    server = serve()
    page = requests.get(server.url)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    scripts = re.findall(r'<script src="/([^"]+)">', page.text)
    assert scripts == ["charts.js", "ui.js"]
    for name in scripts:
        script = requests.get(server.url + name)
        assert script.status_code == 200, name
        assert script.headers["Content-Type"].startswith("text/javascript")
    assert "https://" not in page.text.replace("https://console.aws.amazon.com", "")  # no CDN
    assert requests.get(server.url + "nothing.js").status_code == 404


def test_reads_are_forwarded_signed_to_the_queue(serve, unique):
    server = serve()
    name = unique("seen")
    QueueClient.from_environment().submit(training_request(name, 1, instance_type=G4))
    jobs = requests.get(server.url + "api/jobs").json()
    assert name in [row["name"] for row in jobs["jobs"]]
    job = requests.get(server.url + f"api/jobs/{name}").json()["job"]
    assert job["name"] == name
    assert requests.get(server.url + "api/timeline?since=1h").json()["records"] is not None
    config = requests.get(server.url + "api/config").json()
    assert config == {
        "queue": os.environ["SMQ_API_URL"],
        "region": "us-east-1",
        "allow_actions": False,
        "refresh_seconds": 5,
    }
    missing = requests.get(server.url + "api/jobs/no-such-job")
    assert missing.status_code == 404 and "no-such-job" in missing.json()["message"]


def test_read_only_by_default_nothing_on_the_page_can_write(serve, unique):
    server = serve()
    name = unique("kept")
    QueueClient.from_environment().submit(training_request(name, 1, instance_type=G4))
    for path, body in [
        (f"/api/jobs/{name}/cancel", {}),
        (f"/api/jobs/{name}/priority", {"priority": 9}),
    ]:
        answer = post(server, path, body)
        assert (answer.status_code, answer.json()["message"]) == (403, READ_ONLY)
    job = QueueClient.from_environment().job(name)
    assert (job["priority"], job["state"]) != (9, "cancelled")
    assert job["priority"] == 1 and job["state"] in ("pending", "starting", "running")


def test_with_actions_the_page_reprioritises_and_cancels(serve, unique):
    server = serve(allow_actions=True)
    name = unique("steered")
    QueueClient.from_environment().submit(training_request(name, 1, instance_type=G4))
    answer = post(server, f"/api/jobs/{name}/priority", {"priority": 3})
    assert answer.status_code == 200 and answer.json()["job"]["priority"] == 3
    bad = post(server, f"/api/jobs/{name}/priority", {"priority": "high"})
    assert bad.status_code == 400 and "whole number" in bad.json()["message"]
    assert post(server, f"/api/jobs/{name}/cancel").status_code == 200
    # The queue's own refusal is passed on as the queue wrote it.
    again = post(server, f"/api/jobs/{name}/priority", {"priority": 4})
    assert again.status_code == 409 and name in again.json()["message"]


def test_other_web_pages_cannot_use_the_server(serve, unique):
    server = serve(allow_actions=True)
    name = unique("guarded")
    QueueClient.from_environment().submit(training_request(name, 1, instance_type=G4))
    # A DNS-rebinding page reaches 127.0.0.1 under its own host name.
    rebound = requests.get(server.url + "api/jobs", headers={"Host": f"evil.example:{server.port}"})
    assert rebound.status_code == 403 and "answers only" in rebound.json()["message"]
    # A cross-site form cannot set the page's header, nor claim the page's origin.
    form = requests.post(server.url + f"api/jobs/{name}/cancel", data="{}")
    assert form.status_code == 403
    other = post(server, f"/api/jobs/{name}/cancel", Origin="https://evil.example")
    assert other.status_code == 403
    assert "Access-Control-Allow-Origin" not in other.headers
    assert QueueClient.from_environment().job(name)["state"] != "cancelled"


def test_an_unreachable_queue_is_a_502_with_the_reason_not_a_traceback(serve):
    server = serve(client=QueueClient("http://127.0.0.1:9/prod", retries=0))
    answer = requests.get(server.url + "api/jobs")
    assert answer.status_code == 502
    assert answer.json() == {
        "message": "cannot reach the queue API at http://127.0.0.1:9/prod: connection refused "
        "or host not found",
        "unreachable": True,
    }


def test_a_port_in_use_is_a_one_line_error_naming_it(capsys, local_env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["ui", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"smq: error: port {port} is in use on 127.0.0.1: stop what listens there, or choose "
        "another with --port\n"
    )


def test_without_a_queue_or_credentials_it_says_what_to_set_and_exits(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.delenv("SMQ_API_URL", raising=False)
    assert main(["ui"]) == 1
    assert "no queue API URL: set SMQ_API_URL" in capsys.readouterr().err
    for variable in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["ui", "--url", "http://127.0.0.1:9/prod"]) == 1
    assert "no AWS credentials to sign the request with" in capsys.readouterr().err


def test_smq_ui_serves_until_ctrl_c(local_env):
    process = smq_process("ui", "--port", "0", env={**os.environ, **local_env.environment()})
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    try:
        first = wait_until(lambda: lines and lines[0], "smq ui to say where it serves")
        url = first.split(" on ")[1].split(" ")[0]
        assert first.startswith(f"smq ui: {local_env.api_url} on http://127.0.0.1:")
        assert "(read-only; Ctrl-C to stop)" in first
        assert json.loads(requests.get(url + "api/config").text)["allow_actions"] is False
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert process.returncode == 130
