"""The SageMaker SDK's own objects against `smq local-api`: tests/sdk/v3 runs with SDK v3,
tests/sdk/v2 with SDK v2 (`make test` runs this folder in one virtualenv of each), and the
tests here at the top with either. Nothing of the SDK or of the queue is mocked."""

import os

import pytest
from tjq.session import sdk_major

# The same local API (one per test package), its environment, and unique job names.
from tests.client.conftest import (  # noqa: F401
    G5,
    local_api,
    local_env,
    quiet_local_api,
    unique,
    wait_until,
)
from tests.sdk.scripts import CHECKPOINTS

SDK = sdk_major()
# Each SDK's own tests need that SDK installed; `make test` runs both virtualenvs.
collect_ignore_glob = ["v2/*"] if SDK >= 3 else ["v3/*"]

if os.environ.get("TJQ_SDK") and int(os.environ["TJQ_SDK"]) != SDK:
    pytest.exit(f"TJQ_SDK={os.environ['TJQ_SDK']} but SageMaker SDK v{SDK} is installed", 2)


@pytest.fixture
def source(tmp_path):
    """A training script's folder."""
    (tmp_path / "train.py").write_text("print('training')\n")
    return str(tmp_path)


@pytest.fixture
def said():
    """What the queue's client side printed."""
    return []


def priority_tag(value, seconds=None) -> list[dict]:
    """A priority tag and, for the emulator, how long the job trains."""
    found = [{"Key": "priority", "Value": str(value)}]
    if seconds is not None:
        found.append({"Key": "simulated-run-seconds", "Value": str(seconds)})
    return found


@pytest.fixture(autouse=True)
def queue_emptied_after_each_test(request):
    """The tests here share one local API: whatever a test leaves in the queue (a failed
    test, most likely) is cancelled before the next test starts."""
    yield
    if "local_api" not in request.fixturenames:
        return
    cloud = request.getfixturevalue("local_api").cloud

    def jobs() -> list[dict]:
        return cloud.api("GET", "/jobs")[1]["jobs"]

    for job in jobs():
        cloud.api("DELETE", f"/jobs/{job['name']}")  # a 409 if it ended meanwhile: fine
    left = [f"{job['name']} ({job['state']})" for job in jobs()]
    wait_until(lambda: not jobs(), f"the jobs a test left to be cancelled: {', '.join(left)}")


@pytest.fixture(scope="package")
def scripts_api():
    """A local API of its own that runs the jobs' scripts."""
    with quiet_local_api(
        capacity={G5: 1}, stop_seconds=0.5, run_scripts=True, checkpoint_s3_uri=CHECKPOINTS
    ) as local:
        yield local


@pytest.fixture
def scripts_env(scripts_api, monkeypatch):
    """Its environment, as `smq local-api` prints it."""
    for name, value in scripts_api.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return scripts_api
