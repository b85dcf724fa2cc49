"""The one victim search of the pass, as scenarios; and the single queue pinned to a quota
share where their rules coincide (one share that preempts within itself is a single queue)."""

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from job_queue.models import JobState
from job_queue.scheduler import (
    ActiveJob,
    Policy,
    Share,
    ShareLedger,
    Strategy,
    WaitingJob,
    plan,
)
from job_queue.scheduler.order import preemption_candidates
from job_queue.scheduler.room import Room
from job_queue.scheduler.snapshot import Snapshot
from job_queue.scheduler.victims import choose_victims

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
NOW = 10_000.0


def running(name, priority=0, instances=1, itype=P5, started=0.0, demand=None):
    return ActiveJob(
        name=name,
        priority=priority,
        seq=len(name),
        demand=demand or {itype: instances},
        state=JobState.RUNNING,
        started_at=started,
    )


@dataclass
class Search:
    title: str
    candidates: list  # any order: the search gets them in preemption order
    missing: dict
    victims: list | None
    notes: dict = field(default_factory=dict)


SEARCHES = [
    Search(
        "the lowest priority is stopped first",
        [running("mid", 2), running("low", 1)],
        {P5: 1},
        ["low"],
    ),
    Search(
        "among equal priorities, the most recently started",
        [running("old", 1, started=1), running("new", 1, started=9)],
        {P5: 1},
        ["new"],
    ),
    Search(
        "only as many victims as the missing instances",
        [running(n, 1, started=i) for i, n in enumerate("abcd")],
        {P5: 2},
        ["d", "c"],
    ),
    Search(
        "a small victim taken first is released once a large one covers the need",
        [running("small", 1, 1, started=9), running("large", 2, 2, started=1)],
        {P5: 2},
        ["large"],
    ),
    Search(
        "a job holding none of the missing type is never a victim",
        [running("g5-low", 0, itype=G5), running("p5-mid", 1)],
        {P5: 1},
        ["p5-mid"],
    ),
    Search(
        "a need across two types takes a victim of each",
        [running("g5", 0, itype=G5), running("p5", 0, itype=P5, started=5)],
        {P5: 1, G5: 1},
        ["p5", "g5"],
    ),
    Search(
        "not enough even with every candidate: nobody is stopped",
        [running("a", 0), running("b", 0)],
        {P5: 3},
        None,
    ),
    Search("nothing missing: no victims to choose", [running("a", 0)], {P5: 0}, None),
]


@pytest.mark.parametrize("s", SEARCHES, ids=[s.title for s in SEARCHES])
def test_victim_search(s: Search):
    candidates = preemption_candidates(s.candidates, NOW, min_run_s=0)
    # Nothing free, and a quota that allows anything: the instances alone decide.
    team = Share("team", {t: 99 for t in s.missing}, Strategy.RESERVE)
    ledger = ShareLedger([team], s.candidates, default="team")
    nothing_free = dict.fromkeys(s.missing, 0)
    room = Room(ledger, team, s.missing, nothing_free, [], lambda ledger, job: True)
    found = choose_victims(candidates, room)
    assert (None if found is None else [v.name for v in found]) == s.victims
    if found is not None:
        assert room.enough(), "the room counts the victims returned"


# -- the two passes agree where their rules coincide ------------------------------------------

CAPACITY = 6
jobs = st.lists(
    st.tuples(st.integers(0, 3), st.integers(1, 3), st.sampled_from(["running", "stopping"])),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(jobs, st.integers(0, 4), st.integers(1, 4), st.sampled_from([0.0, 50.0]))
def test_one_share_preempting_within_itself_chooses_the_single_queues_victims(
    active, priority, instances, min_run
):
    held, running_jobs = 0, []
    for i, (job_priority, count, state) in enumerate(active):
        if held + count > CAPACITY:
            break
        held += count
        running_jobs.append(
            ActiveJob(
                f"r{i}",
                job_priority,
                i,
                {P5: count},
                JobState.RUNNING if state == "running" else JobState.PREEMPTING,
                started_at=NOW - 10 * (i + 1),
                share="team",
            )
        )
    preemptor = WaitingJob("new", priority, 100, {P5: instances}, share="team")
    policy = Policy(min_run_s=min_run)
    share = Share("team", {P5: CAPACITY}, Strategy.LEND, in_share_preemption=True)

    single = plan(Snapshot(NOW, {P5: CAPACITY}, running_jobs), [preemptor], policy)
    seen = Snapshot(NOW, {P5: CAPACITY}, running_jobs, shares=(share,))
    shared = plan(seen, [preemptor], policy)

    assert [p.victim.name for p in shared.preemptions] == [
        p.victim.name for p in single.preemptions
    ]
    assert [j.name for j in shared.starts] == [j.name for j in single.starts]
