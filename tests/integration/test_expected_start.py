"""Expected start times through the real handler, checked against what then happens when the
emulation runs on."""

from datetime import datetime

from job_queue.scheduler import Policy
from tests.integration.helpers import job, submit

NO_ALLOWANCE = Policy(start_allowance_s=0)


def expected(cloud) -> dict[str, dict]:
    return {row["name"]: row["expected_start"] for row in cloud.jobs() if row["position"]}


def run_until_started(cloud, names, step=60, deadline=50_000):
    waited = 0
    while any(job(cloud, n)["first_started_at"] is None for n in names) and waited < deadline:
        cloud.advance(step)
        waited += step
    return {n: job(cloud, n)["first_started_at"] for n in names}


def seconds(iso_time: str) -> float:
    return datetime.fromisoformat(iso_time).timestamp()


def test_jobs_that_run_their_whole_bound_start_exactly_at_the_latest(make_cloud):
    cloud = make_cloud(policy=NO_ALLOWANCE)
    for name, runtime, count in [
        ("r1", 1000, 1),
        ("r2", 2500, 1),
        ("a", 900, 1),
        ("big", 700, 2),
        ("b", 400, 1),
    ]:
        submit(cloud, name, 1, instance_count=count, max_runtime=runtime, run_seconds=runtime)
    forecast = expected(cloud)
    assert set(forecast) == {"a", "big", "b"}
    started = run_until_started(cloud, list(forecast))
    assert started == {name: e["at_latest"] for name, e in forecast.items()}


def test_likely_start_follows_how_long_similar_jobs_ran(make_cloud):
    cloud = make_cloud(policy=NO_ALLOWANCE)
    # Two jobs of the kind complete in 1000 s, although they may run 5000 s.
    for name in ("warmup-1", "warmup-2"):
        submit(cloud, name, 1, max_runtime=5000, run_seconds=1000)
    cloud.advance(1000)
    assert job(cloud, "warmup-2")["state"] == "completed"
    for name in ("r1", "r2", "next"):
        submit(cloud, name, 1, max_runtime=5000, run_seconds=1000)
    now = cloud.clock()
    forecast = job(cloud, "next")["expected_start"]
    assert forecast["based_on"] == 2
    assert seconds(forecast["likely"]) == now + 1000
    assert seconds(forecast["at_latest"]) == now + 5000
    started = run_until_started(cloud, ["next"])
    assert started["next"] == forecast["likely"]


def test_the_submit_answer_says_when_the_job_is_expected_to_start(cloud):
    submit(cloud, "first", 1, max_runtime=3600)
    submit(cloud, "second", 1, max_runtime=3600)
    body = submit(cloud, "third", 1, max_runtime=3600)
    assert body["job"]["expected_start"]["at_latest"] is not None
    assert body["job"]["expected_start"] == job(cloud, "third")["expected_start"]
    # A job that runs has no expected start.
    assert job(cloud, "first")["expected_start"] is None
