"""RetryOnFailure: which failures are tried again and how often, and the setting refused
when it is malformed, naming the rule and field."""

import pytest

from job_queue.config import ConfigError, Settings
from job_queue.limits import DEFAULT_RULES, RetryRule, parse_rules, retried

INTERNAL = "InternalServerError: We encountered an internal error. Please try again."
HARDWARE = "ClientError: Training failed after repairing training cluster due to hardware failure"


@pytest.mark.parametrize(
    ("title", "reason", "earlier", "said"),
    [
        ("an internal error is retried", INTERNAL, [], "(1 of 3 attempts)"),
        ("a hardware failure is retried", HARDWARE, [], "(1 of 3 attempts)"),
        ("a second one too", INTERNAL, [INTERNAL], "(2 of 3 attempts)"),
        ("other failures before do not count", INTERNAL, ["AlgorithmError: x"], "(1 of 3"),
        ("the third uses up its attempts", INTERNAL, [INTERNAL, INTERNAL], None),
        ("the user's own error is not retried", "AlgorithmError: exit code 1", [], None),
        ("a failure without a reason is not retried", None, [], None),
    ],
)
def test_default_rules(title, reason, earlier, said):
    note = retried(DEFAULT_RULES, reason, earlier)
    if said is None:
        assert note is None
    else:
        assert said in note and note.endswith(str(reason))


def test_a_pattern_matches_the_whole_reason_with_wildcards():
    rule = RetryRule("CapacityError*", 2)
    assert rule.matches("CapacityError: Unable to provision")
    assert not rule.matches("ClientError: CapacityError")  # the pattern starts the reason
    assert RetryRule("*NCCL*", 2).matches("AlgorithmError: NCCL timeout")


def test_the_first_matching_rule_decides():
    rules = parse_rules(
        '[{"failure_reason_pattern": "Internal*", "attempts": 1},'
        ' {"failure_reason_pattern": "*", "attempts": 5}]'
    )
    assert retried(rules, INTERNAL, []) is None  # 1 attempt in all: no retry
    assert retried(rules, "AlgorithmError: x", []) is not None


def test_the_setting_empty_keeps_the_defaults_and_an_empty_list_retries_nothing():
    assert parse_rules("") == DEFAULT_RULES
    assert parse_rules("[]") == ()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("{", "RETRY_ON_FAILURE: not JSON"),
        ('{"failure_reason_pattern": "x", "attempts": 2}', "must be a JSON list"),
        ('["x"]', "RETRY_ON_FAILURE[0]: must be an object"),
        ('[{"failure_reason_pattern": "", "attempts": 2}]', "[0].failure_reason_pattern"),
        ('[{"failure_reason_pattern": "x", "attempts": 11}]', "[0].attempts: must be from 1 to 10"),
        ('[{"failure_reason_pattern": "x", "attempts": 0}]', "[0].attempts: must be from 1 to 10"),
        ('[{"failure_reason_pattern": "x", "attempts": 2.5}]', "[0].attempts: must be a whole"),
        ('[{"failure_reason_pattern": "x", "attempts": true}]', "[0].attempts: must be a whole"),
        ('[{"failure_reason_pattern": "x", "attempts": 2, "on": 1}]', "[0]: unknown field on"),
    ],
)
def test_a_malformed_setting_is_refused_at_cold_start_naming_the_field(text, named):
    env = {"TABLE_NAME": "q", "CAPACITY": '{"ml.p5.48xlarge": 2}', "RETRY_ON_FAILURE": text}
    with pytest.raises(ConfigError) as error:
        Settings.from_environment(env)
    assert named in str(error.value)
