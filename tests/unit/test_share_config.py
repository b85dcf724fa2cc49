"""The shares file: what it accepts, and every mistake refused with the share and field named."""

import json
import re

import pytest

from job_queue.config import ConfigError, Settings
from job_queue.scheduler import Share, Strategy
from job_queue.share_config import SharesError, dumps_shares, loads_shares, parse_shares

G5 = "ml.g5.xlarge"


def share(**fields):
    base = {"name": "A", "capacity": {G5: 1}, "strategy": "LEND", "in_share_preemption": False}
    return {**base, **fields}


def test_a_shares_file_reads_and_writes_back():
    text = json.dumps(
        [
            share(name="A", strategy="LEND_AND_BORROW", borrow_limit=200, in_share_preemption=True),
            share(name="B", strategy="RESERVE", capacity={G5: 2, "ml.p5.48xlarge": 1}),
        ]
    )
    shares = loads_shares(text)
    assert shares == (
        Share("A", {G5: 1}, Strategy.LEND_AND_BORROW, 200, True),
        Share("B", {G5: 2, "ml.p5.48xlarge": 1}, Strategy.RESERVE, -1, False),
    )
    assert loads_shares(dumps_shares(shares)) == shares


def test_who_may_use_a_share_reads_and_writes_back():
    who = {"max_priority": 5, "submitters": ["arn:aws:iam::123456789012:role/vision-*"]}
    (only,) = parse_shares([share(**who)])
    assert only.max_priority == 5
    assert only.submitters == ("arn:aws:iam::123456789012:role/vision-*",)
    assert loads_shares(dumps_shares([only])) == (only,)


def test_a_share_above_the_queues_max_priority_is_refused_at_cold_start():
    shares = json.dumps([share(max_priority=50)])
    with pytest.raises(ConfigError, match="SHARES: share A: max_priority 50 is above the queue"):
        Settings.from_environment({**ENV, "SHARES": shares, "MAX_PRIORITY": "10"})


def test_borrow_limit_defaults_to_unlimited():
    (only,) = parse_shares([share(strategy="LEND_AND_BORROW")])
    assert only.borrow_limit == -1 and only.borrow_cap(G5) == float("inf")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "non-empty JSON list"),
        ({"name": "A"}, "non-empty JSON list"),
        (["A"], "share 1 must be an object"),
        ([share(name="")], "share 1: name must be 1-64"),
        ([share(strategy="SHARE")], "share A: strategy 'SHARE' is not one of RESERVE, LEND"),
        ([share(capacity={G5: -1})], "share A: capacity: ml.g5.xlarge must be a whole number >= 0"),
        ([share(capacity={G5: 1.5})], "ml.g5.xlarge must be a whole number"),
        ([share(capacity={"p5": 1})], "share A: capacity: 'p5' is not a SageMaker instance type"),
        ([share(capacity={})], "share A: capacity must be an object"),
        (
            [share(borrow_limit=100)],
            "borrow_limit applies only to LEND_AND_BORROW shares, not LEND",
        ),
        ([share(strategy="RESERVE", borrow_limit=-1)], "not RESERVE"),
        ([share(strategy="LEND_AND_BORROW", borrow_limit=-2)], "borrow_limit must be a whole"),
        ([share(in_share_preemption="yes")], "in_share_preemption must be true or false"),
        ([{k: v for k, v in share().items() if k != "strategy"}], "share A: strategy is required"),
        ([share(weight=3)], "share A: unknown field(s) weight"),
        ([share(), share()], "share names must be unique: A"),
        ([share(capacity={G5: 0})], "the shares have no capacity"),
        ([share(max_priority=10000)], "share A: max_priority must be a whole number from -9999"),
        ([share(max_priority="5")], "share A: max_priority must be a whole number"),
        ([share(submitters="arn:aws:iam::1:user/a")], "share A: submitters must be a list"),
        ([share(submitters=["alice"])], "share A: submitters: 'alice' is not an IAM ARN pattern"),
    ],
)
def test_bad_shares_are_refused_naming_the_problem(value, message):
    with pytest.raises(SharesError, match=re.escape(message)):
        parse_shares(value)


ENV = {"TABLE_NAME": "q", "ALLOWED_ROLE_ARNS": "arn:aws:iam::123456789012:role/Train"}
TWO = json.dumps([share(name="A", capacity={G5: 2}), share(name="B", capacity={G5: 1})])


def test_deployed_shares_make_the_capacity():
    settings = Settings.from_environment({**ENV, "SHARES": TWO, "DEFAULT_SHARE": "B"})
    assert settings.capacity == {G5: 3}
    assert settings.layout().default_share == "B"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SHARES": "[{]"}, "SHARES: shares are not valid JSON"),
        ({"SHARES": json.dumps([share(strategy="X")])}, "SHARES: share A: strategy"),
        ({"SHARES": TWO, "DEFAULT_SHARE": "C"}, "DEFAULT_SHARE: 'C' is not a share"),
        ({"CAPACITY": '{"ml.g5.xlarge": 1}', "DEFAULT_SHARE": "A"}, "no shares are configured"),
    ],
)
def test_bad_share_settings_name_the_variable(env, named):
    with pytest.raises(ConfigError, match=named):
        Settings.from_environment({**ENV, **env})


def test_shares_applied_at_run_time_last_until_a_deployment_changes_them():
    deployed = Settings.from_environment({**ENV, "SHARES": TWO})
    applied = dumps_shares(parse_shares([share(name="A", capacity={G5: 5})]))
    # Applied with PUT /shares on top of what was deployed: in effect.
    assert deployed.layout(applied, TWO).capacity == {G5: 5}
    # A deployment with other shares since: the deployed ones win again.
    redeployed = Settings.from_environment({**ENV, "SHARES": TWO.replace('"A"', '"Z"')})
    assert [s.name for s in redeployed.layout(applied, TWO).shares] == ["Z", "B"]
    # No shares at all: the single queue.
    single = Settings.from_environment({**ENV, "CAPACITY": '{"ml.g5.xlarge": 1}'})
    assert single.layout().shares == () and single.layout().capacity == {G5: 1}


PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/research-week"


def test_a_share_names_training_plans_as_capacity_does_and_writes_them_back():
    mixed = share(name="A", capacity={G5: [1, {"training_plan": PLAN}]})
    only = share(name="B", capacity={"ml.p5.48xlarge": {"training_plan": PLAN + "-2"}})
    a, b = parse_shares([mixed, only])
    assert (a.capacity, a.plans) == ({G5: 1}, ((G5, PLAN),))
    assert (b.capacity, b.plans) == ({"ml.p5.48xlarge": 0}, (("ml.p5.48xlarge", PLAN + "-2"),))
    assert loads_shares(dumps_shares([a, b])) == (a, b)


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        (
            [
                share(name="A", capacity={G5: [1, {"training_plan": PLAN}]}),
                share(name="B", capacity={G5: {"training_plan": PLAN}}),
            ],
            f"training plan {PLAN} is named by share A and by B",
        ),
        (
            [share(name="A", capacity={G5: [{"training_plan": PLAN}, {"training_plan": PLAN}]})],
            f"training plan {PLAN} is named by share A twice",
        ),
        (
            [share(name="A", capacity={G5: [{"training_plan": "arn:aws:s3:::bucket"}]})],
            "share A: capacity: ml.g5.xlarge: 'arn:aws:s3:::bucket' is not a SageMaker "
            "training-plan ARN",
        ),
        (
            [share(name="A", capacity={G5: [1, 2, {"training_plan": PLAN}]})],
            "share A: capacity: ml.g5.xlarge must list training plans and at most one",
        ),
    ],
    ids=["in two shares", "twice in one", "not a plan", "two counts"],
)
def test_a_training_plan_in_shares_is_refused_naming_the_problem(shares, message):
    with pytest.raises(SharesError, match=re.escape(message)):
        parse_shares(shares)
