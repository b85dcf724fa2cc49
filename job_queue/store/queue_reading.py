"""The waiting queue as one invocation reads it: each partition a Query page at a time,
pages growing while a reader reads on, and every reader of one reading sharing the pages
already read.

A pass reads the queue only as far as it can start jobs; the answer to a submission (its
place in line, its expected start) reads further, up to the replay's horizon. With one
reading for both, the answer starts where the pass stopped instead of reading the same
pages again. A reading is a moment's view: a pass that lost a race takes a new one.

With fair share, a partition's jobs wait in their submitters' lines (and, queued before it
was on, in the partition itself): a reading merges the lines' heads -- by priority and
submission while fair share is off, in fair-share order while it is on -- so that it reads
a page of each line, never the whole queue.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from job_queue.scheduler import WaitingJob
from job_queue.scheduler.fair_share import Standings, in_line
from job_queue.store.table import MULTI_TYPE, line_partition, partition

FIRST_PAGE = 8  # waiting entries per Query; doubles while a reader reads on
LINE_FIRST_PAGE = 1  # of a submitter's line: a pass needs its head, a page more if it starts
MAX_PAGE = 256

# One Query page of a partition: (partition, behind this sort key, from this key, limit) ->
# ((sort key, job) in order, the key to read on from; None: the partition's end).
ReadPage = Callable[
    [str, str | None, dict | None, int], tuple[list[tuple[str, WaitingJob]], dict | None]
]


class _Cursor:
    """One partition's entries as read so far, and where to read on."""

    def __init__(self, read_page: ReadPage, name: str, after: str | None, first: int) -> None:
        self._read_page, self._name, self._after = read_page, name, after
        self._entries: list[tuple[str, WaitingJob]] = []
        self._next: dict | None = None
        self._ended = False
        self._limit = first

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

    def __init__(
        self,
        read_page: ReadPage,
        after: str | None = None,
        lines: Mapping[str, Sequence[str]] | None = None,
        standing: Standings | None = None,
    ) -> None:
        """``after``: only the jobs behind this sort key (a page of GET /jobs). ``lines``:
        partition -> the submitters with jobs in a line of it; ``standing``: fair share's,
        to merge the lines by (None: by priority and submission)."""
        self._read_page, self._after = read_page, after
        self._lines, self._standing = lines or {}, standing
        self._cursors: dict[str, _Cursor] = {}

    @property
    def lines(self) -> Mapping[str, Sequence[str]]:
        """The submitters' lines this reading reads (partition -> submitters)."""
        return self._lines

    def _cursor(self, name: str, first: int) -> _Cursor:
        cursor = self._cursors.get(name)
        if cursor is None:
            cursor = self._cursors[name] = _Cursor(self._read_page, name, self._after, first)
        return cursor

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
        plains, lines = [], {}
        for share in shares:
            for itype in types:
                name = partition(itype, share)
                wanted = (lambda t=itype, s=share: is_open(t, s)) if is_open else _always
                plains.append((name, self._cursor(name, FIRST_PAGE).entries(wanted, expect)))
                for who in self._lines.get(name, ()):
                    cursor = self._cursor(line_partition(name, who), LINE_FIRST_PAGE)
                    lines[name, who] = [cursor.entries(wanted, expect)]
        if self._standing is None:
            streams = [stream for _, stream in plains] + [s for ss in lines.values() for s in ss]
            yield from _jobs(streams)
            return
        for name, stream in plains:
            # Jobs queued while fair share was off wait in the partition itself: each
            # submitter's join the head of its line (a partition that only empties).
            for entry in stream:
                lines.setdefault((name, entry[1].submitter), []).append(iter([entry]))
        yield from in_line([_jobs(streams) for streams in lines.values()], self._standing)


def _jobs(streams: Iterable[Iterator[tuple[str, WaitingJob]]]) -> Iterator[WaitingJob]:
    """The jobs of sorted (sort key, job) streams, merged in sort-key order."""
    for _, job in heapq.merge(*streams, key=lambda entry: entry[0]):
        yield job


def _always() -> bool:
    return True
