"""What a job may go through before the queue fails it rather than requeue it: failed
attempts tried again (the ``RetryOnFailure`` setting), preemptions (``MaxPreemptions``
and a job's ``max-preemptions`` tag) and its running time over all its attempts (its
``max-total-runtime`` tag), pure.

On p5 instances hardware faults and SageMaker's internal errors end long jobs far more
often than the users' own errors do. A failed attempt whose ``FailureReason`` matches a rule
goes back to its place in the queue and resumes from its checkpoint, as a preempted job
does, until the job has failed that way ``attempts`` times in all (AWS Batch's
``retryStrategy``: ``attempts`` counts every run, the first included). Anything else fails
the job, as before.

A pattern matches the whole reason, ``*`` standing for any text (as AWS Batch's
``evaluateOnExit.onReason``): ``InternalServerError*`` matches every reason that starts so.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass

from job_queue.head_of_line import HeadOfLineLimit
from job_queue.models import Attempt

MAX_ATTEMPTS = 10  # as AWS Batch's retryStrategy


@dataclass(frozen=True)
class RetryRule:
    """Failures whose reason matches ``pattern`` are retried until the job has failed so
    ``attempts`` times."""

    pattern: str
    attempts: int

    def matches(self, reason: str | None) -> bool:
        return reason is not None and fnmatch.fnmatchcase(reason, self.pattern)

    def to_dict(self) -> dict:
        return {"failure_reason_pattern": self.pattern, "attempts": self.attempts}


# SageMaker's own failures, not the user's: an internal error (it says to try again), and a
# cluster whose repair after a hardware fault failed. (A start SageMaker could not find
# instances for, CapacityError, never ran: it backs off and retries however often it is
# refused, rule or not.)
DEFAULT_RULES = (
    RetryRule("InternalServerError*", 3),
    RetryRule("*hardware failure*", 3),
    RetryRule("*health check*", 3),
)


def retried(
    rules: Iterable[RetryRule], reason: str | None, earlier_reasons: Iterable[str | None]
) -> str | None:
    """Why an attempt that failed with ``reason`` is retried, for its event (None: the job
    fails), given the reasons its ``earlier_reasons`` failed attempts ended with. The first
    rule that matches decides."""
    rule = next((r for r in rules if r.matches(reason)), None)
    if rule is None:
        return None
    failed = 1 + sum(1 for earlier in earlier_reasons if rule.matches(earlier))
    if failed >= rule.attempts:
        return None
    return f"failed, retried ({failed} of {rule.attempts} attempts): {reason}"


@dataclass(frozen=True)
class Limits:
    """The queue's limits: failed attempts tried again, how often a job may be preempted
    and requeued (the default; a job's ``max-preemptions`` tag overrides it; None:
    unlimited), and how long a job may wait first in line for a reason
    (:mod:`job_queue.head_of_line`)."""

    retry_on_failure: tuple[RetryRule, ...] = DEFAULT_RULES
    max_preemptions: int | None = None
    head_of_line: tuple[HeadOfLineLimit, ...] = ()  # how long a job may block its line

    def preemptions_allowed(self, job_cap: int | None) -> int | None:
        """How often a job whose tag says ``job_cap`` (None: none) may be preempted."""
        return job_cap if job_cap is not None else self.max_preemptions


DEFAULT_LIMITS = Limits()


def parse_max_preemptions(text: str, variable: str = "MAX_PREEMPTIONS") -> int | None:
    """The setting: a whole number from 0 ("": unlimited). ValueError names it."""
    text = text.strip()
    if not text:
        return None
    if not text.isdigit():
        raise ValueError(
            f"{variable}: must be a whole number from 0 (empty: unlimited), got {text!r}"
        )
    return int(text)


def parse_rules(text: str, variable: str = "RETRY_ON_FAILURE") -> tuple[RetryRule, ...]:
    """The setting's JSON list of ``{"failure_reason_pattern", "attempts"}`` ("" keeps the
    defaults; ``[]`` retries nothing). ValueError names the entry and field at fault."""
    if not text.strip():
        return DEFAULT_RULES
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{variable}: not JSON ({exc.msg})") from None
    if not isinstance(entries, list):
        raise ValueError(f"{variable}: must be a JSON list of rules")
    return tuple(_rule(entry, f"{variable}[{i}]") for i, entry in enumerate(entries))


def _rule(entry: object, where: str) -> RetryRule:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: must be an object with failure_reason_pattern and attempts")
    unknown = sorted(set(entry) - {"failure_reason_pattern", "attempts"})
    if unknown:
        raise ValueError(f"{where}: unknown field {', '.join(unknown)}")
    pattern, attempts = entry.get("failure_reason_pattern"), entry.get("attempts")
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError(f"{where}.failure_reason_pattern: must be a non-empty string")
    if isinstance(attempts, bool) or not isinstance(attempts, int):
        raise ValueError(f"{where}.attempts: must be a whole number, got {attempts!r}")
    if not 1 <= attempts <= MAX_ATTEMPTS:
        raise ValueError(f"{where}.attempts: must be from 1 to {MAX_ATTEMPTS}, got {attempts}")
    return RetryRule(pattern, attempts)


def ran_for(attempts: Iterable[Attempt], now: float) -> float:
    """How long ``attempts`` have run in all, the one still running counted until ``now``."""
    return sum((now if a.ended_at is None else a.ended_at) - a.started_at for a in attempts)


def over_total_runtime(cap: int | None, attempts: Iterable[Attempt], now: float) -> str | None:
    """Why a job whose ``max-total-runtime`` tag says ``cap`` is stopped for good now (None:
    it may run on)."""
    return None if cap is None else past_total_runtime(cap, ran_for(attempts, now))


def past_total_runtime(cap: int | None, ran_s: float) -> str | None:
    """Why a job that may run ``cap`` seconds in all (None: no limit) and ran ``ran_s`` is
    done with (None: it may run on)."""
    if cap is None or ran_s <= cap:
        return None
    return f"ran {math.floor(ran_s)} s in all, more than its max-total-runtime ({cap} s) allows"


def preempted_too_often(cap: int | None, preempted: int) -> str | None:
    """Why a job preempted ``preempted`` times (this one included) fails rather than go back
    in line, when it may be preempted ``cap`` times (None: it goes back)."""
    if cap is None or preempted <= cap:
        return None
    times = "once" if preempted == 1 else f"{preempted} times"
    return f"preempted {times}, more than its max-preemptions ({cap}) allows"
