"""The simulator's waiting queue: the jobs on capped types in queue order (and, with fair
share, by line, as the table keeps each submitter's line), the jobs on uncapped types apart,
and how many wait per type and size (for idle-while-waiting)."""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

from job_queue.scheduler import Snapshot, WaitingJob
from job_queue.scheduler.fair_share import FairShare, InLine, in_line, line_of, standings
from job_queue.scheduler.order import queue_order

Key = tuple[int, int]  # (-priority, seq)


class Waiting:
    """The waiting jobs, by index into ``view`` (what the scheduler sees of each row)."""

    def __init__(self, view: Sequence[WaitingJob], types: Iterable[str], fair: bool) -> None:
        self._view = view
        self._keys: list[Key] = []  # jobs that need capped instances, sorted
        self._uncapped: list[Key] = []  # jobs on uncapped types only (they start at once)
        self._index: dict[Key, int] = {}
        # How many waiting jobs need n instances of a type: for idle_while_waiting.
        self.sizes: dict[str, Counter[int]] = {t: Counter() for t in types}
        # Fair share: the waiting jobs' keys by line (partition, share, submitter), sorted.
        self._lines: dict[tuple, list[Key]] | None = {} if fair else None

    def __len__(self) -> int:
        """How many wait for capped instances."""
        return len(self._keys)

    def index_of(self, job: WaitingJob) -> int:
        return self._index[queue_order(job)]

    def add(self, index: int, size: tuple[str, int] | None) -> None:
        """Row ``index`` waits; ``size``: the type and count it needs (None: uncapped)."""
        job = self._view[index]
        key = queue_order(job)
        self._index[key] = index
        if size is None:
            bisect.insort(self._uncapped, key)
            return
        bisect.insort(self._keys, key)
        self.sizes[size[0]][size[1]] += 1
        if self._lines is not None:
            bisect.insort(self._lines.setdefault(line_of(job), []), key)

    def remove(self, index: int, size: tuple[str, int] | None) -> None:
        """Row ``index`` starts."""
        job = self._view[index]
        key = queue_order(job)
        del self._index[key]
        if size is None:
            self._uncapped.remove(key)
            return
        del self._keys[bisect.bisect_left(self._keys, key)]
        if self._lines is not None:
            line = self._lines[line_of(job)]
            del line[bisect.bisect_left(line, key)]
            if not line:
                del self._lines[line_of(job)]
        sizes = self.sizes[size[0]]
        sizes[size[1]] -= 1
        if not sizes[size[1]]:
            del sizes[size[1]]

    def in_order(self, seen: Snapshot, fair: FairShare | None) -> Iterable[WaitingJob]:
        """The queue as the pass reads it: jobs on uncapped types first (they start at once,
        whatever waits for capacity), then in queue order, or with fair share line by line
        in fair-share order."""
        view, at = self._view, self._index
        uncapped = (view[at[key]] for key in self._uncapped)
        if self._lines is None or fair is None:
            return itertools.chain(uncapped, (view[at[key]] for key in self._keys))
        lines = [(view[at[key]] for key in keys) for keys in self._lines.values()]
        return InLine(itertools.chain(uncapped, in_line(lines, standings(seen, fair))))
