"""The signed HTTP client: SigV4, private endpoints, retries, timeouts and error messages."""

import socket

import pytest
import requests
from tjq.api import QueueClient
from tjq.errors import (
    AccessDenied,
    JobConflict,
    JobNotFound,
    NotConfigured,
    QueueApiError,
    QueueUnreachable,
)
from tjq.local.calls import training_request

from tests.client.stub_api import ScriptedApi

JOBS = {"jobs": [], "capacity": {"ml.p5.48xlarge": 2}}


@pytest.fixture
def stub():
    servers = []

    def make(*script):
        server = ScriptedApi(script)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def _client(url, **kwargs):
    return QueueClient(url, sleep=lambda _: None, **kwargs)


def test_requests_are_signed_for_execute_api(stub, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    api = stub((200, JOBS))
    assert _client(api.url, region="eu-west-1").jobs() == JOBS
    authorization = api.requests[0]["headers"]["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "X-Amz-Date" in api.requests[0]["headers"]


def test_private_endpoint_through_a_vpc_endpoint_sends_the_api_id(stub):
    api = stub((200, JOBS))
    _client(api.url, api_id="abc123").jobs()
    assert api.requests[0]["headers"]["x-apigw-api-id"] == "abc123"
    assert api.requests[0]["path"] == "/prod/jobs"


def test_region_is_read_from_an_api_or_vpc_endpoint_url():
    assert QueueClient("https://abc123.execute-api.eu-central-1.amazonaws.com/prod").region == (
        "eu-central-1"
    )
    vpce = "https://vpce-0a1b-xyz.execute-api.ap-south-1.vpce.amazonaws.com/prod"
    assert QueueClient(vpce, api_id="abc123").region == "ap-south-1"


def test_unsigned_requests_are_refused_by_the_local_api(local_api):
    answer = requests.get(local_api.api_url + "/jobs", timeout=5)
    assert answer.status_code == 403
    assert answer.json()["message"] == "Missing Authentication Token"


def test_throttling_and_server_errors_are_retried(stub):
    api = stub((429, {"message": "Too Many Requests"}), (503, {}), (502, {}), (200, JOBS))
    assert _client(api.url).jobs() == JOBS
    assert len(api.requests) == 4


def test_retries_give_up_with_the_servers_message(stub):
    api = stub(*[(503, {"message": "Service Unavailable"})] * 5)
    with pytest.raises(QueueApiError, match="Service Unavailable") as raised:
        _client(api.url, retries=2).jobs()
    assert raised.value.status == 503
    assert len(api.requests) == 3


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, QueueApiError), (403, AccessDenied), (404, JobNotFound), (409, JobConflict)],
)
def test_4xx_is_raised_with_the_servers_message_and_not_retried(stub, status, error):
    api = stub((status, {"message": "what the server said"}))
    with pytest.raises(error, match="what the server said") as raised:
        _client(api.url).job("x")
    assert raised.value.status == status
    assert len(api.requests) == 1


def test_a_slow_api_times_out_with_a_clear_message(stub):
    api = stub((200, JOBS, 2.0), (200, JOBS, 2.0), (200, JOBS, 2.0))
    with pytest.raises(QueueUnreachable, match="timed out"):
        _client(api.url, timeout=(1.0, 0.2), retries=1).jobs()


def test_an_endpoint_that_is_down_is_reported_with_its_url():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe closes
    url = f"http://127.0.0.1:{port}/prod"
    with pytest.raises(QueueUnreachable, match=f"cannot reach the queue API at {url}"):
        _client(url).jobs()


@pytest.mark.parametrize("url", ["", None])
def test_no_url_is_a_clear_error(url, monkeypatch):
    monkeypatch.delenv("SMQ_API_URL", raising=False)
    with pytest.raises(NotConfigured, match="SMQ_API_URL"):
        QueueClient.from_environment(url)


def test_a_url_without_a_scheme_is_refused():
    with pytest.raises(NotConfigured, match="https://"):
        QueueClient("abc123.execute-api.us-east-1.amazonaws.com/prod")


def test_round_trip_against_the_local_api(local_env, unique):
    client = QueueClient.from_environment()
    name = unique()
    answer = client.submit(training_request(name, 2, instance_type="ml.g4dn.xlarge"))
    assert answer["job"]["name"] == name and answer["job"]["priority"] == 2
    assert client.job(name)["name"] == name
    assert name in {j["name"] for j in client.jobs()["jobs"]}
    assert client.set_priority(name, 3)["priority"] == 3
    assert client.cancel(name)["state"] in ("cancelling", "cancelled")
    with pytest.raises(JobNotFound, match="no job named"):
        client.job(unique("ghost"))
