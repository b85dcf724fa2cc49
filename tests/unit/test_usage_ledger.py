"""The usage ledger and its reports, as scenario tables: what an attempt and a warm pool held,
in which phase, and how a report over a window counts it and prices it."""

import json

import pytest

from job_queue.costs import LIST_PRICES, Prices, parse_prices
from job_queue.errors import InvalidRequest
from job_queue.ledger import NOT_STARTED, Phase, Span, UsageRecord, attempt_record, pool_record
from job_queue.models import Action, Attempt, AuditEntry, Job, JobState, Outcome
from job_queue.queue_events import REPORT_ROWS, UsageReported, detail
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.scheduler.snapshot import WarmPool
from job_queue.store import table
from job_queue.store.ledger_writes import record_from_item, usage_item
from job_queue.usage_report import Window, month_due, month_window, parse_window, usage_report

P5, G5 = "ml.p5.48xlarge", "ml.g5.xlarge"
H = 3600.0
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-week"


def holding(state=JobState.RUNNING, claimed=100.0, stopping=None, **kwargs) -> Job:
    return Job(
        name="train",
        priority=1,
        seq=1,
        demand={P5: 2},
        state=state,
        submitted_at=0.0,
        request={},
        attempt_name="train-1",
        claimed_at=claimed,
        stopping_since=stopping,
        submitter="alice",
        share="team-a",
        **kwargs,
    )


def ran(started=110.0, ended=None, outcome=None, warm=None) -> tuple[Attempt, ...]:
    return (Attempt(1, "train-1", started, ended, outcome, warm_pool=warm),)


def phases(record) -> list[tuple[str, float, float]]:
    return [(s.phase.value, s.start, s.end) for s in record.spans]


# -- what one attempt held ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "job", "attempts", "end", "spans", "outcome"),
    [
        (
            "completed: provisioned from the claim until SageMaker accepted it, then ran",
            holding(),
            ran(110.0, 400.0, Outcome.COMPLETED),
            400.0,
            [("provisioning", 100, 110), ("running", 110, 400)],
            "completed",
        ),
        (
            "preempted: ran until the stop was asked for, then stopped for a minute",
            holding(JobState.PREEMPTING, stopping=300.0),
            ran(110.0, 360.0, Outcome.PREEMPTED),
            360.0,
            [("provisioning", 100, 110), ("running", 110, 300), ("stopping", 300, 360)],
            "preempted",
        ),
        (
            "cancelled while SageMaker was creating it: it never ran",
            holding(JobState.CANCELLING, stopping=105.0),
            (),
            130.0,
            [("provisioning", 100, 105), ("stopping", 105, 130)],
            NOT_STARTED,
        ),
        (
            "a start SageMaker refused held the capacity only for the claim",
            holding(JobState.STARTING),
            (),
            102.0,
            [("provisioning", 100, 102)],
            NOT_STARTED,
        ),
        (
            "a job claimed before the ledger existed counts from its attempt's start",
            holding(claimed=None),
            ran(110.0, 400.0, Outcome.COMPLETED),
            400.0,
            [("running", 110, 400)],
            "completed",
        ),
    ],
)
def test_an_attempt_record_splits_its_time_by_phase(scenario, job, attempts, end, spans, outcome):
    record = attempt_record(job, attempts, end)
    assert phases(record) == spans, scenario
    assert (record.outcome, record.name, record.demand) == (outcome, "train-1", {P5: 2})
    assert (record.submitter, record.share) == ("alice", "team-a")


def test_a_preempted_attempt_records_the_work_its_audit_says_it_lost():
    audit = AuditEntry(300.0, Action.PREEMPTED, preempted_by="urgent", lost_work_s=120)
    job = holding(JobState.PREEMPTING, stopping=300.0, history=(audit,))
    record = attempt_record(job, ran(110.0, 360.0, Outcome.PREEMPTED), 360.0)
    assert record.lost_s == 120.0
    completed = attempt_record(holding(history=(audit,)), ran(110.0, 400.0, Outcome.COMPLETED), 400)
    assert completed.lost_s == 0.0, "only a preemption loses work"


def test_a_job_never_claimed_holds_nothing():
    assert attempt_record(holding(claimed=None), (), 100.0) is None


def test_work_in_progress_has_no_outcome_yet():
    record = attempt_record(holding(), ran(), 200.0, ended=False)
    assert phases(record) == [("provisioning", 100, 110), ("running", 110, 200)]
    assert record.outcome is None


def test_a_warm_pool_is_idle_from_its_jobs_end_until_claimed_released_or_expired():
    pool = WarmPool("train-1", "train", {P5: 2}, "key", 400.0, 700.0, "team-a", None, None, "alice")
    assert phases(pool_record(pool, 500.0)) == [("pool_idle", 400, 500)]
    assert phases(pool_record(pool, 900.0)) == [("pool_idle", 400, 700)], "not past its expiry"
    record = pool_record(pool, 500.0, billed_s=100)
    assert (record.pool, record.job, record.submitter, record.billed_s) == (
        True,
        "train",
        "alice",
        100,
    )


def test_an_attempt_and_the_pool_it_left_ending_in_the_same_second_are_both_kept():
    # Found by the fault suite: a late settle and the pool's release in one second.
    attempt = record("train-1", "train", [("running", 100, 400.2)], outcome="completed")
    pool = record("train-1", "train", [("pool_idle", 400.2, 400.9)], pool=True)
    keys = {usage_item(attempt)["sk"], usage_item(pool)["sk"]}
    assert len(keys) == 2 and all(key.startswith("00000000400#train-1") for key in keys)
    assert record_from_item(table.de(table.ser(usage_item(pool)))) == pool


# -- reports ------------------------------------------------------------------------------


def record(name, job, spans, demand=None, **kwargs) -> UsageRecord:
    return UsageRecord(
        name, job, demand or {P5: 1}, tuple(Span(Phase(p), a, b) for p, a, b in spans), **kwargs
    )


LEDGER = [
    record(
        "a-1",
        "a",
        [("provisioning", 0, 60), ("running", 60, 3660), ("stopping", 3660, 3720)],
        {P5: 2},
        submitter="alice",
        share="team-a",
        outcome="preempted",
        lost_s=600,
    ),
    record("a-pool", "a", [("pool_idle", 3720, 5520)], {P5: 2}, submitter="alice", pool=True),
    record(
        "b-1",
        "b",
        [("running", 0, 7200)],
        {P5: 1, G5: 1},
        submitter="bob",
        share="team-b",
        outcome="completed",
        warm_start=True,
    ),
]
PRICES = Prices({P5: 100.0, G5: 1.0})


def rows(report) -> dict:
    return {row[report["by"]]: row for row in report["rows"]}


def test_a_report_by_submitter_sums_hours_by_phase_and_prices_what_sagemaker_bills():
    report = usage_report(LEDGER, Window(0, 86400, "submitter"), PRICES)
    alice, bob = rows(report)["alice"], rows(report)["bob"]
    # alice: 2 instances, 60 s provisioning, 1 h running, 60 s stopping, 30 min of pool.
    assert alice["instance_seconds"] == {
        "provisioning": 120,
        "running": 7200,
        "stopping": 120,
        "pool_idle": 3600,
    }
    assert alice["billable_instance_hours"] == pytest.approx((7200 + 120 + 3600) / H, abs=1e-4)
    assert alice["cost_usd"] == pytest.approx((7200 + 120 + 3600) / H * 100, abs=0.01)
    assert (alice["jobs"], alice["attempts"], alice["preemptions"]) == (1, 1, 1)
    assert alice["work_lost_instance_hours"] == pytest.approx(1200 / H, abs=1e-4)
    # bob: a p5 and a g5 for 2 h, started warm.
    assert bob["instance_seconds"]["running"] == 2 * 7200
    assert bob["cost_usd"] == 2 * 100 + 2 * 1
    assert (bob["jobs"], bob["warm_starts"]) == (1, 1)
    assert report["total"]["jobs"] == 2
    assert report["total"]["cost_usd"] == pytest.approx(alice["cost_usd"] + bob["cost_usd"])
    assert [row["submitter"] for row in report["rows"]] == ["bob", "alice"], "most billed first"


def test_a_report_by_type_counts_a_job_toward_each_type_it_holds():
    report = usage_report(LEDGER, Window(0, 86400, "type"), PRICES)
    p5, g5 = rows(report)[P5], rows(report)[G5]
    assert p5["instance_seconds"]["running"] == 7200 + 7200
    assert g5["instance_seconds"]["running"] == 7200
    assert (p5["jobs"], g5["jobs"], report["total"]["jobs"]) == (2, 1, 2)


def test_a_report_by_share_puts_pools_kept_without_a_share_under_none():
    report = usage_report(LEDGER, Window(0, 86400, "share"), PRICES)
    assert set(rows(report)) == {"team-a", "team-b", "(none)"}
    assert rows(report)["(none)"]["instance_seconds"]["pool_idle"] == 3600


def test_a_window_clips_the_time_and_counts_events_that_happened_in_it():
    report = usage_report(LEDGER, Window(1800, 3600, "job"), PRICES)
    a = rows(report)["a"]
    assert a["instance_seconds"]["running"] == 2 * 1800
    assert a["instance_seconds"]["provisioning"] == 0
    assert (a["attempts"], a["preemptions"], a["work_lost_instance_hours"]) == (1, 0, 0)
    assert rows(report)["b"]["warm_starts"] == 0, "it started before the window"


def test_a_report_splits_billable_hours_by_day_for_the_plot():
    spans = [("running", 86400 - 3600, 86400 + 1800)]
    report = usage_report(
        [record("x-1", "x", spans, submitter="al")], Window(0, 3 * 86400, "job"), PRICES
    )
    assert report["days"] == [
        {"day": "1970-01-01", "x": 1.0},
        {"day": "1970-01-02", "x": 0.5},
    ]


def test_a_plan_instance_costs_its_upfront_fee_spread_over_its_reserved_hours():
    plan = TrainingPlan(PLAN, P5, reservations=(Reservation(2, 0, 10 * H),))
    on_plan = record("p-1", "p", [("running", 0, H)], plan=PLAN, submitter="al")
    prices = Prices({P5: 100.0}, {"p5-week": 400.0})  # 400 $ over 20 instance-hours
    report = usage_report([on_plan], Window(0, 86400, "job"), prices, [plan])
    assert report["total"]["cost_usd"] == 20.0
    free = usage_report([on_plan], Window(0, 86400, "job"), Prices({P5: 100.0}), [plan])
    assert free["total"]["cost_usd"] == 0.0, "no fee given: the plan was paid for anyway"


def test_a_type_without_a_price_is_named_in_the_report():
    report = usage_report(LEDGER, Window(0, 86400, "job"), Prices({P5: 1.0}))
    assert report["unpriced_types"] == [G5]


# -- settings and query parameters ------------------------------------------------------------


def test_prices_override_the_list_prices_and_name_plans_by_name_or_arn():
    prices = parse_prices(f'{{"{G5}": 2.5, "training_plans": {{"{PLAN}": 1000}}}}')
    assert prices.per_hour[G5] == 2.5
    assert prices.per_hour[P5] == LIST_PRICES[P5]
    assert prices.plan_fees == {"p5-week": 1000.0}
    assert parse_prices("") == Prices()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (f'{{"{P5}": -1}}', f"Prices: {P5} must be a number >= 0"),
        (f'{{"{P5}": "cheap"}}', f"Prices: {P5} must be a number >= 0"),
        ('{"p5": 3}', "'p5' is not a SageMaker instance type"),
        ('{"training_plans": {"p5-week": -5}}', "Prices: training_plans.p5-week must be"),
        ('{"training_plans": [1]}', "training_plans must map plan names"),
        ("[1, 2]", "Prices must be a JSON object"),
        ("{", "Prices is not JSON"),
    ],
)
def test_a_bad_price_is_refused_naming_it(text, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        parse_prices(text)


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ({}, Window(NOW - 30 * 86400, NOW, "share")),
        ({"since": "7d", "by": "type"}, Window(NOW - 7 * 86400, NOW, "type")),
        ({"since": "12h", "until": "90m"}, Window(NOW - 12 * H, NOW - 5400, "share")),
        (
            {"since": "2023-11-01", "until": "2023-11-02T00:00:00Z"},
            Window(1698796800.0, 1698883200.0, "share"),
        ),
    ],
)
def test_a_window_from_query_parameters(query, window):
    assert parse_window(query, NOW, "share") == window


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"since": "yesterday"}, "since must be an ISO 8601 time"),
        ({"until": "2023-13-01"}, "until must be an ISO 8601 time"),
        ({"since": "1d", "until": "2d"}, "since must be before until"),
        ({"by": "team"}, "by must be one of submitter, share, type, job"),
    ],
)
def test_a_bad_window_is_refused_naming_the_parameter(query, named):
    with pytest.raises(InvalidRequest, match=named):
        parse_window(query, NOW, "share")


JAN_15 = 1_768_478_400.0  # 2026-01-15T12:00:00Z


@pytest.mark.parametrize(
    ("scenario", "reported", "due"),
    [
        ("a new queue marks last month without sending it", None, ("2025-12", False)),
        ("last month not sent yet: send it", "2025-11", ("2025-12", True)),
        ("a queue down for months sends only last month", "2025-06", ("2025-12", True)),
        ("last month already sent: nothing", "2025-12", None),
    ],
)
def test_the_monthly_report_is_due_once_a_month_has_ended(scenario, reported, due):
    assert month_due(reported, JAN_15) == due


def test_a_month_window_runs_from_its_first_day_to_the_next_months():
    december = month_window("2025-12", "share")
    assert (december.since, december.until) == (1_764_547_200.0, 1_767_225_600.0)
    assert month_window("2026-01", "job").since == december.until


def test_the_monthly_report_event_keeps_the_most_billed_rows_within_eventbridges_size():
    many = [
        record(f"j{i}-1", f"j{i}", [("running", 0, 60 + i)], outcome="completed")
        for i in range(REPORT_ROWS + 7)
    ]
    report = usage_report(many, Window(0, 86400, "job"), PRICES)
    sent = detail(UsageReported("1970-01", report, 86400.0), "queue")
    assert len(sent["rows"]) == REPORT_ROWS and sent["more_rows"] == 7
    assert sent["rows"][0]["job"] == f"j{REPORT_ROWS + 6}"  # the most billed first
    assert sent["total"]["jobs"] == REPORT_ROWS + 7
    assert len(json.dumps(sent)) < 256 * 1024
