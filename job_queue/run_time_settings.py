"""What admins change at run time and everyone may look at: the quota shares (GET and PUT
/shares), fair share's usage and weights, the usage ledger's report and timeline (GET
/usage, GET /timeline, PUT /usage/weights), holds on the queue or a share (POST
/queue/hold, /queue/drain, /queue/resume), the submitters' budgets (PUT /budgets) and the
sweep's warnings of budgets nearly spent; and the training plans, read again at cold start
and in the sweep. A part of
:class:`~job_queue.service.QueueService`, kept apart to keep each module small."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from aws_lambda_powertools import Logger

from job_queue import access, plans
from job_queue.access import Caller
from job_queue.budget_config import BudgetError, budgeted, dumps_budgets, parse_budgets
from job_queue.costs import key_price
from job_queue.errors import InvalidRequest
from job_queue.fair_share_config import FairShareError, parse_weights
from job_queue.layout import Layout
from job_queue.ledger import UsageRecord, held_now
from job_queue.queue_events import BudgetWarning, HoldChanged, UsageReported
from job_queue.retry import RETRIES, busy, until_settled
from job_queue.scheduler.budgets import DAY, standings, warnings
from job_queue.scheduler.holds import HoldAction, HoldChange, changed
from job_queue.scheduler.shares import ShareUsage, usage_with_plans
from job_queue.scheduler.snapshot import Snapshot
from job_queue.share_config import dumps_shares, plan_entries_of
from job_queue.store import Holders
from job_queue.timeline import timeline_view
from job_queue.usage_report import (
    month_due,
    month_window,
    parse_span,
    parse_window,
    usage_report,
)

if TYPE_CHECKING:
    from job_queue.config import Settings
    from job_queue.sagemaker import SageMakerGateway
    from job_queue.scheduling import View
    from job_queue.store import DynamoJobStore

logger = Logger(child=True)


class RunTimeSettings:
    """The service's shares and fair-share views and changes."""

    store: DynamoJobStore
    settings: Settings
    sagemaker: SageMakerGateway

    def shares(self) -> tuple[Layout, list[ShareUsage], dict[str, int], Holders]:
        """The shares in effect, each share's use per instance type, its waiting jobs, and
        the holders they were read from (which say who last replaced the shares)."""
        held = self.store.holders()
        layout = self.layout(held)
        now = self.clock()
        holders = [*held.jobs, *held.idle_pools(now)]
        usage = usage_with_plans(layout.shares, holders, layout.plans, now)
        types = list(layout.capacity)
        accounts = self.store.accounts(held)
        waiting = {s.name: self.store.depth(types, s.name, accounts) for s in layout.shares}
        return layout, usage, waiting, held

    def usage(self) -> tuple[View, Holders]:
        """What fair share sees now (the snapshot, the accounts, the policy in effect), and
        the holders it was read from (who last set the weights)."""
        held = self.store.holders()
        return self.view(held), held

    def with_budgets(self, seen: Snapshot, layout: Layout, held: Holders) -> Snapshot:
        """``seen`` with where each budgeted share and submitter stands (one Query each)."""
        submitters = self.settings.budgets_in_effect(held.budgets_text, held.budgets_deployed)
        budgets = budgeted(layout.shares, submitters)
        if not budgets:
            return seen
        first = int(seen.now // DAY) - max(b.window_days for b in budgets.values()) + 1
        ended = self.store.spent(budgets, first)
        price = key_price(self.settings.prices, layout.plans)
        return replace(seen, budgets=standings(budgets, ended, seen, price))

    def usage_report(self, query: Mapping[str, str], held: Holders) -> dict:
        """The usage ledger's report over the window ``query`` asks for (GET /usage's
        since, until, by), counting what holds instances now (``held``) so far."""
        now = self.clock()
        layout = self.layout(held)
        window = parse_window(query, now, "share" if layout.shares else "submitter")
        return usage_report(
            self._held(window.since, held), window, self.settings.prices, layout.plans
        )

    def timeline(self, query: Mapping[str, str]) -> dict:
        """GET /timeline: every attempt and warm pool that held instances between the
        query's since and until (default: the last day), work in progress included."""
        now = self.clock()
        since, until = parse_span(query, now, DAY)
        ended = self.store.usage_records(since)
        held = self.store.holders()
        layout = self.layout(held)
        in_progress = self._held_now(held)
        return timeline_view(ended, in_progress, since, until, now, layout.shares, layout.plans)

    def _held(self, since: float, held: Holders) -> list[UsageRecord]:
        """The ledger's records of what ended at ``since`` or after, and what holds
        instances now (``held``), so far."""
        return [*self.store.usage_records(since), *self._held_now(held)]

    def _held_now(self, held: Holders) -> list[UsageRecord]:
        """Records of what the jobs and warm pools holding instances (``held``) held so far."""
        jobs = [job for active in held.jobs if (job := self.store.get(active.name))]
        return held_now(jobs, held.pools, self.clock())

    def report_last_month(self, held: Holders) -> None:
        """Once a month has ended, the sweep sends its usage report as a queue event (at
        most once: the sweep that marks the month sent sends it)."""
        now = self.clock()
        due = month_due(held.usage_reported, now)
        if due is None or not self.store.set_usage_reported(due[0], held.usage_reported):
            return
        month, send = due
        if send:
            layout = self.layout(held)
            window = month_window(month, "share" if layout.shares else "submitter")
            records = self._held(window.since, held)
            report = usage_report(records, window, self.settings.prices, layout.plans)
            self.report.changes.append(UsageReported(month, report, now))

    def set_budgets(self, value: object, caller: Caller) -> None:
        """Replace the submitters' budgets without a deployment (admins only), then
        schedule: a raised budget lets its jobs start."""
        access.check_admin(caller, "change the budgets")
        if not isinstance(value, dict):
            raise InvalidRequest(
                'the budgets must be a JSON object such as {"alice": {"instance_hours": 100}}'
            )
        try:
            budgets = parse_budgets(json.dumps(value), "budgets")
        except BudgetError as exc:
            raise InvalidRequest(str(exc)) from None
        self.store.holders()  # a new table's holders item, which keeps them
        text = dumps_budgets(budgets)
        self.store.set_budgets(text, self.settings.budgets_text, caller.arn, self.clock())
        logger.info("budgets changed", extra={"budgets": json.loads(text), "by": caller.arn})
        self.schedule()

    def warn_of_budgets(self, seen: Snapshot, held: Holders) -> None:
        """The sweep's warnings of budgets 80% spent, and spent: once per level reached (the
        sweep that records the levels sends them)."""
        before = held.budgets_warned
        levels, send = warnings(seen.budgets, before or {})
        if levels == (before or {}) or not self.store.set_budgets_warned(levels, before):
            return
        for standing, level in send:
            self.report.changes.append(BudgetWarning(standing, level, seen.now))

    def set_weights(self, value: object, caller: Caller) -> None:
        """Replace the fair-share weights without a deployment (admins only), then
        schedule in the new order."""
        access.check_admin(caller, "change the fair-share weights")
        if self.settings.policy.fair_share is None:
            raise InvalidRequest(
                "fair share is off (FairShareHalfLifeSeconds is 0): weights would change nothing"
            )
        if not isinstance(value, dict):
            raise InvalidRequest('the weights must be a JSON object such as {"project-x": 2}')
        text = json.dumps(value)
        try:
            parse_weights(text, "weights")
        except FairShareError as exc:
            raise InvalidRequest(str(exc)) from None

        self.store.holders()  # a new table's holders item, which keeps them
        self.store.set_weights(
            text, self.settings.fair_share_weights_text, caller.arn, self.clock()
        )
        logger.info("fair-share weights changed", extra={"weights": value})
        self.schedule()

    def set_shares(self, value: object, caller: Caller) -> Layout:
        """Replace the quota shares without a deployment (admins only), then schedule: a
        lowered limit makes jobs over it reclaimable, a raised one lets waiting jobs start."""
        access.check_admin(caller, "replace the shares")
        shares = self.settings.replacement_shares(value)

        def replace_once() -> None:
            held = self.store.holders()
            text, deployed = dumps_shares(shares), self.settings.shares_text
            self.store.set_shares(text, deployed, held.version, caller.arn, self.clock())

        until_settled(replace_once, RETRIES, busy("the queue", "while the shares were replaced"))
        logger.info("shares changed", extra={"shares": [s.name for s in shares]})
        self.schedule()
        return self.layout()

    def change_hold(self, action: HoldAction, share: str | None, caller: Caller) -> Holders:
        """Hold, drain or resume the queue (``share`` None) or one of its shares (admins
        only), then schedule: a drain stops the running jobs it holds. The holders after."""
        what = "the queue" if share is None else f"share {share}"
        access.check_admin(caller, f"{action.value} {what}")
        if share is not None and not isinstance(share, str):
            raise InvalidRequest(f"share must be a share's name, got {share!r}")

        def change_once() -> None:
            held = self.store.holders()
            names = [s.name for s in self.layout(held).shares]
            if share is not None and share not in names:
                known = f"its shares are {', '.join(names)}" if names else "it has no shares"
                raise InvalidRequest(f"share {share} is not one of the queue's shares: {known}")
            change = HoldChange(action, share, caller.arn, self.clock())
            holds = changed(held.holds, change)
            self.store.set_holds(holds, held.hold_changes, change, held.version)

        until_settled(change_once, RETRIES, busy("the queue", f"while {what} was changed"))
        logger.info(f"{what}: {action.value}", extra={"share": share, "action": action.value})
        self.report.changes.append(HoldChanged(action.value, share, caller.arn, self.clock()))
        self.schedule()
        return self.store.holders()

    # -- training plans ----------------------------------------------------------------------

    def refresh_plans(self) -> None:
        """Read every training plan again (at cold start and in the sweep, never per event):
        one that cannot be read keeps its last reading, and the queue goes on without it."""
        held = self.store.holders()
        layout = self.layout(held)
        # With shares, the plans they name (shares set at run time may name others).
        entries = plan_entries_of(layout.shares) if layout.shares else self.settings.training_plans
        if entries:
            describe = self.sagemaker.describe_training_plan
            self.store.set_plans(plans.refresh(entries, held.plans, describe, self.clock()))
