"""One queue under faults, on a virtual clock: the real handler, the real store on moto and
the emulated SageMaker (a :class:`~tjq.local.cloud.LocalCloud`), with a :class:`Wire`
between the handler and AWS; EventBridge that may drop, duplicate and delay (so reorder)
SageMaker's events; Lambda's two retries of a failed event; users who ask again when the
API does not answer; the sweep every minute. The invariants are checked after every step.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
from dataclasses import dataclass, field, replace

from tjq.local.calls import DEFAULT_CALLER, api_event
from tjq.local.clock import SimClock
from tjq.local.cloud import LambdaContext, LocalCloud

from job_queue.handler import SCHEDULED, handle
from job_queue.store import DynamoJobStore
from tests.faults import invariants
from tests.faults.crash_points import universe
from tests.faults.wire import Invocation, LambdaDied, Turns, Wire

SWEEP_S = 60.0  # the template's schedule: rate(1 minute)
ASYNC_RETRY_DELAYS_S = (60.0, 120.0)  # Lambda retries a failed asynchronous invocation twice
ASK_AGAIN_S = 30.0  # a user whose request got no answer asks again this much later
SWEEP = {"detail-type": SCHEDULED, "source": "aws.events", "detail": {}}
Kill = tuple[int | str, str] | None  # where the invocation dies: a call (or site), when


@dataclass(frozen=True)
class EventFaults:
    """What EventBridge does to SageMaker's events on their way to the Lambda."""

    drop: float = 0.0  # chance an event is lost
    duplicate: float = 0.0  # chance it is delivered twice
    delay_s: float = 0.0  # each delivery is late by up to this (later events may pass it)


@dataclass(order=True)
class _Delivery:
    due: float
    order: int
    event: dict = field(compare=False)
    attempt: int = field(default=0, compare=False)


class World:
    """The queue, AWS, its users and EventBridge, stepped on one virtual clock.

    Example::

        world = World(seed=1)
        world.submit("a")
        world.run_for(3600)
        world.calm()
        assert world.violations == []
    """

    def __init__(
        self,
        seed: int = 0,
        capacity: dict | None = None,
        *,
        events: EventFaults = EventFaults(),
        skew_s: float = 0.0,
        strict_order: bool = True,
        **cloud_options,
    ) -> None:
        """``strict_order``: the first job in line of a type starts as soon as it fits (no
        shares, plans or backfill bend that), so idle capacity beside it is a violation."""
        self.rng = random.Random(seed)
        self.clock = SimClock()
        self.wire = Wire(universe(), self.clock)
        # Short jobs: a crash's aftermath plays out in a few virtual minutes.
        options = {"stop_seconds": 30.0, "run_seconds": 300.0} | cloud_options
        self.cloud = LocalCloud(
            capacity or {"ml.p5.48xlarge": 2},
            clock=self.clock,
            wrap_client=self.wire.wrap,
            **options,
        ).__enter__()
        self.capacity = dict(self.cloud.settings.capacity)
        # Only the queue keeps the cap: the account would let SageMaker start more.
        self.cloud.sagemaker.account_limits = dict.fromkeys(self.capacity, 1000)
        settings = self.cloud.settings
        self.store = DynamoJobStore(
            self.cloud.dynamodb, settings.table_name, fair_share=settings.policy.fair_share
        )
        self.event_faults = events
        self.skew_s = skew_s
        self.max_skew_s = skew_s  # what the ledger's times may be off by, at most
        self.strict_order = strict_order
        self.names: set[str] = set()  # every job a user submitted, answered or not
        self.accepted: set[str] = set()  # submissions the API answered 200 or 201
        self.cancelled: set[str] = set()  # cancels it answered 200
        self.violations: list[str] = []
        self._seen: set[str] = set()
        self.invocations = 0
        self.kill_chance = 0.0  # an invocation dies at a random call of its first 40
        self.targeted: Invocation | None = None  # the last invocation told where to die
        self._deliveries: list[_Delivery] = []
        self._order = itertools.count()
        self.next_sweep = self.clock() + SWEEP_S
        self.sweeping = True  # the schedule's rule is enabled
        self._lose: list = []  # events EventBridge is to lose (predicates, each once)
        self._hold = None  # an event to hand back undelivered (a predicate), and the event
        self._held: dict | None = None

    def close(self) -> None:
        self.cloud.__exit__(None, None, None)

    # -- invocations -------------------------------------------------------------------------

    def invoke(self, event: dict, label: str, kill: Kill = None) -> Invocation:
        """One invocation of the handler (killed at ``kill``, if given); the invariants are
        checked after it."""
        if kill is None and self.kill_chance and self.rng.random() < self.kill_chance:
            kill = (self.rng.randrange(40), self.rng.choice(("before", "after")))
        invocation = Invocation(label, kill)
        if kill is not None:
            self.targeted = invocation
        self._run(invocation, event)
        self.check(f"after {label}")
        return invocation

    def overlapping(self, events: list[tuple[dict, str]]) -> list[Invocation]:
        """Invocations at once (as under reserved concurrency), taking turns at their AWS
        calls in an order this world's generator picks."""
        invocations = [Invocation(label) for _, label in events]
        self.wire.turns = Turns(self.rng, invocations)
        threads = [
            threading.Thread(target=self._run, args=(invocation, event))
            for invocation, (event, _) in zip(invocations, events, strict=True)
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            self.wire.turns = None
        self.check("after overlapping invocations")
        return invocations

    def _run(self, invocation: Invocation, event: dict) -> None:
        skew = self.rng.uniform(-self.skew_s, self.skew_s) if self.skew_s else 0.0
        deps = replace(self.cloud.deps, clock=lambda: self.clock() + skew)
        self.invocations += 1
        with self.wire.invoking(invocation):
            try:
                invocation.result = handle(event, LambdaContext(), deps)
            except LambdaDied:
                pass  # the Lambda is gone: nobody hears from it again
            except Exception as exc:  # an invocation error: Lambda's retries, or a 502
                invocation.error = exc

    # -- users -------------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        caller: str = DEFAULT_CALLER,
        kill: Kill = None,
        asks: int = 4,
    ) -> tuple[int, dict] | None:
        """A user's request, asked again while the API does not answer (a 5xx, or nothing);
        its answer, or None if it never got one."""
        event = api_event(method, path, None if body is None else json.dumps(body), None, caller)
        for ask in range(asks):
            invocation = self.invoke(event, f"{method} {path}", kill if ask == 0 else None)
            answer = invocation.result
            if isinstance(answer, dict) and answer["statusCode"] < 500:
                status, answered = answer["statusCode"], json.loads(answer["body"] or "null")
                self._note_answer(method, path, status)
                return status, answered
            self.run_for(ASK_AGAIN_S)
        return None

    def _note_answer(self, method: str, path: str, status: int) -> None:
        if method == "POST" and path == "/add-job" and status in (200, 201):
            return  # noted by submit, which knows the name
        if method == "DELETE" and status == 200:
            self.cancelled.add(path.rsplit("/", 1)[-1])

    def submit(self, request: dict, **options) -> tuple[int, dict] | None:
        self.names.add(request["TrainingJobName"])
        answer = self.request("POST", "/add-job", request, **options)
        if answer is not None and answer[0] in (200, 201):
            self.accepted.add(request["TrainingJobName"])
        return answer

    # -- time, EventBridge, the sweep --------------------------------------------------------

    def run_for(self, seconds: float) -> None:
        self.run_until(self.clock() + seconds)

    def run_until(self, target: float) -> None:
        """Let virtual time pass: SageMaker moves its jobs on, EventBridge delivers (or
        not) its events, the sweep runs every minute."""
        sagemaker = self.cloud.sagemaker
        for _ in range(1_000_000):
            now = self.clock()
            sagemaker.run_until(now)
            self._take_events(now)
            if self._hold and self._held is not None:
                return  # hold_event's moment
            if self._deliver_due(now):
                continue
            if self.next_sweep <= now:
                self.next_sweep += SWEEP_S
                if self.sweeping:
                    self.invoke(SWEEP, "sweep")
                continue
            change = sagemaker.next_change_at()
            upcoming = [target, self.next_sweep]
            upcoming += [change] if change is not None and change > now else []
            upcoming += [self._deliveries[0].due] if self._deliveries else []
            then = min(upcoming)
            if then <= now:
                return
            self.clock.set(then)
        raise AssertionError("the world did not reach its target time")

    def _take_events(self, now: float) -> None:
        faults, sagemaker = self.event_faults, self.cloud.sagemaker
        while sagemaker.events:
            event = sagemaker.events.popleft()
            if not self.cloud.matches(event):
                continue
            if self._hold and self._held is None and self._hold(event):
                self._held = event
                continue
            lost = next((wanted for wanted in self._lose if wanted(event)), None)
            if lost is not None:
                self._lose.remove(lost)
                continue
            if faults.drop and self.rng.random() < faults.drop:
                self.wire.injected["event dropped"] += 1
                continue
            copies = 2 if faults.duplicate and self.rng.random() < faults.duplicate else 1
            self.wire.injected["event duplicated"] += copies - 1
            for _ in range(copies):
                late = self.rng.uniform(0, faults.delay_s) if faults.delay_s else 0.0
                self.wire.injected["event delayed"] += late > 0
                self._schedule(_Delivery(now + late, next(self._order), event))

    def _schedule(self, delivery: _Delivery) -> None:
        self._deliveries.append(delivery)
        self._deliveries.sort()

    def _deliver_due(self, now: float) -> bool:
        if not self._deliveries or self._deliveries[0].due > now:
            return False
        delivery = self._deliveries.pop(0)
        self.deliver(delivery.event, delivery.attempt)
        return True

    def deliver(
        self, event: dict, attempt: int = 0, kill: Kill = None, retries: bool = True
    ) -> Invocation:
        """Invoke the handler with a SageMaker event; if the invocation fails or dies,
        Lambda retries it (twice, a minute and then two later), unless ``retries`` is off."""
        name = (event.get("detail") or {}).get("TrainingJobName")
        invocation = self.invoke(event, f"event {name}", kill)
        failed = invocation.error is not None or invocation.died_at is not None
        if failed and retries and attempt < len(ASYNC_RETRY_DELAYS_S):
            due = self.clock() + ASYNC_RETRY_DELAYS_S[attempt]
            self._schedule(_Delivery(due, next(self._order), event, attempt + 1))
        return invocation

    def pending_deliveries(self) -> int:
        return len(self._deliveries)

    def sweep(self, kill: Kill = None) -> Invocation:
        """The scheduled sweep, now (the next one is still a minute away)."""
        return self.invoke(SWEEP, "sweep", kill)

    def lose_events(self, wanted) -> None:
        """EventBridge loses the next event ``wanted(event)`` accepts."""
        self._lose.append(wanted)

    def hold_event(self, wanted, within_s: float = 86400) -> dict:
        """Run until SageMaker sends an event ``wanted(event)`` accepts, and hand it back
        undelivered (the others are delivered as usual), at the moment it was sent."""
        self._hold, self._held = wanted, None
        try:
            self.run_for(within_s)  # stops at the event
            if self._held is None:
                raise AssertionError("SageMaker sent no such event")
            return self._held
        finally:
            self._hold = None

    # -- the end of the faults ---------------------------------------------------------------

    def calm(self, deadline_s: float = 12 * 3600) -> float:
        """No more faults: run until every job has ended; how long after the calm began the
        queue was first settled (consistent with SageMaker, and no idle capacity while a
        job that fits waits). The end's invariants are checked."""
        self.wire.outages.clear()
        self.sweeping = True  # a scenario may have paused the schedule; calm restores it
        self.kill_chance = 0.0
        self.event_faults = EventFaults()
        self.skew_s = 0.0
        calm_at = self.clock()
        settled_at = None
        while self.clock() < calm_at + deadline_s:
            if settled_at is None and not invariants.unsettled(self):
                settled_at = self.clock()
            if settled_at is not None and invariants.all_ended(self):
                break
            self.run_for(SWEEP_S / 2)
        self.violations += invariants.at_the_end(self)
        if settled_at is None:
            self.violations.append(f"never settled in {deadline_s:g} s of calm")
            return deadline_s
        return settled_at - calm_at

    def check(self, when: str) -> None:
        for violation in invariants.every_step(self):
            if violation not in self._seen:  # each once, where it was first seen
                self._seen.add(violation)
                self.violations.append(f"{when}: {violation}")
