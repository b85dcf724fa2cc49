"""`smq events` (the queue's events log) and `smq status --watch`, against the local API."""

import os
import signal
import threading
import time

from tjq.api import QueueClient
from tjq.cli import main
from tjq.local.calls import training_request

from tests.client.cli_runs import smq
from tests.client.conftest import G4, smq_process, wait_until


def move(line: str) -> str:
    """An event line's state change, without the reason a job waits (which depends on what
    the other tests sharing the local API have queued)."""
    return line.split(" ", 2)[2].split(": waits, ")[0].strip()


def test_events_list_a_jobs_state_changes_in_order(capsys, local_env, unique):
    client = QueueClient.from_environment()
    name = unique("evented")
    client.submit(training_request(name, 1, instance_type=G4, run_seconds=1))
    # An invocation publishes its events as it ends: just after the change is visible.
    out = wait_until(
        lambda: (
            (listed := smq(capsys, "events", "--job", name))[0] == 0
            and "-> completed" in listed[1]
            and listed[1]
        ),
        f"{name}'s completion among its events",
    )
    moves = [move(line) for line in out.splitlines()]
    assert moves == [
        "submitted -> pending",
        "pending -> starting (attempt 1)",
        "starting -> running (attempt 1)",
        "running -> completed (attempt 1)",
    ]
    assert all(line.split()[1] == name for line in out.splitlines())


def test_events_of_an_unknown_queue_name_the_missing_log(capsys, local_env):
    code, _, err = smq(capsys, "events", "--queue", "no-such-queue")
    assert code == 1
    assert "no events log group /aws/events/training-job-queue/no-such-queue" in err


def test_events_follow_prints_new_events_until_ctrl_c(local_env, unique):
    name = unique("followed")
    env = {**os.environ, **local_env.environment()}
    follower = smq_process("events", "--follow", "--job", name, env=env)
    try:
        QueueClient.from_environment().submit(
            training_request(name, 1, instance_type=G4, run_seconds=1)
        )
        # Read in a thread: a job that never completes must fail the test, not hang it.
        lines: list[str] = []

        def read() -> None:
            for line in follower.stdout:
                lines.append(line)

        threading.Thread(target=read, daemon=True).start()
        wait_until(lambda: any("-> completed" in line for line in lines), f"{name} to complete")
    finally:
        follower.send_signal(signal.SIGINT)
        follower.communicate(timeout=30)
    assert follower.returncode == 130
    assert move(lines[0]) == "submitted -> pending"


def test_status_watch_redraws_until_ctrl_c(local_env):
    env = {**os.environ, **local_env.environment()}
    process = smq_process("status", "--watch", "0.2", env=env)
    frames, deadline = 0, time.monotonic() + 60
    try:
        while frames < 2:
            line = process.stdout.readline()
            assert line or time.monotonic() < deadline, process.stderr.read()
            frames += "smq status, every 0.2 s (Ctrl-C to stop)" in line
            assert time.monotonic() < deadline, "no second frame"
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert process.returncode == 130


def test_status_watch_refuses_a_bad_interval(capsys):
    import pytest

    with pytest.raises(SystemExit) as exited:
        main(["status", "--watch", "0"])
    assert exited.value.code == 2
    assert "expected seconds > 0" in capsys.readouterr().err
