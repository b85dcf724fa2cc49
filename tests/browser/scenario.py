"""A short, scripted day on a local API with two quota shares of one ml.g5.xlarge each,
as `smq ui`'s tests and the README's screenshot show it (real time, a few seconds):

1. ``warm-up`` (share QS1) runs and leaves a warm pool, idle for two seconds;
2. ``tune-a`` (QS1) starts warm on it, and ``tune-b`` (QS1) borrows QS2's idle instance;
3. ``urgent`` (QS2) reclaims it: ``tune-b`` is preempted and waits in line again.
"""

import contextlib
import time

from tjq.api import QueueClient
from tjq.local.calls import training_request

from job_queue.scheduler import Share, Strategy
from tests.client.conftest import quiet_local_api

G5 = "ml.g5.xlarge"
SHARES = (
    Share("QS1", {G5: 1}, Strategy.LEND_AND_BORROW, borrow_limit=200),
    Share("QS2", {G5: 1}, Strategy.LEND),
)


def request(name: str, priority: int, share: str, run_seconds: float, keep_alive: int = 0) -> dict:
    found = training_request(name, priority, G5, run_seconds=run_seconds, share=share)
    found["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep_alive
    return found


def wait_for(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return value


def states(client: QueueClient) -> dict[str, str]:
    return {row["name"]: row["state"] for row in client.jobs()["jobs"]}


@contextlib.contextmanager
def scripted_day():
    """The local API after the day above, and its client: ``tune-a`` and ``urgent`` run,
    ``tune-b`` waits."""
    # The API shows times to the second: each phase drawn lasts at least one (a stop 2 s,
    # the pool idle 2 s, tune-b running 2 s before it is preempted).
    with quiet_local_api(shares=SHARES, run_seconds=600, stop_seconds=2) as local:
        client = QueueClient(local.api_url)
        client.submit(request("warm-up", 1, "QS1", run_seconds=1, keep_alive=600))
        wait_for(lambda: client.jobs()["pools"], "warm-up's warm pool")
        time.sleep(2)
        client.submit(request("tune-a", 1, "QS1", run_seconds=3600, keep_alive=600))
        client.submit(request("tune-b", 1, "QS1", run_seconds=3600))
        wait_for(lambda: states(client) == {"tune-a": "running", "tune-b": "running"}, "tune-*")
        time.sleep(2)
        client.submit(request("urgent", 5, "QS2", run_seconds=3600))
        wait_for(
            lambda: (
                states(client) == {"tune-a": "running", "urgent": "running", "tune-b": "preempted"}
            ),
            "urgent to reclaim QS2's instance from tune-b",
        )
        yield local, client
