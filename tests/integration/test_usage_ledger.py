"""The usage ledger through the real handler and the SageMaker emulator: GET /usage reports
what each job held, in which phase, and what it cost — checked to the second against a day
worked out by hand (a job preempted once, a warm pool reused, a training plan)."""

from datetime import UTC, datetime

from tjq.local.calls import ACCOUNT, training_request
from tjq.queue_log import event_line, read_events

from job_queue.costs import Prices
from tests.conftest import P5
from tests.integration.helpers import job, states
from tests.integration.test_warm_pools import warm

ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/p5-plan"
ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{ACCOUNT}:user/bob"
HOURS = 3 * 3600  # every job's MaxRuntimeInSeconds: short enough for the plan
ON_DEMAND = 50.0  # $ per p5 instance-hour, as set in Prices
PLAN_FEE = 1000.0  # the plan's upfront fee: one instance for 10 hours, $100 an instance-hour


def add(cloud, request, caller):
    status, body = cloud.api("POST", "/add-job", request, caller=caller)
    assert status == 201, body


def report(cloud, query="by=job") -> dict:
    status, body = cloud.api("GET", f"/usage?{query}")
    assert status == 200, body
    return body["report"]


def rows(answer) -> dict:
    by = answer["by"]
    return {row[by]: row for row in answer["rows"]}


def seconds(row) -> dict:
    return {phase: s for phase, s in row["instance_seconds"].items() if s}


def usage_cloud(make_cloud):
    """One on-demand p5 and one reserved on a plan open for the next 10 hours."""
    prices = Prices({P5: ON_DEMAND}, {"p5-plan": PLAN_FEE})
    return make_cloud(
        {P5: [1, {"training_plan": ARN}]},
        training_plans=[f"p5-plan={P5}:1:0:36000"],
        prices=prices,
    )


def plan_in_use(cloud) -> int:
    return next(p["in_use"] for p in cloud.api("GET", "/jobs")[1]["plans"])


def test_a_day_of_usage_reported_to_the_second(make_cloud):
    cloud = usage_cloud(make_cloud)
    t0 = cloud.clock()
    # 0 s: alice's low-priority job takes the plan's instance (reserved capacity first), and
    # bob's job the on-demand one; bob's keeps its instance 600 s as a warm pool.
    add(cloud, training_request("low", 0, run_seconds=3600, max_runtime=HOURS), ALICE)
    add(cloud, warm("bobs", 1, keep_alive=600, run_seconds=300, max_runtime=HOURS), BOB)
    assert states(cloud) == {"low": "running", "bobs": "running"}
    cloud.advance(400)  # bobs completed at 300 s: its pool has been idle 100 s
    # 400 s: bob's high-priority job starts on the pool (a cold start avoided).
    add(cloud, warm("high", 5, keep_alive=0, run_seconds=300, max_runtime=HOURS), BOB)
    assert job(cloud, "high")["attempts"][-1]["warm_pool_of"] == "bobs"
    cloud.advance(100)
    # 500 s: urgent preempts low (500 s of work lost: no checkpoints); low stops in 60 s and
    # urgent runs on the plan's instance from 560 s to 1160 s.
    add(cloud, training_request("urgent", 9, run_seconds=600, max_runtime=HOURS), ALICE)
    assert states(cloud)["low"] == "preempting"
    cloud.advance(200)  # 700 s: high ends, and low resumes on the on-demand instance
    assert states(cloud)["low"] == "running"
    cloud.advance(5000 - 700)  # low's second attempt ran 3600 s: it ended at 4300 s

    answer = report(cloud, "by=job&since=2h")
    assert answer["since"] < answer["until"]
    by_job = rows(answer)
    assert {name: seconds(row) for name, row in by_job.items()} == {
        "low": {"running": 500 + 3600, "stopping": 60},
        "bobs": {"running": 300, "pool_idle": 100},
        "high": {"running": 300},
        "urgent": {"running": 600},
    }
    low, bobs, high, urgent = (by_job[n] for n in ("low", "bobs", "high", "urgent"))
    assert (low["attempts"], low["preemptions"], low["jobs"]) == (2, 1, 1)
    assert low["work_lost_instance_hours"] == round(500 / 3600, 4)
    assert high["warm_starts"] == 1 and bobs["warm_starts"] == 0
    # SageMaker billed bobs' pool the 100 s it was idle (ResourceRetainedBillableTimeInSeconds).
    assert bobs["pool_billed_instance_hours"] == round(100 / 3600, 4)
    # On the plan an instance-hour costs its fee over its hours ($100); on-demand $50.
    assert low["cost_usd"] == round(560 / 3600 * 100 + 3600 / 3600 * ON_DEMAND, 2)
    assert bobs["cost_usd"] == round(400 / 3600 * ON_DEMAND, 2)
    assert high["cost_usd"] == round(300 / 3600 * ON_DEMAND, 2)
    assert urgent["cost_usd"] == round(600 / 3600 * 100, 2)
    total = answer["total"]
    assert total["instance_seconds"]["running"] == 500 + 3600 + 300 + 300 + 600
    assert (total["jobs"], total["attempts"], total["preemptions"]) == (4, 5, 1)
    assert answer["unpriced_types"] == []

    by_person = rows(report(cloud, "by=submitter&since=2h"))
    assert set(by_person) == {ALICE, BOB}
    assert by_person[ALICE]["billable_instance_hours"] == round((4160 + 600) / 3600, 4)
    assert by_person[BOB]["billable_instance_hours"] == round(700 / 3600, 4)
    # A window that ends before low resumed counts only what was held until then.
    early = rows(report(cloud, f"by=job&since={_iso(t0)}&until={_iso(t0 + 700)}"))
    assert seconds(early["low"]) == {"running": 500, "stopping": 60}
    assert seconds(early["urgent"]) == {"running": 140}


def test_what_runs_now_is_counted_so_far(make_cloud):
    cloud = usage_cloud(make_cloud)
    add(cloud, training_request("long", 1, run_seconds=7200, max_runtime=HOURS), ALICE)
    cloud.advance(1800)
    row = rows(report(cloud))["long"]
    assert seconds(row) == {"running": 1800}
    assert (row["attempts"], row["jobs"]) == (1, 1)


def test_a_report_asked_for_wrongly_is_refused_naming_the_parameter(cloud):
    for query, named in [
        ("by=team", "by must be one of submitter, share, type, job, got 'team'"),
        ("since=yesterday", "since must be an ISO 8601 time"),
        ("since=2026-11-02&until=2026-11-01", "since must be before until"),
        ("until=1e9", "until must be an ISO 8601 time"),
    ]:
        status, body = cloud.api("GET", f"/usage?{query}")
        assert status == 400, (query, body)
        assert named in body["message"], (query, body)


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_the_first_sweep_after_a_month_ends_sends_its_usage_report_once(make_cloud):
    cloud = make_cloud({P5: 2}, prices=Prices({P5: ON_DEMAND}))
    cloud.sweep()  # a new queue: it has nothing to report for last month
    add(cloud, training_request("january", 1, run_seconds=3600), ALICE)
    cloud.advance(3600)
    assert _reports(cloud) == []
    cloud.advance(31 * 86400)  # February
    cloud.sweep()
    cloud.sweep()
    (event,) = _reports(cloud)
    assert (event["month"], event["by"], event["since"]) == (
        "2026-01",
        "submitter",
        "2026-01-01T00:00:00Z",
    )
    (row,) = event["rows"]
    assert (row["submitter"], row["instance_seconds"]["running"], row["cost_usd"]) == (
        ALICE,
        3600,
        ON_DEMAND,
    )
    assert event_line(event).endswith(
        "usage report 2026-01: 1 billable instance-hours, $50.00, 1 jobs, 0 preemptions"
    )


def _reports(cloud) -> list[dict]:
    return [e for e in read_events(cloud.logs, cloud.settings.queue_name) if e.get("month")]
