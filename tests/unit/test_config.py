"""The Lambda's settings: read from the environment, refused with a message when wrong."""

import pytest

from job_queue.config import ConfigError, Settings

ROLE = "arn:aws:iam::123456789012:role/Train"


def _env(**overrides):
    env = {"TABLE_NAME": "queue", "CAPACITY": '{"ml.p5.48xlarge": 2}', "ALLOWED_ROLE_ARNS": ROLE}
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


def test_a_capacity_entry_may_say_a_type_is_uncapped():
    settings = Settings.from_environment(
        _env(CAPACITY='{"ml.p5.48xlarge": 2, "ml.c5.18xlarge": "unlimited"}')
    )
    assert settings.capacity == {"ml.p5.48xlarge": 2}
    assert settings.uncapped == {"ml.c5.18xlarge"}
    assert settings.layout().uncapped == {"ml.c5.18xlarge"}


def test_with_shares_capacity_names_only_the_uncapped_types():
    shares = '[{"name": "a", "capacity": {"ml.p5.48xlarge": 1}, "strategy": "LEND", '
    shares += '"in_share_preemption": false}]'
    settings = Settings.from_environment(
        _env(SHARES=shares, CAPACITY='{"ml.p5.48xlarge": 9, "ml.c5.18xlarge": "unlimited"}')
    )
    assert settings.capacity == {"ml.p5.48xlarge": 1}  # the shares' limits
    assert settings.layout().uncapped == {"ml.c5.18xlarge"}


def test_settings_from_the_environment():
    settings = Settings.from_environment(
        _env(
            ALLOWED_ROLE_ARNS=f"{ROLE}, {ROLE}2",
            QUEUE_NAME="team-a",
            PREEMPTION="false",
            MIN_RUN_SECONDS="900",
            KEEP_ALIVE_SECONDS="600",
            WARM_AFFINITY_SECONDS="86400",
        )
    )
    assert settings.capacity == {"ml.p5.48xlarge": 2}
    assert settings.allowed_role_arns == {ROLE, f"{ROLE}2"}
    assert settings.queue_name == "team-a"
    assert settings.policy.preemption is False
    assert settings.policy.min_run_s == 900
    assert settings.keep_alive_seconds == 600
    assert settings.policy.warm_affinity_s == 86400


def test_admins_and_the_priority_ceiling_from_the_environment():
    settings = Settings.from_environment(
        _env(
            ADMIN_PRINCIPALS="arn:aws:iam::123456789012:role/QueueAdmin, "
            "arn:aws:iam::123456789012:user/ops-*",
            MAX_PRIORITY="100",
        )
    )
    assert settings.admin_principals == (
        "arn:aws:iam::123456789012:role/QueueAdmin",
        "arn:aws:iam::123456789012:user/ops-*",
    )
    assert settings.max_priority == 100


def test_without_admins_nobody_is_one_and_the_ceiling_is_the_top_priority():
    settings = Settings.from_environment(_env())
    assert settings.admin_principals == () and settings.max_priority == 9999


def test_defaults_preempt_at_once_and_backfill():
    policy = Settings.from_environment(_env()).policy
    assert (policy.preemption, policy.backfill, policy.min_run_s) == (True, True, 0)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"TABLE_NAME": None}, "TABLE_NAME"),
        ({"CAPACITY": "two"}, "CAPACITY"),
        ({"CAPACITY": "{}"}, "CAPACITY"),
        ({"CAPACITY": '{"p5": 2}'}, "p5"),
        ({"CAPACITY": '{"ml.p5.48xlarge": -1}'}, "ml.p5.48xlarge"),
        ({"CAPACITY": '{"ml.p5.48xlarge": 1.5}'}, "ml.p5.48xlarge"),
        ({"ALLOWED_ROLE_ARNS": "Admin"}, "ALLOWED_ROLE_ARNS"),
        ({"MIN_RUN_SECONDS": "ten"}, "MIN_RUN_SECONDS"),
        ({"MIN_RUN_SECONDS": "-5"}, "MIN_RUN_SECONDS"),
        ({"KEEP_ALIVE_SECONDS": "1.5"}, "KEEP_ALIVE_SECONDS"),
        ({"ADMIN_PRINCIPALS": "alice"}, "ADMIN_PRINCIPALS: 'alice' is not an IAM ARN pattern"),
        ({"ADMIN_PRINCIPALS": "arn:aws:s3:::bucket"}, "ADMIN_PRINCIPALS"),
        ({"MAX_PRIORITY": "high"}, "MAX_PRIORITY must be a whole number"),
        ({"MAX_PRIORITY": "10000"}, "MAX_PRIORITY must be from -9999 to 9999"),
        (
            {"CAPACITY": '{"ml.p5.48xlarge": 2, "ml.c5.18xlarge": "unlimted"}'},
            "CAPACITY: ml.c5.18xlarge must have a whole number >= 0 or 'unlimited', got 'unlimted'",
        ),
        (
            {"CAPACITY": '{"ml.c5.18xlarge": "unlimited"}'},
            "at least one instance type must have a cap",
        ),
        (
            {"CAPPED_INSTANCE_TYPES": "ml.g5.xlarge"},
            "CAPACITY: ml.p5.48xlarge not in CappedInstanceTypes",
        ),
    ],
)
def test_bad_settings_name_the_variable(overrides, named):
    with pytest.raises(ConfigError, match=named):
        Settings.from_environment(_env(**overrides))
