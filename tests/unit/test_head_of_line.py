"""HeadOfLineLimits: how long a job may wait first in line for one reason before the sweep
cancels it or raises the alarm — counted per stretch of waiting, raised once."""

import pytest

from job_queue.head_of_line import Act, Blocking, HeadOfLineLimit, check, parse_limits
from job_queue.scheduler.waiting_for import Reason, WaitingFor

NOW = 1_000_000.0
PLAN_DAY = HeadOfLineLimit(Reason.PLAN_WINDOW, 86400, Act.CANCEL)
BACKOFF_HOUR = HeadOfLineLimit(Reason.BACKING_OFF, 3600, Act.ALARM)
LIMITS = (PLAN_DAY, BACKOFF_HOUR)


def why(code: Reason, first: bool = True) -> WaitingFor:
    return WaitingFor(code, f"waits for {code}", first=first)


@pytest.mark.parametrize(
    ("title", "kept", "reason", "expected_kept", "acted"),
    [
        (
            "a job first in line starts its count when the sweep first sees it",
            {},
            why(Reason.PLAN_WINDOW),
            Blocking(Reason.PLAN_WINDOW, NOW),
            None,
        ),
        (
            "within its limit nothing is done",
            {"j": Blocking(Reason.PLAN_WINDOW, NOW - 86400)},
            why(Reason.PLAN_WINDOW),
            Blocking(Reason.PLAN_WINDOW, NOW - 86400),
            None,
        ),
        (
            "past its limit, cancel: the job is acted on, and counted again if it stays",
            {"j": Blocking(Reason.PLAN_WINDOW, NOW - 86401)},
            why(Reason.PLAN_WINDOW),
            Blocking(Reason.PLAN_WINDOW, NOW - 86401),
            Act.CANCEL,
        ),
        (
            "past its limit, alarm: raised once for the stretch",
            {"j": Blocking(Reason.BACKING_OFF, NOW - 3601)},
            why(Reason.BACKING_OFF),
            Blocking(Reason.BACKING_OFF, NOW - 3601, alarmed=True),
            Act.ALARM,
        ),
        (
            "an alarm raised already is not raised again",
            {"j": Blocking(Reason.BACKING_OFF, NOW - 7200, alarmed=True)},
            why(Reason.BACKING_OFF),
            Blocking(Reason.BACKING_OFF, NOW - 7200, alarmed=True),
            None,
        ),
        (
            "another reason starts the count again",
            {"j": Blocking(Reason.PLAN_WINDOW, NOW - 90000)},
            why(Reason.BACKING_OFF),
            Blocking(Reason.BACKING_OFF, NOW),
            None,
        ),
        (
            "a job behind another is not first in line: no count",
            {"j": Blocking(Reason.PLAN_WINDOW, NOW - 90000)},
            why(Reason.PLAN_WINDOW, first=False),
            None,
            None,
        ),
        (
            "a reason without a limit is not counted",
            {},
            why(Reason.SHARE_LIMIT),
            None,
            None,
        ),
    ],
)
def test_the_sweep_counts_how_long_a_job_blocks_its_line(title, kept, reason, expected_kept, acted):
    keep, blocked = check(kept, {"j": reason}, LIMITS, NOW)
    assert keep.get("j") == expected_kept
    assert [b.action for b in blocked] == ([acted] if acted else [])


def test_a_job_that_started_or_left_is_forgotten():
    keep, blocked = check({"gone": Blocking(Reason.PLAN_WINDOW, NOW - 99999)}, {}, LIMITS, NOW)
    assert (keep, blocked) == ({}, [])


def test_the_blocked_message_says_how_long_and_why():
    _, (blocked,) = check(
        {"j": Blocking(Reason.PLAN_WINDOW, NOW - 90000)},
        {"j": why(Reason.PLAN_WINDOW)},
        LIMITS,
        NOW,
    )
    assert blocked.message == (
        "waited 90000 s first in line for plan-window (waits for plan-window), past its "
        "HeadOfLineLimits"
    )


def test_the_setting_parses():
    text = '[{"reason": "plan-window", "seconds": 86400, "action": "cancel"}]'
    assert parse_limits(text) == (PLAN_DAY,)
    assert parse_limits("") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{}", "HEAD_OF_LINE_LIMITS: must be a JSON list of limits"),
        ("[1", "HEAD_OF_LINE_LIMITS: not JSON"),
        (
            '[{"reason": "slow", "seconds": 60, "action": "cancel"}]',
            "HEAD_OF_LINE_LIMITS[0].reason: must be one of higher-priority, queue-order,",
        ),
        (
            '[{"reason": "plan-window", "seconds": -5, "action": "cancel"}]',
            "HEAD_OF_LINE_LIMITS[0].seconds: must be a whole number above 0, got -5",
        ),
        (
            '[{"reason": "plan-window", "seconds": 1.5, "action": "cancel"}]',
            "HEAD_OF_LINE_LIMITS[0].seconds: must be a whole number above 0, got 1.5",
        ),
        (
            '[{"reason": "plan-window", "seconds": 60, "action": "terminate"}]',
            "HEAD_OF_LINE_LIMITS[0].action: must be cancel or alarm, got 'terminate'",
        ),
        (
            '[{"reason": "plan-window", "seconds": 60, "action": "cancel", "state": "x"}]',
            "HEAD_OF_LINE_LIMITS[0]: unknown field state",
        ),
        (
            '[{"reason": "plan-window", "seconds": 60, "action": "cancel"},'
            ' {"reason": "plan-window", "seconds": 90, "action": "alarm"}]',
            "HEAD_OF_LINE_LIMITS: reason plan-window has more than one limit",
        ),
    ],
)
def test_a_bad_setting_is_refused_naming_the_field(text, message):
    with pytest.raises(ValueError) as refused:
        parse_limits(text)
    assert str(refused.value).startswith(message)


def test_a_bad_setting_stops_the_cold_start_and_a_good_one_is_in_effect():
    from job_queue.config import ConfigError, Settings

    env = {"TABLE_NAME": "q", "CAPACITY": '{"ml.p5.48xlarge": 2}'}
    bad = {**env, "HEAD_OF_LINE_LIMITS": '[{"reason": "x", "seconds": 1, "action": "alarm"}]'}
    with pytest.raises(ConfigError) as error:
        Settings.from_environment(bad)
    assert str(error.value).startswith("HEAD_OF_LINE_LIMITS[0].reason: must be one of")
    good = {
        **env,
        "HEAD_OF_LINE_LIMITS": '[{"reason": "plan-window", "seconds": 86400, "action": "cancel"}]',
    }
    assert Settings.from_environment(good).limits.head_of_line == (PLAN_DAY,)
