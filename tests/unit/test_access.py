"""Who a caller is, and the rules: scenario tables over plain data."""

import pytest

from job_queue.access import (
    Caller,
    PatternError,
    caller_from,
    ceiling,
    check_owner,
    check_patterns,
    check_priority_change,
    check_submit,
    matches,
    principal_of,
)
from job_queue.errors import Forbidden
from job_queue.scheduler import Share, Strategy

ACCOUNT = "123456789012"
SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/Train/alice"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/Train"
USER = f"arn:aws:iam::{ACCOUNT}:user/bob"


@pytest.mark.parametrize(
    ("arn", "principal"),
    [
        (SESSION, ROLE),
        (USER, USER),
        (
            f"arn:aws-cn:sts::{ACCOUNT}:assumed-role/Train/x",
            f"arn:aws-cn:iam::{ACCOUNT}:role/Train",
        ),
        (f"arn:aws:iam::{ACCOUNT}:root", f"arn:aws:iam::{ACCOUNT}:root"),
    ],
)
def test_a_role_session_is_its_role(arn, principal):
    assert principal_of(arn) == principal


@pytest.mark.parametrize(
    ("pattern", "arn", "matched"),
    [
        (USER, USER, True),
        (f"arn:aws:iam::{ACCOUNT}:user/*", USER, True),
        (f"arn:aws:iam::{ACCOUNT}:user/b*", USER, True),
        (f"arn:aws:iam::{ACCOUNT}:user/a*", USER, False),
        (f"arn:aws:iam::{ACCOUNT}:user/bo", USER, False),  # the whole ARN must match
        ("arn:aws:iam::*:user/bob", USER, True),
        (f"arn:aws:iam::{ACCOUNT}:user/bob.", f"arn:aws:iam::{ACCOUNT}:user/bobx", False),
    ],
)
def test_arn_patterns_match_whole_arns_with_star_wildcards(pattern, arn, matched):
    assert matches(pattern, arn) is matched


@pytest.mark.parametrize(
    ("admins", "arn", "admin"),
    [
        ((ROLE,), SESSION, True),  # the role's pattern admits its sessions
        ((SESSION,), SESSION, True),
        ((f"arn:aws:sts::{ACCOUNT}:assumed-role/Train/bob",), SESSION, False),
        ((ROLE,), USER, False),
        ((), USER, False),
    ],
)
def test_admins_are_matched_by_caller_or_role(admins, arn, admin):
    assert caller_from({"userArn": arn}, admins).admin is admin


@pytest.mark.parametrize(
    "pattern",
    ["alice", "*", "arn:aws:s3:::bucket", "arn:aws:iam::12:user/x", "arn:aws:iam::123456789012:"],
)
def test_malformed_patterns_are_refused_naming_the_field(pattern):
    with pytest.raises(PatternError, match=f"AdminPrincipals: {pattern!r}"):
        check_patterns([pattern], "AdminPrincipals")


def _caller(arn=USER, admin=False):
    return Caller(arn, principal_of(arn), admin)


VISION = Share("vision", {"ml.p5.48xlarge": 1}, Strategy.LEND, max_priority=5, submitters=(ROLE,))


@pytest.mark.parametrize(
    ("caller", "priority", "share", "refused"),
    [
        (_caller(SESSION), 5, VISION, None),
        (_caller(SESSION), 6, VISION, "share vision's max_priority of 5"),
        (_caller(USER), 0, VISION, "share vision takes jobs only from its submitters"),
        (_caller(USER, admin=True), 99, VISION, None),
        (_caller(USER), 10, None, None),
        (_caller(USER), 11, None, "the queue's MaxPriority of 10"),
    ],
)
def test_who_may_submit_what(caller, priority, share, refused):
    top = ceiling(10, share)
    if refused is None:
        check_submit(caller, priority, share, top)
    else:
        with pytest.raises(Forbidden, match=refused):
            check_submit(caller, priority, share, top)


def test_the_lower_of_the_queues_and_the_shares_ceiling_applies():
    assert ceiling(3, VISION).value == 3 and "MaxPriority" in ceiling(3, VISION).what
    assert ceiling(10, VISION).value == 5


@pytest.mark.parametrize(
    ("caller", "submitted_by", "refused"),
    [
        (_caller(USER), USER, None),
        (_caller(SESSION), f"arn:aws:sts::{ACCOUNT}:assumed-role/Train/other", None),
        (_caller(USER), SESSION, "only the job's submitter"),
        (_caller(USER, admin=True), SESSION, None),
        (_caller(USER), None, "no recorded submitter"),
    ],
)
def test_who_may_cancel_a_job(caller, submitted_by, refused):
    if refused is None:
        check_owner(caller, "job", submitted_by, "cancel")
    else:
        with pytest.raises(Forbidden, match=refused):
            check_owner(caller, "job", submitted_by, "cancel")


@pytest.mark.parametrize(
    ("current", "new", "admin", "allowed"),
    [(1, 10, False, True), (1, 11, False, False), (50, 20, False, True), (1, 50, True, True)],
)
def test_raising_above_the_ceiling_takes_an_admin_lowering_never_does(current, new, admin, allowed):
    top = ceiling(10, None)
    if allowed:
        check_priority_change(_caller(admin=admin), current, new, top)
    else:
        with pytest.raises(Forbidden, match="above the queue's MaxPriority of 10"):
            check_priority_change(_caller(admin=admin), current, new, top)
