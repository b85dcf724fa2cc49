"""The Lambda's settings: read from the environment, refused with a message when wrong."""

import json
import re

import pytest

from job_queue.config import ConfigError, Settings

ROLE = "arn:aws:iam::123456789012:role/Train"


def _env(**overrides):
    env = {"TABLE_NAME": "queue", "CAPACITY": '{"ml.p5.48xlarge": 2}', "ALLOWED_ROLE_ARNS": ROLE}
    if "SHARES" in overrides:
        del env["CAPACITY"]  # the shares' limits are the capacity
    env.update(overrides)
    return {k: v for k, v in env.items() if v is not None}


def test_a_capacity_entry_may_say_a_type_is_uncapped():
    settings = Settings.from_environment(
        _env(CAPACITY='{"ml.p5.48xlarge": 2, "ml.c5.18xlarge": "unlimited"}')
    )
    assert settings.capacity == {"ml.p5.48xlarge": 2}
    assert settings.uncapped == {"ml.c5.18xlarge"}
    assert settings.layout().uncapped == {"ml.c5.18xlarge"}


PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-two-weeks"
PLAN_B = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-later"


def test_a_capacity_entry_may_name_training_plans_beside_a_count():
    capacity = (
        f'{{"ml.p5.48xlarge": [1, {{"training_plan": "{PLAN}"}}, {{"training_plan": "{PLAN_B}"}}],'
        f' "ml.p4d.24xlarge": {{"training_plan": "{PLAN}x"}}}}'
    )
    settings = Settings.from_environment(
        _env(CAPACITY=capacity, TRAINING_PLAN_ARNS=f"{PLAN}, {PLAN_B},{PLAN}x")
    )
    # A type with plans only has no on-demand capacity.
    assert settings.capacity == {"ml.p5.48xlarge": 1, "ml.p4d.24xlarge": 0}
    assert [(p.instance_type, p.name) for p in settings.training_plans] == [
        ("ml.p5.48xlarge", "p5-two-weeks"),
        ("ml.p5.48xlarge", "p5-later"),
        ("ml.p4d.24xlarge", "p5-two-weeksx"),
    ]
    assert settings.layout().plans == settings.training_plans


def test_with_shares_capacity_names_only_the_uncapped_types():
    shares = '[{"name": "a", "capacity": {"ml.p5.48xlarge": 1}, "strategy": "LEND", '
    shares += '"in_share_preemption": false}]'
    settings = Settings.from_environment(
        _env(SHARES=shares, CAPACITY='{"ml.c5.18xlarge": "unlimited"}')
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


def test_the_checkpoint_location_is_an_s3_uri_ending_in_a_slash_or_off():
    assert Settings.from_environment(_env()).checkpoint_s3_uri == ""
    given = _env(CHECKPOINT_S3_URI="s3://team-bucket/checkpoints")
    assert Settings.from_environment(given).checkpoint_s3_uri == "s3://team-bucket/checkpoints/"


def test_defaults_preempt_at_once_and_backfill():
    policy = Settings.from_environment(_env()).policy
    assert (policy.preemption, policy.backfill, policy.min_run_s) == (True, True, 0)
    assert policy.fair_share is None  # first come, first served within a priority


def test_fair_share_from_the_environment():
    env = _env(
        FAIR_SHARE_HALF_LIFE_SECONDS="86400",
        FAIR_SHARE_LOOKAHEAD_SECONDS="300",
        FAIR_SHARE_WEIGHTS='{"project-x": 2}',
    )
    fair = Settings.from_environment(env).policy.fair_share
    assert (fair.half_life_s, fair.lookahead_s, fair.weight("project-x")) == (86400, 300, 2)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"TABLE_NAME": None}, "TABLE_NAME"),
        ({"CAPACITY": "two"}, "CAPACITY"),
        ({"CAPACITY": "{}"}, "CAPACITY"),
        ({"CAPACITY": '{"p5": 2}'}, "p5"),
        ({"CAPACITY": ""}, "CAPACITY is not set"),
        ({"CAPACITY": '{"ml.p5.48xlarg": 2}'}, "CAPACITY: 'ml.p5.48xlarg' is not a SageMaker"),
        (
            {
                "CAPACITY": '{"ml.p5.48xlarge": 9}',
                "SHARES": '[{"name": "a", "capacity": {"ml.p5.48xlarge": 1}, "strategy": '
                '"LEND", "in_share_preemption": false}]',
            },
            "CAPACITY caps ml.p5.48xlarge, but with SHARES the shares' limits are the capacity",
        ),
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
            "CAPACITY: ml.c5.18xlarge must have a whole number >= 0, 'unlimited' or training plans",
        ),
        (
            {
                "CAPACITY": '{"ml.p5.48xlarge": {"training_plan": '
                '"arn:aws:sagemaker:us-east-1:123456789012:training-job/x"}}'
            },
            "CAPACITY: ml.p5.48xlarge: 'arn:aws:sagemaker:us-east-1:123456789012:training-job/x' "
            "is not a SageMaker training-plan ARN",
        ),
        (
            {"CAPACITY": f'{{"ml.p5.48xlarge": {{"plan": "{PLAN}"}}}}'},
            'CAPACITY: ml.p5.48xlarge: expected {"training_plan": ',
        ),
        (
            {"CAPACITY": f'{{"ml.p5.48xlarge": [1, 2, {{"training_plan": "{PLAN}"}}]}}'},
            "CAPACITY: ml.p5.48xlarge must list training plans and at most one whole number",
        ),
        (
            {
                "CAPACITY": f'{{"ml.p5.48xlarge": {{"training_plan": "{PLAN}"}}, '
                f'"ml.p4d.24xlarge": {{"training_plan": "{PLAN}"}}}}',
                "TRAINING_PLAN_ARNS": PLAN,
            },
            f"CAPACITY: training plan {PLAN} is named more than once",
        ),
        (
            {"CAPACITY": f'{{"ml.p5.48xlarge": {{"training_plan": "{PLAN}"}}}}'},
            f"CAPACITY: training plan {PLAN} is not in TrainingPlanArns",
        ),
        (
            {
                "CAPACITY": f'{{"ml.p5.48xlarge": {{"training_plan": "{PLAN}"}}}}',
                "TRAINING_PLAN_ARNS": PLAN,
                "SHARES": '[{"name": "a", "capacity": {"ml.p5.48xlarge": 1}, "strategy": '
                '"LEND", "in_share_preemption": false}]',
            },
            f"CAPACITY: training plan {PLAN}: with SHARES, name it in the capacity of the share",
        ),
        (
            {
                "CAPACITY": f'{{"ml.p5.48xlarge": {{"training_plan": "{PLAN}"}}}}',
                "TRAINING_PLAN_ARNS": PLAN,
                "SHARES": '[{"name": "a", "capacity": {"ml.p5.48xlarge": [1, {"training_plan": '
                f'"{PLAN}"}}]}}, "strategy": "LEND", "in_share_preemption": false}}]',
            },
            f"training plan {PLAN} is named by both CAPACITY and share a",
        ),
        (
            {
                "SHARES": '[{"name": "a", "capacity": {"ml.p5.48xlarge": [{"training_plan": '
                f'"{PLAN}"}}]}}, "strategy": "LEND", "in_share_preemption": false}}]',
            },
            f"SHARES: training plan {PLAN} is not in TrainingPlanArns",
        ),
        (
            {"CAPACITY": '{"ml.c5.18xlarge": "unlimited"}'},
            "at least one instance type must have a cap",
        ),
        (
            {"CAPPED_INSTANCE_TYPES": "ml.g5.xlarge"},
            "CAPACITY: ml.p5.48xlarge not in CappedInstanceTypes",
        ),
        (
            {"CHECKPOINT_S3_URI": "team-bucket/checkpoints/"},
            "CHECKPOINT_S3_URI: 'team-bucket/checkpoints/' is not an s3:// URI",
        ),
        ({"CHECKPOINT_S3_URI": "s3://Team_Bucket/"}, "CHECKPOINT_S3_URI"),
        ({"CHECKPOINT_S3_URI": "https://bucket.s3.amazonaws.com/x/"}, "CHECKPOINT_S3_URI"),
        ({"FAIR_SHARE_HALF_LIFE_SECONDS": "-60"}, "FAIR_SHARE_HALF_LIFE_SECONDS must be 0 or"),
        ({"FAIR_SHARE_HALF_LIFE_SECONDS": "1d"}, "FAIR_SHARE_HALF_LIFE_SECONDS must be a number"),
        (
            {"FAIR_SHARE_HALF_LIFE_SECONDS": "3600", "FAIR_SHARE_WEIGHTS": '{"alice": -1}'},
            "FAIR_SHARE_WEIGHTS: the weight of alice must be more than 0",
        ),
        (
            {"FAIR_SHARE_HALF_LIFE_SECONDS": "3600", "FAIR_SHARE_LOOKAHEAD_SECONDS": "0"},
            "FAIR_SHARE_LOOKAHEAD_SECONDS must be more than 0",
        ),
        # Weights are checked even while fair share is off, so that turning it on cannot fail.
        ({"FAIR_SHARE_WEIGHTS": '{"arn:aws:iam::1:role/x": 2}'}, "FAIR_SHARE_WEIGHTS"),
    ],
)
def test_bad_settings_name_the_variable(overrides, named):
    with pytest.raises(ConfigError, match=re.escape(named)):
        Settings.from_environment(_env(**overrides))


def test_a_share_may_name_training_plans_whose_reservations_count_toward_it():
    p5 = "ml.p5.48xlarge"
    shares = [
        {
            "name": "research",
            "capacity": {p5: [1, {"training_plan": PLAN}]},
            "strategy": "LEND",
            "in_share_preemption": False,
        },
        {
            "name": "prod",
            "capacity": {p5: {"training_plan": PLAN_B}},
            "strategy": "RESERVE",
            "in_share_preemption": False,
        },
    ]
    settings = Settings.from_environment(
        _env(SHARES=json.dumps(shares), TRAINING_PLAN_ARNS=f"{PLAN},{PLAN_B}")
    )
    research, prod = settings.shares
    assert (research.capacity, research.plans) == ({p5: 1}, ((p5, PLAN),))
    assert (prod.capacity, prod.plans) == ({p5: 0}, ((p5, PLAN_B),))
    assert [plan.arn for plan in settings.training_plans] == [PLAN, PLAN_B]
    assert [plan.arn for plan in settings.layout().plans] == [PLAN, PLAN_B]
