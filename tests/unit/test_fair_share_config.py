"""The fair-share settings: what a deployer writes, and the errors that name the field."""

import pytest

from job_queue.fair_share_config import FairShareError, parse_fair_share, parse_weights
from job_queue.scheduler.fair_share import FairShare


def test_a_half_life_of_zero_turns_fair_share_off():
    assert parse_fair_share("0") is None
    assert parse_fair_share(0, '{"project-x": 2}') is None


def test_a_half_life_a_look_ahead_and_weights_make_the_policy():
    fair = parse_fair_share(
        "86400", '{"arn:aws:iam::123456789012:role/research-*": 2, "project-x": 0.5}', "300"
    )
    assert fair == FairShare(
        86400.0, 300.0, (("arn:aws:iam::123456789012:role/research-*", 2.0), ("project-x", 0.5))
    )
    assert fair.weight("arn:aws:iam::123456789012:role/research-vision") == 2.0
    assert fair.weight("project-x") == 0.5
    assert fair.weight("someone-else") == 1.0


def test_no_weights_means_everyone_weighs_one():
    assert parse_weights("") == () and parse_weights("  ") == ()
    assert parse_fair_share("3600").weights == ()


@pytest.mark.parametrize(
    ("half_life", "weights", "lookahead", "message"),
    [
        ("-1", "", "600", "FairShareHalfLifeSeconds must be 0 or more (0: off), got '-1'"),
        ("a day", "", "600", "FairShareHalfLifeSeconds must be a number of seconds"),
        ("nan", "", "600", "FairShareHalfLifeSeconds must be 0 or more"),
        ("3600", "", "0", "FairShareLookaheadSeconds must be more than 0"),
        ("3600", "{not json", "600", "FairShareWeights is not JSON"),
        ("3600", '["alice"]', "600", "FairShareWeights must be a JSON object"),
        ("3600", '{"alice": 0}', "600", "the weight of alice must be more than 0, got 0"),
        ("3600", '{"alice": -2}', "600", "the weight of alice must be more than 0"),
        ("3600", '{"alice": "2"}', "600", "the weight of alice must be a number, got '2'"),
        ("3600", '{"alice": true}', "600", "the weight of alice must be a number"),
        ("3600", '{"al ice": 1}', "600", "'al ice' is neither an IAM ARN pattern"),
        ("3600", '{"team#1": 1}', "600", "'team#1' is neither an IAM ARN pattern"),
        ("3600", '{"arn:aws:s3:::bucket": 1}', "600", "FairShareWeights"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(half_life, weights, lookahead, message):
    with pytest.raises(FairShareError) as refused:
        parse_fair_share(half_life, weights, lookahead)
    assert message in str(refused.value)


def test_the_caller_names_the_fields_as_its_users_know_them():
    with pytest.raises(FairShareError, match="--fair-share-half-life must be 0 or more"):
        parse_fair_share("-5", names=("--fair-share-half-life", "--weights", "--lookahead"))
