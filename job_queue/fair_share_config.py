"""The fair-share settings (FairShareHalfLifeSeconds, FairShareLookaheadSeconds,
FairShareWeights), checked wherever they are given: at cold start, by ``smq local-api`` and
``smq simulate``. Pure."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

from job_queue.access import PatternError, check_patterns
from job_queue.scheduler.fair_share import FairShare
from job_queue.scheduler.snapshot import Policy

# A fair-share-id tag (a project's name): what a tag value may hold, without '*' or '#'.
FAIR_SHARE_ID = re.compile(r"^[A-Za-z0-9][\w.:/=+@-]{0,127}$")
DEFAULT_LOOKAHEAD = 600.0


ENVIRONMENT = (
    "FAIR_SHARE_HALF_LIFE_SECONDS",
    "FAIR_SHARE_WEIGHTS",
    "FAIR_SHARE_LOOKAHEAD_SECONDS",
)


class FairShareError(ValueError):
    """A fair-share setting is malformed; the message names it."""


def parse_fair_share(
    half_life: str | float,
    weights: str = "",
    lookahead: str | float = DEFAULT_LOOKAHEAD,
    names: tuple[str, str, str] = (
        "FairShareHalfLifeSeconds",
        "FairShareWeights",
        "FairShareLookaheadSeconds",
    ),
) -> FairShare | None:
    """The fair-share policy, or None when the half-life is 0 (off). ``names``: how the
    caller calls the three settings, for the messages."""
    half_life_s = _seconds(half_life, names[0], zero=True)
    lookahead_s = _seconds(lookahead, names[2], zero=False)
    checked = parse_weights(weights, names[1])
    if not half_life_s:
        return None
    return FairShare(half_life_s, lookahead_s, checked)


def fair_share_from_environment(env) -> FairShare | None:
    """The Lambda's FAIR_SHARE_HALF_LIFE_SECONDS (0 or unset: off), FAIR_SHARE_WEIGHTS
    (JSON) and FAIR_SHARE_LOOKAHEAD_SECONDS (600)."""
    half_life, weights, lookahead = ENVIRONMENT
    return parse_fair_share(
        env.get(half_life) or "0",
        env.get(weights, ""),
        env.get(lookahead) or str(DEFAULT_LOOKAHEAD),
        ENVIRONMENT,
    )


def parse_weights(text: str, name: str = "FairShareWeights") -> tuple[tuple[str, float], ...]:
    """``{"arn:aws:iam::123456789012:role/research": 2, "project-x": 0.5}``: a weight > 0
    per submitter -- an IAM ARN or ARN pattern, or a fair-share-id -- in the order given
    (the first that matches applies); empty: everyone weighs 1."""
    if not str(text).strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise FairShareError(f"{name} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise FairShareError(f'{name} must be a JSON object such as {{"project-x": 2}}')
    weights = []
    for identity, weight in value.items():
        _check_identity(identity, name)
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise FairShareError(
                f"{name}: the weight of {identity} must be a number, got {weight!r}"
            )
        if not math.isfinite(weight) or weight <= 0:
            raise FairShareError(
                f"{name}: the weight of {identity} must be more than 0, got {weight}"
            )
        weights.append((identity, float(weight)))
    return tuple(weights)


def _check_identity(identity: str, name: str) -> None:
    if identity.startswith("arn:"):
        try:
            check_patterns([identity], name)
        except PatternError as exc:
            raise FairShareError(str(exc)) from None
    elif not FAIR_SHARE_ID.match(identity):
        raise FairShareError(
            f"{name}: {identity!r} is neither an IAM ARN pattern (arn:aws:iam::...) nor a "
            "fair-share-id (letters, digits and _.:/=+@-, up to 128, starting with a letter or "
            "digit)"
        )


def _seconds(value: str | float, name: str, zero: bool) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise FairShareError(f"{name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero):
        least = "0 or more (0: off)" if zero else "more than 0"
        raise FairShareError(f"{name} must be {least}, got {value!r}")
    return seconds


def with_weights(policy: Policy, deployed: str, set_text: str | None, set_over: str | None):
    """``policy`` with the weights an admin set at run time (``set_text``), unless a
    deployment changed FairShareWeights since (``set_over``, the deployed text they
    replaced, differs from ``deployed``)."""
    fair = policy.fair_share
    if fair is None or not set_in_effect(deployed, set_text, set_over):
        return policy
    return replace(policy, fair_share=replace(fair, weights=parse_weights(set_text)))


def set_in_effect(deployed: str, set_text: str | None, set_over: str | None) -> bool:
    """Whether weights set at run time hold: some were set, over the weights deployed now."""
    return set_text is not None and set_over == deployed
