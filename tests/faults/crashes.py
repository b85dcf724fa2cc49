"""Kill each scenario's invocation at each of its calls in turn, then let the retries and
the sweep run, and check the invariants."""

from __future__ import annotations

from dataclasses import dataclass

from tests.faults.crash_points import CrashPoint, Site
from tests.faults.scenarios import SCENARIOS, Scenario

NEVER = (-1, "never")  # a kill that never happens: the invocation is only watched
WHENS = ("before", "after")


@dataclass(frozen=True)
class Crash:
    """One run: where the invocation died, and what the queue did after."""

    scenario: str
    index: int
    point: CrashPoint
    violations: tuple[str, ...]
    recovery_s: float
    faults: dict

    def __str__(self) -> str:
        found = "; ".join(self.violations)
        return f"{self.scenario}, killed {self.point} (call {self.index}): {found}"


def calls_of(scenario: Scenario) -> list[Site]:
    """The calls the scenario's invocation makes when nothing fails."""
    world = scenario.world()
    try:
        scenario.act(world, NEVER)
        return list(world.targeted.calls)
    finally:
        world.close()


def crash(scenario: Scenario, index: int, when: str, expected: Site) -> Crash:
    """Run the scenario with its invocation killed ``when`` its call ``index`` is made."""
    world = scenario.world()
    try:
        scenario.act(world, (index, when))
        died = world.targeted.died_at
        violations = []
        if died != CrashPoint(expected, when):
            violations.append(f"the run was not repeatable: it died at {died}")
        recovery = world.calm()
        violations += world.violations
        return Crash(
            scenario.name,
            index,
            CrashPoint(expected, when),
            tuple(violations),
            recovery,
            dict(world.wire.injected),
        )
    finally:
        world.close()


def plan(scenarios=SCENARIOS, every: bool = False) -> list[tuple[Scenario, int, str, Site]]:
    """Where to kill: every call of every scenario (``every``), or each distinct crash point
    once, at the first scenario that reaches it."""
    chosen, seen = [], set()
    for scenario in scenarios:
        for index, site in enumerate(calls_of(scenario)):
            for when in WHENS:
                point = CrashPoint(site, when)
                if every or point not in seen:
                    seen.add(point)
                    chosen.append((scenario, index, when, site))
    return chosen


def run(scenarios=SCENARIOS, every: bool = False) -> list[Crash]:
    return [crash(*where) for where in plan(scenarios, every)]
