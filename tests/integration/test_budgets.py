"""Budgets through the real handler and the SageMaker emulator: a submitter or a share that
spent its instance-hours waits (or runs only on what nobody else wants), counted from the
ledger the ending attempts wrote, and an admin's raised budget lets it go on."""

from tjq.local.calls import ACCOUNT, training_request
from tjq.queue_log import event_line, read_events

from job_queue.costs import Prices
from job_queue.scheduler import Share, Strategy
from job_queue.scheduler.budgets import DAY, Budget, Holder, Unit, WhenSpent
from job_queue.share_config import share_to_dict
from tests.conftest import P5
from tests.integration.helpers import job, states

ALICE = f"arn:aws:iam::{ACCOUNT}:user/alice"
BOB = f"arn:aws:iam::{ACCOUNT}:user/bob"
HOUR = 3600
G5 = "ml.g5.xlarge"


def add(cloud, name, priority=0, caller=ALICE, **kwargs):
    request = training_request(name, priority, max_runtime=6 * HOUR, **kwargs)
    status, body = cloud.api("POST", "/add-job", request, caller=caller)
    assert status == 201, body


def waiting_for(cloud, name) -> dict:
    return job(cloud, name)["waiting_for"]


def test_a_spent_budget_makes_its_jobs_wait_until_the_window_frees(make_cloud):
    budget = {Holder("submitter", ALICE): Budget(2, window_days=1)}
    cloud = make_cloud({P5: 2}, budgets=budget)
    day = int(cloud.clock() // DAY)
    add(cloud, "alice-1", run_seconds=HOUR, instance_count=2)  # 2 instance-hours: all of it
    cloud.advance(HOUR + 60)
    assert job(cloud, "alice-1")["state"] == "completed"
    add(cloud, "alice-2", priority=5, run_seconds=HOUR)
    add(cloud, "bob-1", caller=BOB, run_seconds=HOUR)
    assert states(cloud)["alice-2"] == "pending"
    assert states(cloud)["bob-1"] == "running"  # a spent budget holds back nobody else
    why = waiting_for(cloud, "alice-2")
    assert why["code"] == "budget"
    assert f"submitter {ALICE} spent its budget: 2.0 of 2 instance-hours" in why["message"]
    assert why["until"] == "2026-01-02T00:00:00Z"  # the day it was spent leaves the window
    cloud.advance((day + 1) * DAY - cloud.clock() + 60)
    cloud.sweep()  # the first sweep of the next day
    assert job(cloud, "alice-2")["state"] in ("running", "completed")


def test_work_in_progress_counts_and_a_spent_holder_is_preempted_first(make_cloud):
    budget = {Holder("submitter", ALICE): Budget(1, when_spent=WhenSpent.LOWEST_PRIORITY)}
    cloud = make_cloud({P5: 2}, budgets=budget)
    add(cloud, "alice-long", priority=9, run_seconds=4 * HOUR)
    cloud.advance(HOUR + 60)  # it has held its instance for an hour: alice's budget is spent
    add(cloud, "bob-big", priority=0, caller=BOB, run_seconds=HOUR, instance_count=2)
    # bob's priority-0 job preempts alice's priority-9 one: hers counts as the lowest now.
    assert states(cloud)["alice-long"] == "preempting"
    cloud.advance(120)
    assert states(cloud) == {"alice-long": "preempted", "bob-big": "running"}
    why = waiting_for(cloud, "alice-long")
    assert why["code"] == "budget" and "nobody else wants" in why["message"]


def test_a_budget_in_dollars_is_priced_as_the_usage_report_prices(make_cloud):
    budget = {Holder("submitter", ALICE): Budget(100, Unit.DOLLARS)}
    cloud = make_cloud({P5: 1}, budgets=budget, prices=Prices({P5: 60.0}))
    add(cloud, "alice-1", run_seconds=2 * HOUR)  # $120 by its end
    cloud.advance(2 * HOUR + 60)
    add(cloud, "alice-2", run_seconds=HOUR)
    why = waiting_for(cloud, "alice-2")
    assert why["code"] == "budget" and "120.0 of 100 dollars" in why["message"]


def test_an_admin_raises_a_shares_budget_at_run_time(make_cloud):
    shares = [
        Share("A", {G5: 1}, Strategy.LEND, budget=Budget(1, window_days=7)),
        Share("B", {G5: 1}, Strategy.LEND),
    ]
    cloud = make_cloud({}, shares=shares)
    add(cloud, "a-1", instance_type=G5, share="A", run_seconds=HOUR + 60)
    cloud.advance(HOUR + 120)
    add(cloud, "a-2", instance_type=G5, share="A", run_seconds=HOUR)
    assert waiting_for(cloud, "a-2")["code"] == "budget"
    layout = [share_to_dict(s) for s in shares]
    layout[0]["budget"] = {"instance_hours": 10, "window_days": 7}
    status, body = cloud.api("PUT", "/shares", layout)
    assert status == 200, body
    assert states(cloud)["a-2"] == "running"
    status, body = cloud.api("GET", "/shares")
    assert body["shares"][0]["budget"] == {
        "instance_hours": 10.0,
        "window_days": 7,
        "when_spent": "wait",
    }


def test_a_budget_that_does_not_hold_is_refused_and_changes_nothing(make_cloud):
    shares = [Share("A", {G5: 1}, Strategy.LEND, budget=Budget(1))]
    cloud = make_cloud({}, shares=shares)
    layout = [share_to_dict(s) for s in shares]
    for bad, said in (
        ({"instance_hours": -1}, "instance_hours must be a number >= 0, got -1"),
        ({"instance_hours": 5, "window_days": 0}, "window_days must be a whole number"),
        ({"dollars": 5, "when_spent": "never"}, "when_spent must be wait or lowest-priority"),
        ({"hours": 5}, "unknown field(s) hours"),
    ):
        layout[0]["budget"] = bad
        status, body = cloud.api("PUT", "/shares", layout)
        assert status == 400 and said in body["message"], body
    assert cloud.api("GET", "/shares")[1]["shares"][0]["budget"]["instance_hours"] == 1.0


def _warnings(cloud) -> list[dict]:
    return [e for e in read_events(cloud.logs, cloud.settings.queue_name) if e.get("holder")]


def test_the_sweep_warns_at_80_percent_and_when_spent_once_each(make_cloud):
    budget = {Holder("submitter", ALICE): Budget(10, window_days=1)}
    cloud = make_cloud({P5: 2}, budgets=budget)
    add(cloud, "alice-1", run_seconds=12 * HOUR, instance_count=1)
    cloud.advance(7 * HOUR)
    cloud.sweep()
    assert _warnings(cloud) == []  # 70%
    cloud.advance(HOUR + 60)
    cloud.sweep()
    cloud.sweep()  # a second sweep at the same level sends nothing more
    (warned,) = _warnings(cloud)
    assert (warned["holder"], warned["level"], warned["is_spent"]) == (
        f"submitter {ALICE}",
        0.8,
        False,
    )
    assert event_line(warned).endswith(f"budget of submitter {ALICE} 80% spent: 8.01667 of 10 "
                                       "instance-hours in 1 days")  # fmt: skip
    cloud.advance(2 * HOUR)
    cloud.sweep()
    assert [(w["level"], w["is_spent"]) for w in _warnings(cloud)] == [(0.8, False), (1.0, True)]


def test_an_admin_raises_a_submitters_budget_at_run_time(make_cloud):
    admin = f"arn:aws:iam::{ACCOUNT}:role/platform-admin"
    budget = {Holder("submitter", ALICE): Budget(1, window_days=7)}
    cloud = make_cloud({P5: 1}, budgets=budget, admins=[admin])
    add(cloud, "alice-1", run_seconds=HOUR + 60)
    cloud.advance(HOUR + 120)
    add(cloud, "alice-2", run_seconds=HOUR)
    assert waiting_for(cloud, "alice-2")["code"] == "budget"

    raised = {ALICE: {"instance_hours": 5, "window_days": 7}}
    status, body = cloud.api("PUT", "/budgets", raised, caller=ALICE)
    assert status == 403 and "change the budgets" in body["message"]
    status, body = cloud.api("PUT", "/budgets", {ALICE: {"instance_hours": "lots"}}, caller=admin)
    assert status == 400 and "instance_hours must be a number >= 0" in body["message"]
    assert job(cloud, "alice-2")["state"] == "pending"  # nothing changed

    status, body = cloud.api("PUT", "/budgets", raised, caller=admin)
    assert status == 200, body
    assert job(cloud, "alice-2")["state"] == "running"
    (standing,) = body["budgets"]
    assert standing["budget"]["instance_hours"] == 5.0 and not standing["is_spent"]
    assert body["budgets_changed"]["by"] == admin
