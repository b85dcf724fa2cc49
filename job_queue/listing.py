"""GET /jobs, a page at a time: the holders, one page of the waiting queue with its places
in line and expected starts, and where the next page starts (:mod:`job_queue.paging`)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from job_queue import outlook, paging
from job_queue.layout import Layout
from job_queue.scheduler import WaitingJob, positions
from job_queue.scheduler.dependencies import Dependency
from job_queue.scheduler.forecast import ExpectedStart, OutOfLine, RunHistory
from job_queue.scheduler.waiting_for import WaitingFor
from job_queue.scheduling import View
from job_queue.store import DynamoJobStore, Holders
from job_queue.store.table import UNCAPPED
from job_queue.usage_view import who_is_next

if TYPE_CHECKING:
    from job_queue.dependents import DependentJobs


@dataclass(frozen=True)
class Listing:
    """One page of the queue."""

    held: Holders
    layout: Layout
    waiting: list[WaitingJob]  # this page's waiting jobs, in queue order
    positions: list[int]
    expected: dict[str, ExpectedStart]
    waiting_for: dict[str, WaitingFor]  # why each waits (none: it starts in the next pass)
    next_token: str | None  # None: the last page
    waiting_total: int  # waiting jobs in the whole queue (at least)
    counted_at: float | None  # when the sweep counted them (None: counted now, exactly)
    next_up: dict | None = None  # fair share: whose job is next, and why
    # The last page's: jobs out of line for their dependency, and what each waits for.
    out_of_line: Sequence[tuple[WaitingJob, Dependency]] = ()


def list_page(
    store: DynamoJobStore,
    held: Holders,
    viewed: View,
    history: RunHistory,
    limit: int = paging.DEFAULT_LIMIT,
    token: str | None = None,
    dependents: DependentJobs | None = None,
) -> Listing:
    """The page of ``token`` (None: the first): at most ``limit`` waiting jobs, read lazily,
    so that a deep queue costs a page, not the whole queue. ``viewed``: what a pass sees of
    the holders ``held`` (:meth:`QueueService.view`). The page is in priority and submission
    order; expected starts replay the pass's (fair-share) order."""
    layout, seen, reading = viewed.layout, viewed.seen, viewed.reading
    start = paging.page_start(token)
    # Jobs without a share too: queued before shares were set, they still wait.
    partitions = [None, *(s.name for s in layout.shares)]
    # Jobs on uncapped types only wait only while a refused start backs off: shown too.
    types = [*layout.capacity, *([UNCAPPED] if layout.uncapped else [])]
    reader = store.waiting(types, shares=partitions, after=start.after, lines=reading.lines)
    page = list(itertools.islice(reader, limit + 1))
    more = len(page) > limit
    page = page[:limit]
    before = sum(start.line.single.values()) + len(start.line.multi)
    places = positions(page, start.line)
    whole = start.after is None and not more  # the page is the whole queue
    horizon = page if whole else outlook.waiting_within_horizon(reading, seen)
    # The last page ends with the jobs out of line, and their expected starts.
    out, out_why = dependents.out_of_line(held) if dependents and not more else (OutOfLine(), {})
    expected = outlook.expected_starts(reading, viewed.policy, seen, history, horizon, out)
    why = outlook.reasons(seen, horizon, viewed.policy, shown=(job.name for job in page))
    why.update(out_why)
    # With more pages, the rest is as the last sweep counted it (a deep queue is not counted
    # again for every page), and at least what was read.
    known = before + len(page) + more
    total = max(known, held.waiting_count or 0) if more else known
    counted_at = held.waiting_counted_at if more and total > known else None
    return Listing(
        held,
        layout,
        page,
        places,
        expected,
        why,
        paging.next_token(page[-1], start.line) if more else None,
        total,
        counted_at,
        who_is_next(seen, viewed.accounts, viewed.policy.fair_share),
        out.jobs,
    )
