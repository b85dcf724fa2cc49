"""The queue's settings, read once from the Lambda's environment."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from job_queue.scheduler import Policy


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    """What the operator configures (template parameters become these variables).

    Example::

        Settings(table_name="queue", capacity={"ml.p5.48xlarge": 2},
                 allowed_role_arns=frozenset({"arn:aws:iam::123456789012:role/Train"}))
    """

    table_name: str
    capacity: Mapping[str, int]
    allowed_role_arns: frozenset[str]
    queue_name: str = "training-job-queue"
    policy: Policy = field(default_factory=Policy)
    finished_retention_days: int = 30
    start_retry_base_seconds: float = 60.0  # backoff after a refused start: 1, 2, 4 ... min
    start_retry_max_seconds: float = 900.0

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from TABLE_NAME, CAPACITY, ALLOWED_ROLE_ARNS, QUEUE_NAME, PREEMPTION,
        BACKFILL, MIN_RUN_SECONDS and FINISHED_RETENTION_DAYS."""
        env = os.environ if env is None else env
        table_name = env.get("TABLE_NAME", "")
        if not table_name:
            raise ConfigError("TABLE_NAME is not set")
        return cls(
            table_name=table_name,
            capacity=parse_capacity(env.get("CAPACITY", "")),
            allowed_role_arns=parse_role_arns(env.get("ALLOWED_ROLE_ARNS", "")),
            queue_name=env.get("QUEUE_NAME") or "training-job-queue",
            policy=Policy(
                preemption=env.get("PREEMPTION", "true").lower() != "false",
                backfill=env.get("BACKFILL", "true").lower() != "false",
                min_run_s=parse_seconds("MIN_RUN_SECONDS", env.get("MIN_RUN_SECONDS") or "0"),
            ),
            finished_retention_days=int(env.get("FINISHED_RETENTION_DAYS") or 30),
        )


def parse_capacity(text: str) -> dict[str, int]:
    """``{"ml.p5.48xlarge": 2}``: instances per type the queue may run at once."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"CAPACITY is not JSON: {exc}") from exc
    if not isinstance(value, dict) or not value:
        raise ConfigError('CAPACITY must be a JSON object such as {"ml.p5.48xlarge": 2}')
    for itype, count in value.items():
        if not itype.startswith("ml."):
            raise ConfigError(f"CAPACITY: {itype!r} is not a SageMaker instance type")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"CAPACITY: {itype} must have a whole number >= 0, got {count!r}")
    return value


def parse_seconds(variable: str, text: str) -> float:
    """A whole number of seconds, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"{variable} must be a whole number of seconds, got {text!r}") from None
    if value < 0:
        raise ConfigError(f"{variable} must be 0 or more, got {value}")
    return float(value)


def parse_role_arns(text: str) -> frozenset[str]:
    """Comma-separated role ARNs that jobs may run under."""
    arns = frozenset(part.strip() for part in text.split(",") if part.strip())
    for arn in arns:
        if not arn.startswith("arn:") or ":role/" not in arn:
            raise ConfigError(f"ALLOWED_ROLE_ARNS: {arn!r} is not an IAM role ARN")
    return arns
