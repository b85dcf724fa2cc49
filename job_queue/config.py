"""The queue's settings, read once from the Lambda's environment."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from job_queue import checkpoints
from job_queue.access import PatternError, check_patterns
from job_queue.budget_config import budgets_from_environment, parse_budgets
from job_queue.capacity_config import (
    check_plan_roles,
    check_plans_owned_once,
    parse_capacity,
)
from job_queue.costs import Prices, parse_prices
from job_queue.errors import ConfigError, InvalidRequest
from job_queue.fair_share_config import (
    FairShareError,
    fair_share_from_environment,
    set_in_effect,
    with_weights,
)
from job_queue.head_of_line import parse_limits
from job_queue.layout import Layout
from job_queue.limits import Limits, parse_max_preemptions, parse_rules
from job_queue.models import MAX_PRIORITY, MIN_PRIORITY
from job_queue.plans import current
from job_queue.scheduler import Policy, Share, total_capacity
from job_queue.scheduler.budgets import Budget, Holder
from job_queue.scheduler.fair_share import FairShare
from job_queue.scheduler.reservations import TrainingPlan
from job_queue.share_config import (
    SharesError,
    check_ceilings,
    loads_shares,
    parse_shares,
    plan_entries_of,
)


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
    keep_alive_seconds: int = 0  # warm-pool keep-alive of jobs that set none (0: none)
    shares: tuple[Share, ...] = ()  # quota shares as deployed (none: one queue)
    shares_text: str = ""  # their text, as deployed
    default_share: str | None = None  # the share of jobs that name none
    admin_principals: tuple[str, ...] = ()  # ARN patterns of the queue's admins
    max_priority: int = MAX_PRIORITY  # the highest priority a non-admin may set
    # The types the template's IAM policy and outside-jobs rule cover (empty: not checked).
    capped_instance_types: frozenset[str] = frozenset()
    uncapped: frozenset[str] = frozenset()  # types whose instances are never counted
    training_plans: tuple[TrainingPlan, ...] = ()  # reserved capacity, as configured
    training_plan_arns: frozenset[str] = frozenset()  # the plans the role may describe
    # Jobs without a CheckpointConfig save under this + their name ("": they get none).
    checkpoint_s3_uri: str = ""
    fair_share_weights_text: str = ""  # FAIR_SHARE_WEIGHTS as deployed
    limits: Limits = field(default_factory=Limits)  # retries after failures, preemptions
    prices: Prices = field(default_factory=Prices)  # what an instance-hour costs, by type
    budgets: Mapping[Holder, Budget] = field(default_factory=dict)  # submitters' (BUDGETS)
    budgets_text: str = ""  # BUDGETS as deployed

    def policy_in_effect(self, weights_text: str | None, over: str | None) -> Policy:
        """The policy, with fair-share weights set at run time (PUT /usage/weights) unless
        a deployment changed the weights since (``over``: the deployed text they replaced)."""
        return with_weights(self.policy, self.fair_share_weights_text, weights_text, over)

    def budgets_in_effect(self, set_text: str | None, over: str | None) -> Mapping:
        """The submitters' budgets, as set at run time (PUT /budgets) unless a deployment
        changed BUDGETS since (``over``: the deployed text they replaced)."""
        if set_in_effect(self.budgets_text, set_text, over):
            return parse_budgets(set_text)
        return self.budgets

    def replacement_shares(self, value: object) -> tuple[Share, ...]:
        """The shares of a PUT /shares body, checked against these settings (ceilings, capped
        types, the default share); InvalidRequest names the problem."""
        try:
            shares = parse_shares(value)
            check_ceilings(shares, self.max_priority)
            self.check_capped(total_capacity(shares), "shares")
            check_plan_roles(plan_entries_of(shares), self.training_plan_arns, "shares")
        except (SharesError, ConfigError) as exc:
            raise InvalidRequest(str(exc)) from exc
        if self.default_share is not None and self.default_share not in {s.name for s in shares}:
            raise InvalidRequest(
                f"the default share {self.default_share} (DefaultShare) must remain among the "
                "shares"
            )
        return shares

    def check_capped(self, capacity: Mapping[str, int], where: str) -> None:
        """Every type of ``capacity`` is one the deployment caps (CappedInstanceTypes):
        otherwise jobs started around the queue on it would go unseen."""
        missing = sorted(set(capacity) - self.capped_instance_types)
        if self.capped_instance_types and missing:
            raise ConfigError(
                f"{where}: {', '.join(missing)} not in CappedInstanceTypes "
                f"({', '.join(sorted(self.capped_instance_types))}); add it to the parameter "
                "and redeploy, so that jobs started around the queue on it are seen"
            )

    def layout(
        self,
        shares_text: str | None = None,
        shares_deployed: str | None = None,
        plans_read: Sequence[TrainingPlan] = (),
    ) -> Layout:
        """The capacity in effect: shares set at run time (``shares_text``, unless a
        deployment changed the shares since: ``shares_deployed`` differs), else the deployed
        shares, else CAPACITY (with its training plans as last read: ``plans_read``)."""
        shares = self.shares
        if shares_text is not None and shares_deployed == self.shares_text:
            shares = loads_shares(shares_text)  # validated when it was stored
        if not shares:
            plans = tuple(current(self.training_plans, plans_read))
            return Layout(self.capacity, uncapped=self.uncapped, plans=plans)
        plans = tuple(current(plan_entries_of(shares), plans_read))
        return Layout(total_capacity(shares), shares, self.default_share, self.uncapped, plans)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Settings from TABLE_NAME, CAPACITY, ALLOWED_ROLE_ARNS, QUEUE_NAME, PREEMPTION,
        BACKFILL, MIN_RUN_SECONDS, KEEP_ALIVE_SECONDS, WARM_AFFINITY_SECONDS,
        FINISHED_RETENTION_DAYS, SHARES, DEFAULT_SHARE, ADMIN_PRINCIPALS, MAX_PRIORITY,
        CAPPED_INSTANCE_TYPES, TRAINING_PLAN_ARNS, CHECKPOINT_S3_URI, PRICES, BUDGETS and
        FAIR_SHARE_HALF_LIFE_SECONDS, FAIR_SHARE_LOOKAHEAD_SECONDS, FAIR_SHARE_WEIGHTS."""
        env = os.environ if env is None else env
        table_name = env.get("TABLE_NAME", "")
        if not table_name:
            raise ConfigError("TABLE_NAME is not set")
        max_priority = parse_max_priority(env.get("MAX_PRIORITY") or str(MAX_PRIORITY))
        shares_text = env.get("SHARES", "").strip()
        shares = parse_shares_setting(shares_text, max_priority)
        # With shares, their limits are the capacity; CAPACITY may still name uncapped types.
        capacity_text = env.get("CAPACITY", "").strip()
        capacity, uncapped, plans = (
            parse_capacity(capacity_text, capped=not shares)
            if capacity_text or not shares
            else ({}, frozenset(), ())
        )
        capped = sorted(t for t, n in capacity.items() if n) if shares else []
        if capped:
            raise ConfigError(
                f"CAPACITY caps {', '.join(capped)}, but with SHARES the shares' limits are the "
                'capacity: CAPACITY may only name uncapped types ("unlimited"); leave it empty'
            )
        check_plans_owned_once(plans, shares)
        plan_arns = frozenset(
            arn.strip() for arn in env.get("TRAINING_PLAN_ARNS", "").split(",") if arn.strip()
        )
        plans = plan_entries_of(shares) if shares else plans
        check_plan_roles(plans, plan_arns, "SHARES" if shares else "CAPACITY")
        default_share = env.get("DEFAULT_SHARE", "").strip() or None
        if default_share is not None and default_share not in {s.name for s in shares}:
            valid = ", ".join(s.name for s in shares) or "no shares are configured"
            raise ConfigError(f"DEFAULT_SHARE: {default_share!r} is not a share ({valid})")
        settings = cls(
            table_name=table_name,
            capacity=total_capacity(shares) if shares else capacity,
            uncapped=uncapped,
            training_plans=plans,
            training_plan_arns=plan_arns,
            shares=shares,
            shares_text=shares_text,
            default_share=default_share,
            allowed_role_arns=parse_role_arns(env.get("ALLOWED_ROLE_ARNS", "")),
            admin_principals=parse_admins(env.get("ADMIN_PRINCIPALS", "")),
            max_priority=max_priority,
            queue_name=env.get("QUEUE_NAME") or "training-job-queue",
            policy=Policy(
                preemption=env.get("PREEMPTION", "true").lower() != "false",
                backfill=env.get("BACKFILL", "true").lower() != "false",
                min_run_s=parse_seconds("MIN_RUN_SECONDS", env.get("MIN_RUN_SECONDS") or "0"),
                warm_affinity_s=parse_seconds(
                    "WARM_AFFINITY_SECONDS", env.get("WARM_AFFINITY_SECONDS") or "0"
                ),
                fair_share=_fair_share(env),
            ),
            finished_retention_days=int(env.get("FINISHED_RETENTION_DAYS") or 30),
            keep_alive_seconds=int(
                parse_seconds("KEEP_ALIVE_SECONDS", env.get("KEEP_ALIVE_SECONDS") or "0")
            ),
            capped_instance_types=frozenset(
                t.strip() for t in env.get("CAPPED_INSTANCE_TYPES", "").split(",") if t.strip()
            ),
            checkpoint_s3_uri=parse_checkpoint_uri(env.get("CHECKPOINT_S3_URI", "")),
            fair_share_weights_text=env.get("FAIR_SHARE_WEIGHTS", ""),
            limits=_limits(env),
            prices=_checked(lambda e: parse_prices(e.get("PRICES", ""), "PRICES"), env),
            budgets=_checked(budgets_from_environment, env),
            budgets_text=env.get("BUDGETS", ""),
        )
        both = sorted(uncapped & set(settings.capacity))
        if both:
            raise ConfigError(f"CAPACITY: {', '.join(both)} is uncapped, but SHARES caps it")
        settings.check_capped(settings.capacity, "SHARES" if shares else "CAPACITY")
        return settings


def parse_checkpoint_uri(text: str) -> str:
    """CHECKPOINT_S3_URI: an s3:// URI, or empty (the queue then sets no CheckpointConfig)."""
    try:
        return checkpoints.check_base_uri(text)
    except ValueError as exc:
        raise ConfigError(f"CHECKPOINT_S3_URI: {exc}") from None


def parse_shares_setting(text: str, max_priority: int = MAX_PRIORITY) -> tuple[Share, ...]:
    """SHARES: a shares file's JSON, or empty for a single queue."""
    if not text:
        return ()
    try:
        shares = loads_shares(text)
        check_ceilings(shares, max_priority)
    except SharesError as exc:
        raise ConfigError(f"SHARES: {exc}") from exc
    return shares


def parse_max_priority(text: str) -> int:
    """MAX_PRIORITY: the priority ceiling of non-admins, -9999..9999."""
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"MAX_PRIORITY must be a whole number, got {text!r}") from None
    if not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise ConfigError(
            f"MAX_PRIORITY must be from {MIN_PRIORITY} to {MAX_PRIORITY}, got {value}"
        )
    return value


def parse_admins(text: str) -> tuple[str, ...]:
    """ADMIN_PRINCIPALS: comma-separated IAM ARN patterns of the queue's admins."""
    try:
        return check_patterns([p.strip() for p in text.split(",") if p.strip()], "ADMIN_PRINCIPALS")
    except PatternError as exc:
        raise ConfigError(str(exc)) from None


def _fair_share(env: Mapping[str, str]) -> FairShare | None:
    try:
        return fair_share_from_environment(env)
    except FairShareError as exc:
        raise ConfigError(str(exc)) from None


def _limits(env: Mapping[str, str]) -> Limits:
    try:
        rules = parse_rules(env.get("RETRY_ON_FAILURE", ""))
        preemptions = parse_max_preemptions(env.get("MAX_PREEMPTIONS", ""))
        return Limits(rules, preemptions, parse_limits(env.get("HEAD_OF_LINE_LIMITS", "")))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _checked(parse, env: Mapping[str, str]):
    try:
        return parse(env)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


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
