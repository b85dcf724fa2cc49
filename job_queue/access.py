"""Who may do what: the caller of a request, admins, and the rules. Pure.

The caller is the IAM principal API Gateway authenticated (``requestContext.identity.userArn``
with ``AWS_IAM`` auth): an IAM user (``arn:aws:iam::123456789012:user/alice``) or a role
session (``arn:aws:sts::123456789012:assumed-role/Train/alice``).

A role session is its role: it matches a pattern written for the role's ARN
(``arn:aws:iam::123456789012:role/Train`` — without the role's path, which the session's
ARN does not carry) as well as one written for the session itself, and a job submitted in
one session of a role belongs to every session of that role.

The rules:

* only the job's submitter or an admin may cancel it or change its priority;
* a non-admin may not give a job a priority above the ceiling — the queue's
  ``MaxPriority``, or its share's ``max_priority`` when lower — on submit or on a change;
  lowering a job's priority is always allowed;
* a share that lists ``submitters`` takes jobs only from callers matching one of them
  (admins may submit anywhere);
* only an admin may replace the quota shares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from job_queue.errors import Forbidden
from job_queue.patterns import matches
from job_queue.scheduler.shares import Share

# arn:<partition>:iam|sts::<account>:<resource>, where '*' may stand for any run of characters.
_PATTERN = re.compile(r"^arn:[a-z*-]+:(?:iam|sts|\*)::(?:\d{12}|\*|\d*\*[\d*]*):[\w+=,.@/*:-]+$")
_SESSION = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d+):assumed-role/(?P<role>[^/]+)/"
)


class PatternError(ValueError):
    """An ARN pattern is malformed; the message names it."""


@dataclass(frozen=True)
class Caller:
    """Who sent a request: ``arn`` as API Gateway gives it, ``principal`` the identity that
    owns jobs (the user, or the role of a session), and whether they are an admin."""

    arn: str
    principal: str
    admin: bool = False

    def matches(self, patterns: Iterable[str]) -> bool:
        """Whether the caller, or the role of its session, matches one of ``patterns``."""
        return any(matches(p, self.arn) or matches(p, self.principal) for p in patterns)


@dataclass(frozen=True)
class Ceiling:
    """The highest priority a non-admin may set, and what sets it (for the message)."""

    value: int
    what: str


def principal_of(arn: str) -> str:
    """The IAM principal behind ``arn``: a role session's role; anything else itself."""
    session = _SESSION.match(arn)
    if session is None:
        return arn
    return f"arn:{session['partition']}:iam::{session['account']}:role/{session['role']}"


def check_patterns(patterns: Iterable[str], field: str) -> tuple[str, ...]:
    """The patterns, each a well-formed IAM ARN pattern; PatternError naming ``field``."""
    checked = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not _PATTERN.match(pattern):
            raise PatternError(
                f"{field}: {pattern!r} is not an IAM ARN pattern such as "
                "arn:aws:iam::123456789012:role/ml-admin or arn:aws:iam::123456789012:user/*"
            )
        checked.append(pattern)
    return tuple(checked)


def caller_from(identity: Mapping | None, admins: Iterable[str]) -> Caller:
    """The caller of an API Gateway request from its ``requestContext.identity``."""
    arn = (identity or {}).get("userArn")
    if not arn:
        raise Forbidden(
            "the request names no IAM caller (requestContext.identity.userArn): the API must "
            "use AWS_IAM authorization"
        )
    caller = Caller(arn, principal_of(arn))
    return replace(caller, admin=caller.matches(admins))


def ceiling(max_priority: int, share: Share | None) -> Ceiling:
    """The priority ceiling of a job in ``share`` (None: the queue has no shares)."""
    if share is not None and share.max_priority is not None and share.max_priority < max_priority:
        return Ceiling(share.max_priority, f"share {share.name}'s max_priority")
    return Ceiling(max_priority, "the queue's MaxPriority")


# -- the rules ------------------------------------------------------------------------------


def check_submit(caller: Caller, priority: int, share: Share | None, top: Ceiling) -> None:
    """A caller may submit a job of ``priority`` to ``share``."""
    if caller.admin:
        return
    if share is not None and share.submitters and not caller.matches(share.submitters):
        raise Forbidden(
            f"share {share.name} takes jobs only from its submitters "
            f"({', '.join(share.submitters)}); {caller.arn} is not one of them"
        )
    if priority > top.value:
        raise Forbidden(
            f"priority {priority} is above {top.what} of {top.value}; only an admin "
            "(AdminPrincipals) may submit above it"
        )


def check_owner(caller: Caller, job: str, submitted_by: str | None, action: str) -> None:
    """Only the job's submitter or an admin may ``action`` it."""
    if caller.admin:
        return
    if submitted_by is None:
        raise Forbidden(f"job {job} has no recorded submitter: only an admin may {action} it")
    if principal_of(submitted_by) != caller.principal:
        raise Forbidden(
            f"only the job's submitter ({submitted_by}) or an admin (AdminPrincipals) may "
            f"{action} job {job}; you are {caller.arn}"
        )


def check_priority_change(caller: Caller, current: int, new: int, top: Ceiling) -> None:
    """A non-admin may lower a job's priority, or raise it up to the ceiling."""
    if caller.admin or new <= current or new <= top.value:
        return
    raise Forbidden(
        f"priority {new} is above {top.what} of {top.value}; only an admin "
        "(AdminPrincipals) may raise a job above it"
    )


def check_admin(caller: Caller, action: str) -> None:
    """Only an admin may ``action``."""
    if not caller.admin:
        raise Forbidden(f"only an admin (AdminPrincipals) may {action}; you are {caller.arn}")
