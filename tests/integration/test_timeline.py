"""GET /timeline through the real handler and the SageMaker emulator: the attempts and warm
pools that held the instances over a window, as `smq ui` draws them — the same hand-worked
day as the usage ledger's (a preemption with lost work, a warm start, a pool, a plan)."""

from datetime import datetime

from tjq.local.calls import training_request

from tests.integration.test_usage_ledger import ALICE, BOB, HOURS, add, usage_cloud
from tests.integration.test_warm_pools import warm


def timeline(cloud, query: str = "") -> dict:
    status, body = cloud.api("GET", f"/timeline{query}")
    assert status == 200, body
    return body


def at(cloud, t0: float, text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() - t0


def phases(cloud, t0, row) -> list[tuple[str, float, float]]:
    return [(s["phase"], at(cloud, t0, s["start"]), at(cloud, t0, s["end"])) for s in row["spans"]]


def test_the_timeline_shows_each_attempt_and_pool_of_the_day_in_order(make_cloud):
    cloud = usage_cloud(make_cloud)
    t0 = cloud.clock()
    add(cloud, training_request("low", 0, run_seconds=3600, max_runtime=HOURS), ALICE)
    add(cloud, warm("bobs", 1, keep_alive=600, run_seconds=300, max_runtime=HOURS), BOB)
    cloud.advance(400)
    add(cloud, warm("high", 5, keep_alive=0, run_seconds=300, max_runtime=HOURS), BOB)
    cloud.advance(100)
    add(cloud, training_request("urgent", 9, run_seconds=600, max_runtime=HOURS), ALICE)
    cloud.advance(1000)  # 1500 s: low's second attempt has run since 700 s

    answer = timeline(cloud)
    rows = [(r["job"], r["kind"]) for r in answer["records"]]
    # Oldest first: low and bobs at 0 s, bobs' pool at 300 s, high at 400 s, urgent
    # claimed at 500 s, low again at 700 s.
    assert rows == [
        ("bobs", "attempt"),
        ("low", "attempt"),
        ("bobs", "pool"),
        ("high", "attempt"),
        ("urgent", "attempt"),
        ("low", "attempt"),
    ]
    bobs, low, pool, high, urgent, low_again = answer["records"]
    # low ran 500 s, was preempted by urgent (500 s of work lost) and stopped in 60 s.
    assert phases(cloud, t0, low) == [("running", 0, 500), ("stopping", 500, 560)]
    assert (low["outcome"], low["lost_work_seconds"], low["priority"]) == ("preempted", 500, 0)
    assert (low["start"], low["submitter"], low["in_progress"]) == ("cold", ALICE, False)
    # bobs' pool was idle 100 s, then high started on it: a warm start.
    assert phases(cloud, t0, pool) == [("pool_idle", 300, 400)]
    assert (pool["sagemaker_job_name"], pool["start"]) == ("bobs", None)
    assert (high["start"], high["outcome"], bobs["outcome"]) == ("warm", "completed", "completed")
    # urgent waited for low to stop: its claim held the plan's instance from 500 s.
    assert urgent["training_plan"] is not None and urgent["lost_work_seconds"] is None
    assert at(cloud, t0, urgent["queued_at"]) == 500
    # low's second attempt is in progress, and its wait began when the first one ended.
    assert low_again["in_progress"] and low_again["outcome"] is None
    assert at(cloud, t0, low_again["queued_at"]) == 560
    assert phases(cloud, t0, low_again) == [("running", 700, 1500)]


def test_a_window_shows_only_what_held_instances_in_it(make_cloud):
    cloud = usage_cloud(make_cloud)
    add(cloud, training_request("early", 1, run_seconds=600, max_runtime=HOURS), ALICE)
    cloud.advance(7200)
    add(cloud, training_request("later", 1, run_seconds=600, max_runtime=HOURS), ALICE)
    cloud.advance(60)
    assert [r["job"] for r in timeline(cloud, "?since=1h")["records"]] == ["later"]
    assert [r["job"] for r in timeline(cloud)["records"]] == ["early", "later"]  # the last day
    answer = timeline(cloud, "?since=3h&until=1h")
    assert [r["job"] for r in answer["records"]] == ["early"]
    assert answer["since"] < answer["until"] < answer["now"]


def test_a_timeline_asked_for_wrongly_is_refused_naming_the_parameter(cloud):
    for query, named in [
        ("since=yesterday", "since must be an ISO 8601 time"),
        ("since=1h&until=2h", "since must be before until"),
    ]:
        status, body = cloud.api("GET", f"/timeline?{query}")
        assert status == 400, (query, body)
        assert named in body["message"], (query, body)
