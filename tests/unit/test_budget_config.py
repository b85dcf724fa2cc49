"""Budgets as deployers and admins write them: a share's ``budget`` in the shares file, the
``Budgets`` setting, and every way of getting one wrong, refused naming the field."""

import json

import pytest

from job_queue.budget_config import BudgetError, dumps_budgets, parse_budget, parse_budgets
from job_queue.config import ConfigError, Settings
from job_queue.scheduler.budgets import Budget, Holder, Unit, WhenSpent
from job_queue.share_config import SharesError, dumps_shares, loads_shares, parse_shares

ENV = {"TABLE_NAME": "q", "CAPACITY": '{"ml.p5.48xlarge": 2}'}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"instance_hours": 500}, Budget(500.0)),
        (
            {"dollars": 20000, "window_days": 7, "when_spent": "lowest-priority"},
            Budget(20000.0, Unit.DOLLARS, 7, WhenSpent.LOWEST_PRIORITY),
        ),
        ({"instance_hours": 0}, Budget(0.0)),  # a freeze: nothing more starts
    ],
)
def test_a_budget_as_written(given, expected):
    assert parse_budget(given, "share A") == expected
    assert parse_budget(expected.to_dict(), "share A") == expected  # as it is shown


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"instance_hours": -5}, "share A: budget: instance_hours must be a number >= 0, got -5"),
        ({"dollars": "lots"}, "share A: budget: dollars must be a number >= 0, got 'lots'"),
        ({"instance_hours": True}, "instance_hours must be a number >= 0, got True"),
        ({"instance_hours": float("inf")}, "instance_hours must be finite"),
        ({"instance_hours": 5, "dollars": 5}, "needs one of instance_hours or dollars (not both)"),
        ({"window_days": 7}, "needs one of instance_hours or dollars (got window_days)"),
        ({"instance_hours": 5, "window_days": 0}, "window_days must be a whole number of days"),
        ({"instance_hours": 5, "window_days": 1.5}, "from 1 to 365, got 1.5"),
        (
            {"instance_hours": 5, "when_spent": "never"},
            "when_spent must be wait or lowest-priority",
        ),
        ({"instance_hours": 5, "hours": 1}, "share A: budget: unknown field(s) hours"),
        (500, 'share A: budget must be an object such as {"instance_hours": 500'),
    ],
)
def test_a_budget_that_does_not_hold_is_refused_naming_the_field(given, said):
    with pytest.raises(BudgetError) as refused:
        parse_budget(given, "share A")
    assert said in str(refused.value)


def test_a_shares_file_budget_survives_the_round_trip():
    shares = parse_shares(
        [
            {"name": "A", "capacity": {"ml.g5.xlarge": 1}, "strategy": "LEND",
             "in_share_preemption": False, "budget": {"dollars": 900, "window_days": 30}},
        ]
    )  # fmt: skip
    assert shares[0].budget == Budget(900.0, Unit.DOLLARS)
    assert loads_shares(dumps_shares(shares)) == shares


def test_a_share_with_a_bad_budget_is_refused_naming_the_share():
    with pytest.raises(SharesError) as refused:
        parse_shares(
            [{"name": "A", "capacity": {"ml.g5.xlarge": 1}, "strategy": "LEND",
              "in_share_preemption": False, "budget": {"instance_hours": -1}}]
        )  # fmt: skip
    assert "share A: budget: instance_hours must be a number >= 0, got -1" in str(refused.value)


def test_submitters_budgets_name_each_submitter_exactly():
    text = json.dumps(
        {"alice": {"instance_hours": 100}, "arn:aws:iam::123456789012:role/bob": {"dollars": 5}}
    )
    budgets = parse_budgets(text)
    assert budgets == {
        Holder("submitter", "alice"): Budget(100.0),
        Holder("submitter", "arn:aws:iam::123456789012:role/bob"): Budget(5.0, Unit.DOLLARS),
    }
    assert parse_budgets(dumps_budgets(budgets)) == budgets
    assert parse_budgets("") == {}
    for bad, said in (
        ('{"arn:aws:iam::123456789012:role/ml-*": {"dollars": 5}}', "no patterns"),
        ('{"not an id": {"dollars": 5}}', "neither an IAM principal's ARN nor a fair-share-id"),
        ('["alice"]', "Budgets must be a JSON object"),
        ("{", "Budgets is not JSON"),
    ):
        with pytest.raises(BudgetError) as refused:
            parse_budgets(bad)
        assert said in str(refused.value)


def test_the_budgets_setting_is_checked_at_cold_start():
    settings = Settings.from_environment({**ENV, "BUDGETS": '{"alice": {"instance_hours": 9}}'})
    assert settings.budgets == {Holder("submitter", "alice"): Budget(9.0)}
    with pytest.raises(ConfigError) as refused:
        Settings.from_environment({**ENV, "BUDGETS": '{"alice": {"instance_hours": 9, "x": 1}}'})
    assert "BUDGETS: alice: budget: unknown field(s) x" in str(refused.value)


def test_budgets_set_at_run_time_hold_until_a_deployment_changes_them():
    deployed = '{"alice": {"instance_hours": 9}}'
    settings = Settings.from_environment({**ENV, "BUDGETS": deployed})
    raised = '{"alice": {"instance_hours": 50}}'
    alice = Holder("submitter", "alice")
    assert settings.budgets_in_effect(raised, deployed)[alice] == Budget(50.0)
    assert settings.budgets_in_effect(raised, '{"old": 1}')[alice] == Budget(9.0)
    assert settings.budgets_in_effect(None, None)[alice] == Budget(9.0)
