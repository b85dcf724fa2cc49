"""`smq logs`: a job's training logs across its attempts, against the local API (whose
emulated containers write a few lines per attempt)."""

import os
import signal
import time

from tjq.api import QueueClient
from tjq.local.calls import training_request

from tests.client.cli_runs import smq
from tests.client.conftest import (
    G4,
    P5,
    resumed_attempts_finish_at_once,
    smq_process,
    wait_until,
)


def cancelled(client, *names) -> None:
    """Cancel the jobs, and wait until they have let go of the instance (for the next test)."""
    for name in names:
        client.cancel(name)
    wait_until(
        lambda: all(client.job(n)["state"] == "cancelled" for n in names), "the jobs to stop"
    )


def preempted_then_completed(local_env, unique) -> str:
    """A job that ran, was preempted, resumed and completed."""
    client = QueueClient.from_environment()
    low, high = unique("low"), unique("high")
    client.submit(training_request(low, 1, instance_type=G4, run_seconds=3600))
    wait_until(lambda: client.job(low)["state"] == "running", f"{low} to run")
    with resumed_attempts_finish_at_once(local_env, low):
        client.submit(training_request(high, 9, instance_type=G4, run_seconds=3600))
        wait_until(lambda: client.job(high)["state"] == "running", f"{high} to run")
        local_env.cloud.sagemaker.set_run_seconds(high, 0)
        wait_until(lambda: client.job(low)["state"] == "completed", f"{low} to complete")
    return low


def test_logs_of_a_job_show_every_attempt_in_order(capsys, local_env, unique):
    name = preempted_then_completed(local_env, unique)
    code, out, _ = smq(capsys, "logs", name)
    assert code == 0
    lines = out.splitlines()
    assert lines[:4] == [
        f"[queue] {name}: logs of attempt 1 (SageMaker job {name})",
        f"[algo-1] Starting training job {name}",
        "[algo-1] Invoking the training script (emulated: no code runs)",
        "[algo-1] Received SIGTERM: the training job is being stopped",
    ]
    assert lines[4].startswith(f"[queue] {name}: logs of attempt 2 (SageMaker job {name}-r2-")
    assert lines[-1] == "[algo-1] Training finished: reporting success"


def test_logs_follow_waits_for_the_job_and_ends_with_it(local_env, unique):
    name = unique("followed")
    env = {**os.environ, **local_env.environment()}
    QueueClient.from_environment().submit(
        training_request(name, 1, instance_type=G4, run_seconds=1)
    )
    process = smq_process("logs", name, "--follow", env=env)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    assert process.returncode == 0, err
    assert "[algo-1] Training finished: reporting success" in out
    assert out.splitlines()[-1] == f"[queue] {name}: completed"


def test_logs_of_a_job_that_never_started_say_so(capsys, local_env, unique):
    client = QueueClient.from_environment()
    blocker, waiting = unique("blocker"), unique("waiting")
    client.submit(training_request(blocker, 9, instance_type=G4, run_seconds=3600))
    client.submit(training_request(waiting, 1, instance_type=G4))
    try:
        wait_until(lambda: client.job(blocker)["state"] == "running", f"{blocker} to run")
        code, out, err = smq(capsys, "logs", waiting)
        assert (code, out) == (0, "")
        assert f"{waiting}: waiting, no logs yet (queued at position 1" in err
    finally:
        cancelled(client, waiting, blocker)


def test_logs_of_an_unknown_job_exit_1(capsys, local_env):
    code, _, err = smq(capsys, "logs", "no-such-job")
    assert code == 1
    assert "no job named no-such-job" in err


def test_logs_follow_of_a_waiting_job_shows_its_progress_until_ctrl_c(local_env, unique):
    client = QueueClient.from_environment()
    blocker, waiting = unique("blocker"), unique("waiting")
    client.submit(training_request(blocker, 9, instance_type=G4, run_seconds=3600))
    client.submit(training_request(waiting, 1, instance_type=G4))
    env = {**os.environ, **local_env.environment()}
    process = smq_process("logs", waiting, "--follow", env=env)
    try:
        line, deadline = "", time.monotonic() + 60
        while "queued at position" not in line:
            line = process.stdout.readline()
            assert line or time.monotonic() < deadline, process.stderr.read()
    finally:
        try:
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)
        finally:
            cancelled(client, waiting, blocker)  # or the next test's jobs wait behind them
    assert process.returncode == 130


def test_logs_of_a_job_on_two_instances_name_each_host(capsys, local_env, unique):
    client = QueueClient.from_environment()
    name = unique("pair")
    client.submit(training_request(name, 1, instance_type=P5, instance_count=2, run_seconds=1))
    wait_until(lambda: client.job(name)["state"] == "completed", f"{name} to complete")
    code, out, _ = smq(capsys, "logs", name)
    assert code == 0
    hosts = {line.split(": ", 1)[0] for line in out.splitlines()[1:]}
    assert hosts == {"algo-1", "algo-2"}
    assert f"algo-2: [algo-2] Starting training job {name}" in out.splitlines()
