"""What the replay charges for what attempts and warm pools held: fair share's usage and
budgets' spending, counted as the queue counts them (a part of the replay, kept apart to keep
the engine small)."""

from __future__ import annotations

from dataclasses import replace

from job_queue.budget_config import budgeted
from job_queue.costs import key_price
from job_queue.scheduler import budgets
from job_queue.scheduler.fair_share import charge
from job_queue.scheduler.snapshot import ActiveJob, Plan, Snapshot, WarmPool
from job_queue.scheduler.waiting_for import Reason


class Spending:
    """Fair share's usage and budgets' spending of the replay (a mixin of the replay)."""

    def _start_spending(self) -> None:
        settings = self.settings
        self.budgets = budgeted(settings.shares, dict(settings.budgets))
        self.spent: dict = {}  # budgets: what ended, by holder, day and capacity key
        self.price = key_price(settings.prices, settings.plans)
        self.window_wakes: set[float] = set()  # passes due when a budget's window frees

    def _charge(self, holder: ActiveJob | WarmPool, since: float, until: float) -> None:
        """What ``holder`` held from ``since`` to ``until`` is its submitter's (and share's)
        usage for fair share and spending for budgets, as the Lambda records them."""
        self.usage = charge(self.usage, holder, since, until, self.settings.policy.fair_share)
        if self.budgets:
            budgets.charge(self.spent, holder, since, until)

    def _with_budgets(self, seen: Snapshot) -> Snapshot:
        """``seen`` with where each budgeted holder stands (as the Lambda's pass sees it)."""
        if not self.budgets:
            return seen
        return replace(seen, budgets=budgets.standings(self.budgets, self.spent, seen, self.price))

    def _wake_when_budgets_free(self, decided: Plan, wake) -> None:
        """A pass when a waiting job's budget frees (the Lambda's sweep, a minute at most
        later, finds it): ``wake(time)`` queues it."""
        for why in decided.waiting.values():
            due = why.until if why.code is Reason.BUDGET else None
            if due is not None and due not in self.window_wakes:
                self.window_wakes.add(due)
                wake(due)
