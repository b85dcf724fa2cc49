"""The workload's jobs out of line for their dependency (its ``after`` column): the
simulator's side of the first step of the queue's pass, deciding with the queue's own rule
(:func:`job_queue.scheduler.dependencies.settle`)."""

from __future__ import annotations

from collections.abc import Sequence

from job_queue.scheduler.dependencies import Dependent, settle
from tjq.simulate.records import JobResult


class OutOfLine:
    """Jobs submitted with a dependency that does not hold yet (by their row's index)."""

    def __init__(self, results: Sequence[JobResult]) -> None:
        self._results = results
        self._index = {result.spec.name: i for i, result in enumerate(results)}
        self._jobs: dict[int, Dependent] = {}

    def add(self, index: int) -> bool:
        """A job just submitted waits out of line if it has a dependency (True)."""
        spec = self._results[index].spec
        if spec.dependency is None:
            return False
        self._jobs[index] = Dependent(spec.name, spec.dependency)
        return True

    def settle(self) -> tuple[list[int], dict[int, str]]:
        """The jobs that join the line now, and those whose dependency never can hold (with
        why); both leave this set."""
        if not self._jobs:
            return [], {}
        parents = {p for job in self._jobs.values() for p in job.dependency.parents}
        states = {p: self._results[self._index[p]].state for p in parents}
        settled = settle(list(self._jobs.values()), states)
        ready = [self._index[name] for name in settled.ready]
        doomed = {self._index[name]: why for name, why in settled.doomed.items()}
        for index in [*ready, *doomed]:
            del self._jobs[index]
        return ready, doomed

    def __len__(self) -> int:
        return len(self._jobs)
