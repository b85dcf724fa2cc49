"""The faulty network between the Lambda and AWS: a client wrapper that can kill the
invocation just before or just after any call, refuse calls during an outage, and let
overlapping invocations take turns at their calls, in an order a seeded generator picks."""

from __future__ import annotations

import contextlib
import random
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field

from botocore.exceptions import ClientError

from tests.faults.crash_points import CrashPoint, Site, Universe, operations


class LambdaDied(BaseException):
    """The invocation was killed (its timeout, a lost container): nothing after the point
    runs, not even ``finally`` blocks' calls. A BaseException, so no ``except Exception`` of
    the queue's code can catch it, as none could catch a process that is gone."""

    def __init__(self, point: CrashPoint) -> None:
        super().__init__(str(point))
        self.point = point


# What AWS answers when it refuses a call during an outage (after botocore's own retries).
_REFUSALS = {
    "dynamodb": ("InternalServerError", 500, "Internal server error"),
    "sagemaker": ("ThrottlingException", 400, "Rate exceeded"),
    "events": ("InternalException", 500, "Internal error"),
}


@dataclass(frozen=True)
class Outage:
    """``service`` refuses every call (of ``only`` operations, if given) from ``start`` to
    ``end`` (virtual seconds)."""

    service: str
    start: float
    end: float
    only: frozenset[str] = frozenset()
    code: str | None = None  # what it answers (None: the service's usual refusal)

    @property
    def kind(self) -> str:
        what = ", ".join(sorted(self.only)) if self.only else "all calls"
        return f"{self.service} outage ({what})"

    def refuses(self, service: str, operation: str, now: float) -> bool:
        return (
            service == self.service
            and self.start <= now < self.end
            and (not self.only or operation in self.only)
        )

    def error(self, operation: str) -> ClientError:
        code, status, message = _REFUSALS[self.service]
        code = self.code or code
        response = {"Error": {"Code": code, "Message": message}}
        response["ResponseMetadata"] = {"HTTPStatusCode": status}
        return ClientError(response, operation)


@dataclass
class Invocation:
    """One Lambda invocation as the wire sees it: the calls it made, and where it is to die
    (``kill``: the index of a call, or the first call of a site whose function ends with
    this name, and "before" or "after"; None: it lives)."""

    label: str
    kill: tuple[int | str, str] | None = None
    calls: list[Site] = field(default_factory=list)
    died_at: CrashPoint | None = None
    result: object = None  # what the handler returned
    error: Exception | None = None  # what it raised (an invocation error)


class Turns:
    """Overlapping invocations take turns at their AWS calls: at each call, a seeded
    generator picks which of the running invocations goes on, so an interleaving is
    reproducible from its seed (the code between two calls runs alone)."""

    def __init__(self, rng: random.Random, invocations: list[Invocation]) -> None:
        self._rng = rng
        self._ready = threading.Condition()
        self._running = list(invocations)
        self._turn: Invocation | None = rng.choice(self._running)

    def join(self, invocation: Invocation) -> None:
        with self._ready:
            self._ready.wait_for(lambda: self._turn is invocation)

    def switch(self, invocation: Invocation) -> None:
        """At a call of ``invocation``: let the generator pick who goes on, and wait."""
        with self._ready:
            self._turn = self._rng.choice(self._running)
            self._ready.notify_all()
            self._ready.wait_for(lambda: self._turn is invocation)

    def leave(self, invocation: Invocation) -> None:
        with self._ready:
            self._running.remove(invocation)
            self._turn = self._rng.choice(self._running) if self._running else None
            self._ready.notify_all()


class Wire:
    """Stands between the handler and its AWS clients (``LocalCloud(wrap_client=wire.wrap)``).

    Calls made outside :meth:`invoking` (the harness's own reads) pass untouched."""

    def __init__(self, universe: Universe, clock) -> None:
        self.universe = universe
        self.clock = clock
        self.outages: list[Outage] = []
        self.injected: Counter[str] = Counter()  # faults injected, by kind
        self.crossed: set[CrashPoint] = set()  # points some invocation passed through
        self.turns: Turns | None = None
        self._local = threading.local()

    def wrap(self, service: str, client):
        return _FaultyClient(self, service, client)

    @contextlib.contextmanager
    def invoking(self, invocation: Invocation):
        self._local.invocation = invocation
        if self.turns:
            self.turns.join(invocation)
        try:
            yield invocation
        finally:
            self._local.invocation = None
            if self.turns:
                self.turns.leave(invocation)

    def call(self, service: str, operation: str, method, params: dict):
        invocation: Invocation | None = getattr(self._local, "invocation", None)
        if invocation is None:
            return method(**params)
        site = self.universe.site_of(operation, sys._getframe(2))
        if invocation.died_at is not None:
            raise LambdaDied(invocation.died_at)  # a dead invocation makes no more calls
        index = len(invocation.calls)
        invocation.calls.append(site)
        if self.turns:
            self.turns.switch(invocation)
        self.crossed.add(CrashPoint(site, "before"))
        if _kills(invocation.kill, index, site, "before"):
            self._die(invocation, CrashPoint(site, "before"))
        try:
            return self._answer(service, operation, method, params)
        finally:
            # Just after the call, whatever it answered (an error too): the answer is lost.
            self.crossed.add(CrashPoint(site, "after"))
            if _kills(invocation.kill, index, site, "after"):
                self._die(invocation, CrashPoint(site, "after"))

    def _answer(self, service: str, operation: str, method, params: dict):
        now = self.clock()
        for outage in self.outages:
            if outage.refuses(service, operation, now):
                self.injected[outage.kind] += 1
                raise outage.error(_operation_name(operation))
        return method(**params)

    def _die(self, invocation: Invocation, point: CrashPoint) -> None:
        invocation.died_at = point
        self.injected["invocation killed"] += 1
        raise LambdaDied(point)


def _kills(kill: tuple[int | str, str] | None, index: int, site: Site, when: str) -> bool:
    if kill is None or kill[1] != when:
        return False
    at = kill[0]
    return at == index if isinstance(at, int) else site.function.endswith(at)


def _operation_name(snake: str) -> str:
    return "".join(part.title() for part in snake.split("_"))


class _FaultyClient:
    def __init__(self, wire: Wire, service: str, client) -> None:
        self._wire, self._service, self._client = wire, service, client

    def __getattr__(self, name: str):
        method = getattr(self._client, name)
        if name not in operations():
            return method  # exceptions, meta

        def call(**params):
            return self._wire.call(self._service, name, method, params)

        return call
