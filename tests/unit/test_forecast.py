"""Expected start times: the queue played forward on the scheduler's own pass. Each row is a
queue worked out by hand (two ml.p5.48xlarge, no provisioning allowance, times in hours
from now) and when its waiting jobs start at the latest and likely."""

from dataclasses import dataclass, field

import pytest

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, WaitingJob, queue_order
from job_queue.scheduler.dependencies import Dependency
from job_queue.scheduler.forecast import (
    OVERDUE_S,
    STOP_S,
    OutOfLine,
    RunHistory,
    expected_starts,
    within_horizon,
)
from job_queue.scheduler.snapshot import Snapshot, WarmPool

P5, G5 = "ml.p5.48xlarge", "ml.g5.xlarge"
NOW = 1_000_000.0
H = 3600.0
POLICY = Policy(start_allowance_s=0)


def running(name, started_h, max_h, priority=0, instances=1, seq=0):
    max_runtime = None if max_h is None else max_h * H
    return ActiveJob(
        name, priority, seq, {P5: instances}, JobState.RUNNING, NOW + started_h * H, max_runtime
    )


def waiting(name, seq, max_h=1, priority=0, instances=1, **kwargs):
    max_runtime = None if max_h is None else max_h * H
    return WaitingJob(name, priority, seq, {P5: instances}, max_runtime=max_runtime, **kwargs)


@dataclass
class Scenario:
    title: str
    active: list
    waiting: list
    at_latest: dict  # job -> hours from now (None: no bound)
    likely: dict | None = None  # job -> hours from now; default: as at_latest
    history: dict = field(default_factory=dict)  # (priority) -> (runs, hours in total)
    capacity: int = 2
    pools: list = field(default_factory=list)


SCENARIOS = [
    Scenario(
        "nothing runs: the first jobs start now, the next when one of them is bound to end",
        active=[],
        waiting=[waiting("a", 1, max_h=2), waiting("b", 2, max_h=3), waiting("c", 3)],
        at_latest={"a": 0, "b": 0, "c": 2},
    ),
    Scenario(
        "first come, first served: each job starts as a running one reaches its bound",
        active=[running("r1", -1, 2), running("r2", 0, 2)],
        waiting=[waiting("a", 1), waiting("b", 2)],
        at_latest={"a": 1, "b": 2},
    ),
    Scenario(
        "a job that needs both instances waits for both; the one behind it waits for it",
        active=[running("r1", -1, 2), running("r2", 0, 2)],
        waiting=[waiting("a", 1), waiting("big", 2, instances=2), waiting("c", 3, max_h=0.5)],
        at_latest={"a": 1, "big": 2, "c": 3},
    ),
    Scenario(
        "a small job backfills ahead of a big one when it ends before the big one could start",
        active=[running("r1", -1, 2), running("r2", 0, 3)],
        waiting=[waiting("big", 1, instances=2), waiting("small", 2, max_h=0.5)],
        at_latest={"big": 3, "small": 1},
    ),
    Scenario(
        "a higher priority starts once the job it preempts has stopped; the victim resumes "
        "first, in its place in line, and the next job when the urgent one ends",
        active=[running("r1", -1, 2), running("r2", 0, 2)],
        waiting=[waiting("urgent", 2, priority=5), waiting("a", 1)],
        at_latest={"urgent": STOP_S / H, "a": 1 + STOP_S / H},
    ),
    Scenario(
        "behind a job without a MaxRuntimeInSeconds there is no bound, but a likely time",
        active=[running("r1", -1, None)],
        waiting=[waiting("a", 1)],
        capacity=1,
        history={0: (1, 2)},
        at_latest={"a": None},
        likely={"a": 1},
    ),
    Scenario(
        "likely: jobs run as long as the queue's completed jobs of their kind did",
        active=[running("r1", -1, 10), running("r2", 0, 10)],
        waiting=[waiting("a", 1, max_h=10), waiting("b", 2, max_h=10)],
        history={0: (2, 6)},  # 3 hours each
        at_latest={"a": 9, "b": 10},
        likely={"a": 2, "b": 3},
    ),
    Scenario(
        "a job already past its usual run time is expected to end by the next sweep",
        active=[running("r1", -5, 10)],
        waiting=[waiting("a", 1, max_h=10)],
        capacity=1,
        history={0: (1, 3)},
        at_latest={"a": 5},
        likely={"a": OVERDUE_S / H},
    ),
    Scenario(
        "a job backing off after a refused start starts when its retry is due",
        active=[],
        waiting=[waiting("a", 1, not_before=NOW + 0.25 * H)],
        at_latest={"a": 0.25},
    ),
    Scenario(
        "a job matching an idle warm pool starts on it now",
        active=[running("r1", -1, 2)],
        waiting=[waiting("a", 1, warm_key="cfg")],
        pools=[WarmPool("old-1", "old", {P5: 1}, "cfg", NOW - 60, NOW + H)],
        at_latest={"a": 0},
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.title)
def test_expected_start(scenario: Scenario):
    history = RunHistory({(P5, p): (n, hours * H) for p, (n, hours) in scenario.history.items()})
    queue = sorted(scenario.waiting, key=queue_order)
    seen = Snapshot(NOW, {P5: scenario.capacity}, scenario.active, scenario.pools)
    expected = expected_starts(seen, queue, history, POLICY)

    def seconds(at):  # from now
        return None if at is None else round(at - NOW, 1)

    def hours(wanted):
        return {n: None if h is None else round(h * H, 1) for n, h in wanted.items()}

    assert {n: seconds(e.at_latest) for n, e in expected.items()} == hours(scenario.at_latest)
    likely = scenario.likely or scenario.at_latest
    assert {n: seconds(e.likely) for n, e in expected.items()} == hours(likely)
    runs = sum(n for n, _ in scenario.history.values())
    assert {e.based_on for e in expected.values()} == {runs}


def test_a_job_stuck_behind_one_that_never_ends_has_no_estimate():
    """No bound and no history: the replay cannot say when the running job ends."""
    seen = Snapshot(NOW, {P5: 1}, [running("r1", -1, None)])
    expected = expected_starts(seen, [waiting("a", 1)], RunHistory({}), POLICY)
    assert expected == {}


def test_jobs_of_another_type_do_not_wait_for_this_one():
    other = WaitingJob("g", 0, 3, {G5: 1}, max_runtime=H)
    queue = [waiting("a", 1), waiting("b", 2), other]
    seen = Snapshot(NOW, {P5: 1, G5: 1}, [running("r1", -1, 2)])
    expected = expected_starts(seen, queue, RunHistory({}), POLICY)
    assert expected["g"].at_latest == NOW
    assert expected["b"].at_latest == NOW + 2 * H


def test_likely_never_later_than_at_the_latest():
    """Jobs of the kind ran longer than this one's bound allows (another MaxRuntime)."""
    history = RunHistory({(P5, 0): (1, 8 * H)})
    seen = Snapshot(NOW, {P5: 1}, [running("r1", 0, 2)])
    expected = expected_starts(seen, [waiting("a", 1)], history, POLICY)
    assert expected["a"].likely == expected["a"].at_latest == NOW + 2 * H


def test_the_replay_plays_only_the_first_jobs_of_each_type():
    queue = [waiting(f"p{n}", n) for n in range(5)]
    queue += [WaitingJob(f"g{n}", 0, 10 + n, {G5: 1}) for n in range(3)]
    kept = within_horizon(queue, horizon=2)
    assert [j.name for j in kept] == ["p0", "p1", "g0", "g1"]


def test_a_job_read_waiting_that_the_snapshot_holds_as_running_is_played_once():
    """The queue was read after an overlapping pass preempted ``x``: the replay plays it as
    the snapshot saw it, running to its bound, and then from the queue."""
    seen = Snapshot(NOW, {P5: 2}, [running("x", 0, 1)])
    queue = [waiting("x", 1, state=JobState.PREEMPTED), waiting("y", 2, instances=2)]
    expected = expected_starts(seen, queue, RunHistory({}), POLICY)
    assert expected["x"].at_latest == NOW + H
    assert expected["y"].at_latest == NOW + 2 * H


def test_a_job_read_waiting_that_the_snapshot_holds_as_stopping_is_played_once():
    """The queue was read after ``x``'s preemption was requeued, the snapshot before: when its
    stop ends in the replay, it goes back in line once, not beside its copy from the queue."""
    stopping = ActiveJob("x", 0, 1, {P5: 1}, JobState.PREEMPTING, NOW - H, H)
    seen = Snapshot(NOW, {P5: 4}, [stopping])
    queue = [
        waiting("x", 1, state=JobState.PREEMPTED),
        waiting("y", 2, instances=2),
        waiting("all", 3, instances=4),
    ]
    expected = expected_starts(seen, queue, RunHistory({}), POLICY)
    assert expected["y"].at_latest == NOW
    assert expected["x"].at_latest == NOW + STOP_S
    assert expected["all"].at_latest == NOW + STOP_S + H  # once x's one attempt ends


def out_of_line(*jobs, **states):
    """Jobs out of line for their dependency (job, depends-on text), and parents' states."""
    entries = [(job, Dependency.parse(text)) for job, text in jobs]
    return OutOfLine(entries, {name: JobState(state) for name, state in states.items()})


@pytest.mark.parametrize(
    ("title", "active", "queue", "dependents", "at_latest"),
    [
        (
            "a chain of three: each link starts when the one before is bound to end",
            [running("train", 0, 2)],
            [],
            out_of_line(
                (waiting("evaluate", 2), "afterok:train"),
                (waiting("export", 3), "afterok:evaluate"),
            ),
            {"evaluate": 2, "export": 3},
        ),
        (
            "a child waits for its parent even with an instance free, and not behind later jobs",
            [running("train", 0, 2)],
            [waiting("later", 5, max_h=4)],
            out_of_line((waiting("evaluate", 2), "afterok:train")),
            {"later": 0, "evaluate": 2},
        ),
        (
            "fan-in: the merge starts once the last parent is bound to end",
            [running("short", 0, 1), running("long", 0, 3)],
            [],
            out_of_line((waiting("merge", 3), "afterok:short,long")),
            {"merge": 3},
        ),
        (
            "a parent that waits in line: the child starts after it has run",
            [running("r1", 0, 1), running("r2", 0, 1)],
            [waiting("train", 1, max_h=2)],
            out_of_line((waiting("evaluate", 2), "afterok:train")),
            {"train": 1, "evaluate": 3},
        ),
        (
            "a failed parent: the afterok child never starts, the afternotok one at once",
            [],
            [],
            out_of_line(
                (waiting("evaluate", 2), "afterok:train"),
                (waiting("cleanup", 3), "afternotok:train"),
                train="failed",
            ),
            {"cleanup": 0},
        ),
    ],
)
def test_expected_start_of_jobs_that_wait_for_others(title, active, queue, dependents, at_latest):
    seen = Snapshot(NOW, {P5: 2}, active)
    expected = expected_starts(seen, queue, RunHistory({}), POLICY, dependents)
    starts = {name: (e.at_latest - NOW) / H for name, e in expected.items()}
    assert starts == at_latest, title
