import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from tjq.local.server import LocalApi

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
G4 = "ml.g4dn.xlarge"


def smq_process(*args: str, env: dict) -> subprocess.Popen:
    """``smq ARGS`` running as in a user's terminal, its output piped to the test.

    Ctrl-C (SIGINT) interrupts it even when the tests run in a shell's background job, whose
    children start with SIGINT ignored (Python then never raises KeyboardInterrupt)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tjq.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.fixture(scope="package")
def local_api():
    """`smq local-api`, in-process: the real handler behind HTTP, AWS emulated, real time.

    Its moto server shares moto's state with the process: a test here that starts moto's
    in-process mock (a ``LocalCloud`` without an endpoint) would reset it under this API, so
    those tests live in tests/integration."""
    with quiet_local_api(capacity={P5: 2, G5: 1, G4: 1}, run_seconds=2, stop_seconds=0.5) as local:
        yield local


@contextlib.contextmanager
def quiet_local_api(**kwargs):
    """A LocalApi whose Lambda prints no metrics into the output that CLI tests read.

    LocalApis in one process share moto's state, so each gets a table of its own: jobs
    queued in one never show up in another that runs at the same time."""
    kwargs.setdefault("table_name", f"queue-{uuid.uuid4().hex[:8]}")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    previous = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
    try:
        with LocalApi(**kwargs) as local:
            yield local
    finally:
        if previous is None:
            del os.environ["POWERTOOLS_METRICS_DISABLED"]
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = previous


@pytest.fixture
def local_env(local_api, monkeypatch):
    """The environment `smq local-api` tells users to export."""
    for name, value in local_api.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
    return local_api


@pytest.fixture
def unique():
    """A job name no other test uses."""
    return lambda prefix="job": f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(condition, what: str, timeout: float = 60.0):
    """Poll ``condition()`` until it returns something true (real time: a busy machine may
    need long); fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


@contextlib.contextmanager
def resumed_attempts_finish_at_once(local, name: str):
    """While inside, the emulated SageMaker job of every later attempt of job ``name``
    (``<name>-r2-...``) completes a second after it starts."""
    emulator = local.cloud.sagemaker
    previous = emulator.on_create

    def shorten(attempt) -> None:
        if attempt.name.startswith(f"{name}-r"):
            attempt.ends_at = attempt.created_at + 1

    emulator.on_create = shorten
    try:
        yield
    finally:
        emulator.on_create = previous


# A small workload for smq simulate: four one-instance jobs, three at once and one later.
WORKLOAD = """name,submit_s,duration_s,priority,instance_type,instance_count
job1,0,600,1,ml.p5.48xlarge,1
job2,0,600,2,ml.p5.48xlarge,1
job3,0,600,1,ml.p5.48xlarge,1
job4,300,600,3,ml.p5.48xlarge,1
"""


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "workload.csv"
    path.write_text(WORKLOAD)
    return str(path)
