"""The waiting queue as one invocation reads it: each partition a Query page at a time,
pages growing while a reader reads on, and every reader of one reading sharing the pages
already read.

A pass reads the queue only as far as it can start jobs; the answer to a submission (its
place in line, its expected start) reads further, up to the replay's horizon. With one
reading for both, the answer starts where the pass stopped instead of reading the same
pages again. A reading is a moment's view: a pass that lost a race takes a new one.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence

from job_queue.scheduler import WaitingJob
from job_queue.store.table import MULTI_TYPE, partition

FIRST_PAGE = 8  # waiting entries per Query; doubles while a reader reads on
MAX_PAGE = 256

# One Query page of a partition: (partition, behind this sort key, from this key, limit) ->
# ((sort key, job) in order, the key to read on from; None: the partition's end).
ReadPage = Callable[
    [str, str | None, dict | None, int], tuple[list[tuple[str, WaitingJob]], dict | None]
]


class _Cursor:
    """One partition's entries as read so far, and where to read on."""

    def __init__(self, read_page: ReadPage, name: str, after: str | None) -> None:
        self._read_page, self._name, self._after = read_page, name, after
        self._entries: list[tuple[str, WaitingJob]] = []
        self._next: dict | None = None
        self._ended = False
        self._limit = FIRST_PAGE

    def entries(self, wanted: Callable[[], bool], expect: int) -> Iterator[tuple[str, WaitingJob]]:
        """The partition in order: what was read, then a page more each time the reader
        has used them all and still ``wanted()`` (a page of what is left of ``expect``
        entries, if that is more)."""
        i = 0
        while True:
            while i < len(self._entries):
                yield self._entries[i]
                i += 1
            if self._ended or not wanted():
                return
            limit = min(max(self._limit, expect - len(self._entries)), MAX_PAGE)
            page, self._next = self._read_page(self._name, self._after, self._next, limit)
            self._entries += page
            self._ended = self._next is None
            self._limit = min(self._limit * 2, MAX_PAGE)


class QueueReading:
    """Waiting jobs in queue order, read lazily and shared by this reading's readers."""

    def __init__(self, read_page: ReadPage, after: str | None = None) -> None:
        """``after``: only the jobs behind this sort key (a page of GET /jobs)."""
        self._read_page, self._after = read_page, after
        self._cursors: dict[str, _Cursor] = {}

    def waiting(
        self,
        instance_types: Sequence[str],
        is_open: Callable[[str, str | None], bool] | None = None,
        shares: Sequence[str | None] = (None,),
        multi: bool = True,
        expect: int = 0,
    ) -> Iterator[WaitingJob]:
        """Waiting jobs of these instance types (and, with ``multi``, jobs that need several;
        ``-``: jobs that need none that is capped) and shares (None: jobs without a share) in
        queue order.

        ``is_open(instance type or "*", share)`` (the scheduler's) tells which partitions
        are still worth reading: a closed one is read no further. ``expect``: how many jobs of
        each partition the reader means to read at most, so that it reads them in as few
        pages as it can.
        """
        types = [*instance_types, MULTI_TYPE] if multi else list(instance_types)
        streams = []
        for share in shares:
            for itype in types:
                name = partition(itype, share)
                cursor = self._cursors.get(name)
                if cursor is None:
                    cursor = self._cursors[name] = _Cursor(self._read_page, name, self._after)
                wanted = (lambda t=itype, s=share: is_open(t, s)) if is_open else _always
                streams.append(cursor.entries(wanted, expect))
        for _, job in heapq.merge(*streams, key=lambda entry: entry[0]):
            yield job


def _always() -> bool:
    return True
