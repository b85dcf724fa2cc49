"""Expected start times of waiting jobs, from the table as it is now (the replay itself is the
pure :mod:`job_queue.scheduler.forecast`): one read of the holders, the waiting jobs up to
the replay's horizon, and one of the run-time history."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from job_queue.config import Layout, Settings
from job_queue.scheduler import WaitingJob, forecast
from job_queue.scheduler.forecast import HORIZON, ExpectedStart
from job_queue.store import DynamoJobStore, Holders


def waiting_within_horizon(store: DynamoJobStore, layout: Layout) -> list[WaitingJob]:
    """The waiting jobs a replay plays, read lazily: a partition is read no further once
    it gave the horizon's jobs."""
    read: Counter[tuple[str, str | None]] = Counter()
    partitions = [s.name for s in layout.shares] or [None]
    jobs = []
    for job in store.waiting(
        list(layout.capacity), lambda itype, share: read[itype, share] < HORIZON, partitions
    ):
        read[next(iter(job.demand)) if len(job.demand) == 1 else "*", job.share] += 1
        jobs.append(job)
    return jobs


def expected_starts(
    store: DynamoJobStore,
    settings: Settings,
    held: Holders,
    layout: Layout,
    now: float,
    waiting: Sequence[WaitingJob] | None = None,
) -> dict[str, ExpectedStart]:
    """Every waiting job's expected start within the horizon (``waiting``: the queue in
    order, if already read)."""
    if waiting is None:
        waiting = waiting_within_horizon(store, layout)
    return forecast.expected_starts(
        waiting,
        held.jobs,
        layout.capacity,
        now,
        store.run_history(),
        settings.policy,
        layout.shares,
        held.idle_pools(now),
        held.outside,
        layout.plans,
    )
