"""Jobs that wait for other jobs: when a dependent job may join the line, and when it never
can.

A job may name up to :data:`MAX_PARENTS` queue jobs (its parents) and how it waits for
them (:class:`Kind`, as Slurm's ``--dependency``):

* ``after`` — once they have all ended, however;
* ``afterok`` — once they have all completed; if one ends any other way, never;
* ``afternotok`` — once they have all ended without completing (failed, cancelled or
  stopped outside the queue); if one completes, never.

Until its condition holds, a dependent job keeps its place (priority and submission order)
but is out of line: it holds back nobody, and no pass offers it. :func:`settle`, the first
step of every pass, decides for every such job at once — so that a failed parent cancels
its children and their children in one pass — whether it joins the line now, waits on, or
ends ``cancelled`` naming the parent that made its condition impossible. A parent that is
itself doomed counts as not completing: it is cancelled in the same pass.

Pure: the caller reads the dependent jobs and the states of their other parents.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from job_queue.models import JobState
from job_queue.scheduler.waiting_for import MAX_NAMED, Reason, WaitingFor

MAX_PARENTS = 20  # as AWS Batch's dependsOn
_SEPARATORS = re.compile(r"[\s,;]+")  # ; in a workload CSV, whose columns are apart by ,


class Kind(StrEnum):
    """How a dependent job waits for its parents."""

    AFTER = "after"
    AFTEROK = "afterok"
    AFTERNOTOK = "afternotok"


DEFAULT_KIND = Kind.AFTEROK


@dataclass(frozen=True)
class Dependency:
    """What a job waits for: ``parents`` (queue job names) ending as ``kind`` says."""

    kind: Kind
    parents: tuple[str, ...]

    def __str__(self) -> str:
        """As the ``depends-on`` tag writes it: ``afterok:job-a,job-b``."""
        return f"{self.kind}:{','.join(self.parents)}"

    @classmethod
    def parse(cls, text: object) -> Dependency:
        """``[kind:]name[,name...]`` (names apart by commas, spaces or semicolons; ``afterok``
        without a kind). ValueError naming what is wrong."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"be [after|afterok|afternotok:]job[,job...], got {text!r}")
        kind_text, sep, names_text = text.strip().partition(":")
        if not sep:
            kind_text, names_text = DEFAULT_KIND.value, kind_text
        return cls.of(kind_text.strip().lower(), _SEPARATORS.split(names_text.strip()))

    @classmethod
    def of(cls, kind: object, parents: object) -> Dependency:
        """A dependency of ``kind`` (a :class:`Kind` value) on the job names ``parents``;
        ValueError naming what is wrong (name syntax is the caller's to check)."""
        try:
            kind = Kind(kind)
        except ValueError:
            known = ", ".join(k.value for k in Kind)
            raise ValueError(f"have a dependency type among {known}, got {kind!r}") from None
        if not isinstance(parents, Sequence) or isinstance(parents, str):
            raise ValueError(f"name a list of jobs, got {parents!r}")
        names = [p for p in parents if p != ""]
        if not names or not all(isinstance(p, str) for p in names):
            raise ValueError(f"name a list of jobs, got {list(parents)!r}")
        unique = tuple(dict.fromkeys(names))
        if len(unique) > MAX_PARENTS:
            raise ValueError(f"name at most {MAX_PARENTS} jobs, got {len(unique)}")
        return cls(kind, unique)


@dataclass(frozen=True)
class Dependent:
    """A job out of line until its dependency holds."""

    name: str
    dependency: Dependency


@dataclass(frozen=True)
class Settled:
    """What :func:`settle` decided: the jobs that join the line now, those that can never
    (job -> the reason it is cancelled), and why each of the others still waits."""

    ready: tuple[str, ...] = ()
    doomed: Mapping[str, str] = field(default_factory=dict)
    waiting: Mapping[str, WaitingFor] = field(default_factory=dict)


# A parent's part in a condition: it completed, it ended otherwise, or it has not ended yet.
_OK, _NOT_OK, _PENDING = "ok", "not-ok", "pending"
_NEVER_HOLDS = {Kind.AFTEROK: _NOT_OK, Kind.AFTERNOTOK: _OK}


def settle(dependents: Sequence[Dependent], states: Mapping[str, JobState | None]) -> Settled:
    """Decide for every dependent job (its parents that are not dependents themselves have
    their state in ``states``; None: no longer in the queue's records).

    A parent no longer in the records ended so long ago that its child should have been
    settled then: ``after`` counts it as ended; the others cannot tell how, so never hold.
    """
    out_of_line = {d.name: d for d in dependents}
    decided: dict[str, tuple[str, str | None]] = {}  # job -> (status, reason if doomed)

    def status(name: str, visiting: frozenset[str]) -> str:
        """A parent's part: a dependent parent that is doomed will not complete."""
        if name in out_of_line:
            if name in visiting:  # only a reused name can make a cycle: it never holds
                return _NOT_OK
            return _NOT_OK if decide(out_of_line[name], visiting)[1] else _PENDING
        state = states.get(name)
        if state is None or state in (JobState.FAILED, JobState.CANCELLED, JobState.STOPPED):
            return _NOT_OK
        return _OK if state is JobState.COMPLETED else _PENDING

    def decide(job: Dependent, visiting: frozenset[str]) -> tuple[str, str | None]:
        if job.name not in decided:
            parts = {p: status(p, visiting | {job.name}) for p in job.dependency.parents}
            decided[job.name] = _condition(job.dependency, parts, states)
        return decided[job.name]

    ready, doomed, waiting = [], {}, {}
    for job in dependents:
        outcome, reason = decide(job, frozenset())
        if reason is not None:
            doomed[job.name] = reason
        elif outcome == _OK:
            ready.append(job.name)
        else:
            waiting[job.name] = waiting_on(job.dependency, states, set(out_of_line))
    return Settled(tuple(ready), doomed, waiting)


def _condition(
    dependency: Dependency, parts: Mapping[str, str], states: Mapping[str, JobState | None]
) -> tuple[str, str | None]:
    """(``ok`` if it holds now, else ``pending``; the reason it never can, or None)."""
    never = _NEVER_HOLDS.get(dependency.kind)
    for parent, part in parts.items():
        if part == never:
            return _NOT_OK, _doomed_by(dependency.kind, parent, states)
    if all(part != _PENDING for part in parts.values()):
        return _OK, None
    return _PENDING, None


def _doomed_by(kind: Kind, parent: str, states: Mapping[str, JobState | None]) -> str:
    if kind is Kind.AFTERNOTOK:
        return f"dependency never satisfied: {parent} completed ({kind})"
    if parent in states and states[parent] is None:
        ended = "is no longer in the queue's records"
    else:
        state = states.get(parent)
        ended = f"ended {state}" if state is not None else "will never run (its own dependency)"
    return f"dependency never satisfied: {parent} {ended} ({kind})"


def waiting_on(
    dependency: Dependency,
    states: Mapping[str, JobState | None],
    out_of_line: Collection[str] = (),
) -> WaitingFor:
    """Why a dependent job waits: its parents that have not ended yet (``out_of_line``:
    parents themselves out of line), and their states."""
    unmet = [
        p
        for p in dependency.parents
        if p in out_of_line or (states.get(p) is not None and not states[p].is_finished)
    ]
    shown = ", ".join(
        f"{p} ({'waiting for its own parents' if p in out_of_line else states[p]})"
        for p in unmet[:MAX_NAMED]
    )
    more = f" and {len(unmet) - MAX_NAMED} more" if len(unmet) > MAX_NAMED else ""
    message = f"waits for {shown}{more} to end ({dependency.kind})"
    return WaitingFor(Reason.DEPENDENCY, message, tuple(unmet))
