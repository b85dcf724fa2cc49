"""A waiting job's outlook — its place in line and when it is expected to start — from the
table as it is now (the replay itself is the pure :mod:`job_queue.scheduler.forecast`).

Both cost the same few reads however deep the queue is: the first
:data:`~job_queue.scheduler.forecast.HORIZON` waiting jobs of each partition, and the run-time
history (the holders are the snapshot's, read once per invocation). A job further back than
that has no place or estimate, only the knowledge that more than HORIZON jobs are ahead of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from job_queue.models import Job
from job_queue.scheduler import Policy, WaitingJob, forecast, positions
from job_queue.scheduler.forecast import (
    HORIZON,
    NOBODY_OUT_OF_LINE,
    ExpectedStart,
    OutOfLine,
    RunHistory,
    partition,
)
from job_queue.scheduler.planner import explain
from job_queue.scheduler.snapshot import Snapshot
from job_queue.scheduler.waiting_for import Reason, WaitingFor, beyond_horizon
from job_queue.store.queue_reading import QueueReading

NO_SHARE = "it was queued before the queue had quota shares, and has none: it cannot start"


@dataclass(frozen=True)
class Outlook:
    """Where a waiting job stands (all None for a job that does not wait)."""

    position: int | None = None  # its place in line; None: unknown, or not waiting
    expected: ExpectedStart | None = None
    beyond: int | None = None  # set when its place is unknown: more than this many ahead
    waiting_for: WaitingFor | None = None  # why it waits (None: it starts in the next pass)


def outlook_of(
    reading: QueueReading,
    policy: Policy,
    seen: Snapshot,
    job: Job,
    history: RunHistory,
    started: frozenset[str] = frozenset(),
    out_of_line: tuple[OutOfLine, Mapping[str, WaitingFor]] | None = None,
) -> Outlook:
    """``job``'s outlook from ``seen`` (what a pass sees now), the queue as ``reading``
    reads it, and the run-time history (``started``: jobs the reading still shows waiting
    that a pass has started since). A job out of line for its dependency has no place in
    line yet; ``out_of_line``: those jobs, and why each waits."""
    if not job.state.is_waiting:
        return Outlook()
    waiting = still_waiting(reading, seen, started)
    if out_of_line is not None and job.waits_on_parents:
        jobs, why = out_of_line
        expected = expected_starts(reading, policy, seen, history, waiting, jobs).get(job.name)
        return Outlook(None, expected, None, why.get(job.name))
    position = settled_places(waiting).get(job.name)
    expected = expected_starts(reading, policy, seen, history, waiting).get(job.name)
    why = reasons(seen, waiting, policy, shown=(job.name,)).get(job.name)
    return Outlook(position, expected, None if position is not None else HORIZON, why)


def still_waiting(
    reading: QueueReading, seen: Snapshot, started: frozenset[str]
) -> list[WaitingJob]:
    """:func:`waiting_within_horizon`, but for ``started``: jobs the reading still shows
    waiting that a pass has started since."""
    return [job for job in waiting_within_horizon(reading, seen) if job.name not in started]


def waiting_within_horizon(reading: QueueReading, seen: Snapshot) -> list[WaitingJob]:
    """The waiting jobs a replay plays, read lazily: a partition is read no further once
    it gave the horizon's jobs."""
    read: Counter[tuple[str, str | None]] = Counter()
    partitions = [s.name for s in seen.shares] or [None]  # as a pass reads them
    jobs = []
    wanted = lambda itype, share: read[itype, share] < HORIZON  # noqa: E731
    for job in reading.waiting(list(seen.capacity), wanted, partitions, expect=HORIZON):
        read[partition(job)] += 1
        jobs.append(job)
    return jobs


def settled_places(waiting: Sequence[WaitingJob]) -> dict[str, int]:
    """The places in line (``waiting`` in the order a pass takes them, each partition read
    up to the horizon) that the read settles: those of jobs ahead of every unread job they
    compete with. A partition's unread jobs come after the last one read of it, in queue
    order as in fair-share order."""
    read: Counter[tuple[str, str | None]] = Counter()
    last: dict[tuple[str, str | None], int] = {}
    for index, job in enumerate(waiting):
        read[partition(job)] += 1
        last[partition(job)] = index
    cut = {p: last[p] for p, n in read.items() if n >= HORIZON}  # it may go on unread
    places = {}
    for index, (job, place) in enumerate(zip(waiting, positions(waiting), strict=True)):
        competing = [(t, job.share) for t in job.demand] + [("*", job.share)]
        if all(p not in cut or index <= cut[p] for p in competing):
            places[job.name] = place
    return places


def expected_starts(
    reading: QueueReading,
    policy: Policy,
    seen: Snapshot,
    history: RunHistory,
    waiting: Sequence[WaitingJob] | None = None,
    out_of_line: OutOfLine = NOBODY_OUT_OF_LINE,
) -> dict[str, ExpectedStart]:
    """Every waiting job's expected start within the horizon (``waiting``: the queue in
    order, if already read), and of the jobs out of line for their dependency."""
    if waiting is None:
        waiting = waiting_within_horizon(reading, seen)
    return forecast.expected_starts(seen, offered(seen, waiting), history, policy, out_of_line)


def reasons(
    seen: Snapshot, waiting: Sequence[WaitingJob], policy: Policy, shown: Iterable[str] = ()
) -> dict[str, WaitingFor]:
    """Why each of ``waiting`` (read as :func:`waiting_within_horizon` reads) does not start:
    the pass's own reasons (:func:`~job_queue.scheduler.planner.explain`); and each of the
    jobs named in ``shown`` that is not among them waits further back than a pass reads."""
    why = explain(seen, offered(seen, waiting), policy)
    for job in waiting:
        if job.name not in why and seen.shares and job.share is None:
            why[job.name] = WaitingFor(Reason.NO_CAPACITY, NO_SHARE)
    read = {job.name for job in waiting}
    why.update((name, beyond_horizon(HORIZON)) for name in shown if name not in read)
    return why


def offered(seen: Snapshot, waiting: Sequence[WaitingJob]) -> list[WaitingJob]:
    """The jobs a pass offers: with shares, jobs queued before there were shares are not."""
    return [job for job in waiting if job.share is not None] if seen.shares else list(waiting)
