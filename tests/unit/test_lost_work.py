"""Victims chosen by the work they would lose: what each way of checkpointing loses, and who is
preempted first — within a priority, the job that would lose least; priority always first."""

from dataclasses import dataclass

import pytest

from job_queue.models import Checkpointing, JobState
from job_queue.scheduler import ActiveJob, LostWork, Policy, Share, Strategy, WaitingJob, plan
from job_queue.scheduler.order import lost_work
from job_queue.scheduler.snapshot import Snapshot

P5 = "ml.p5.48xlarge"
NOW = 100_000.0
ON_STOP = Checkpointing()
HOURLY = Checkpointing(3600)
DEFAULT = Policy()


def running(name, priority=1, started=0.0, checkpoint=None, instances=1, share=None):
    return ActiveJob(
        name=name,
        priority=priority,
        seq=len(name),
        demand={P5: instances},
        state=JobState.RUNNING,
        started_at=NOW - started,  # ``started``: seconds ago
        checkpoint=checkpoint,
        checkpoint_uri=None if checkpoint is None else f"s3://ckpt/{name}/",
        share=share,
    )


@dataclass
class Loss:
    title: str
    job: ActiveJob
    saved_ago: float | None  # its newest checkpoint, seconds ago (None: not read / none)
    lost: float


LOSSES = [
    Loss("a job that saves on stop loses nothing", running("a", 1, 5000, ON_STOP), None, 0),
    Loss("a job that declares nothing loses its whole attempt", running("a", 1, 5000), None, 5000),
    Loss(
        "an interval job loses the time since its newest checkpoint",
        running("a", 1, 5000, HOURLY),
        120,
        120,
    ),
    Loss(
        "an interval job whose newest checkpoint is older than this attempt loses the attempt",
        running("a", 1, 600, HOURLY),
        4000,
        600,
    ),
    Loss(
        "unread, an interval job loses the time since its attempt's last whole interval",
        running("a", 1, 5000, HOURLY),
        None,
        5000 - 3600,
    ),
    Loss(
        "a checkpoint stamped after now (clocks differ) loses nothing, not less",
        running("a", 1, 5000, HOURLY),
        -5,
        0,
    ),
]


@pytest.mark.parametrize("s", LOSSES, ids=[s.title for s in LOSSES])
def test_work_a_preemption_would_throw_away(s: Loss):
    saved = None if s.saved_ago is None else NOW - s.saved_ago
    assert lost_work(s.job, NOW, saved) == s.lost


@dataclass
class Order:
    title: str
    active: list
    preemptor: WaitingJob
    victims: list
    saved_ago: dict | None = None  # newest checkpoint per job, seconds ago
    policy: Policy = DEFAULT


def urgent(instances=1, priority=9):
    return WaitingJob("urgent", priority, 1000, {P5: instances})


ORDERS = [
    Order(
        "the job that saves on stop goes before one that saves nothing",
        [running("none", started=60), running("on-stop", started=5000, checkpoint=ON_STOP)],
        urgent(),
        ["on-stop"],
    ),
    Order(
        "an interval job that just saved goes before one that saves nothing",
        [running("none", started=60), running("hourly", started=5000, checkpoint=HOURLY)],
        urgent(),
        ["hourly"],
        saved_ago={"hourly": 30},
    ),
    Order(
        "an interval job far from its last save is kept before a job that just started",
        [running("fresh", started=60), running("hourly", started=5000, checkpoint=HOURLY)],
        urgent(),
        ["fresh"],
        saved_ago={"hourly": 3000},
    ),
    Order(
        "without a reading, the interval is assumed: 1400 s since the last hourly save",
        [running("older", started=2000), running("hourly", started=5000, checkpoint=HOURLY)],
        urgent(),
        ["hourly"],
    ),
    Order(
        "priority comes first: a lower-priority job is stopped even if it would lose more",
        [running("low", 0, started=9000), running("mid", 1, started=10, checkpoint=ON_STOP)],
        urgent(),
        ["low"],
    ),
    Order(
        "mixed priorities: the lowest priority first, and within it the least lost work",
        [
            running("mid-none", 2, started=60),
            running("low-none", 1, started=100),
            running("low-stop", 1, started=8000, checkpoint=ON_STOP),
            running("low-hourly", 1, started=8000, checkpoint=HOURLY),
        ],
        urgent(instances=3),
        ["low-stop", "low-hourly", "low-none"],
        saved_ago={"low-hourly": 50},
    ),
    Order(
        "two that lose nothing: the most recently started goes first",
        [
            running("stop-old", started=9000, checkpoint=ON_STOP),
            running("stop-new", started=100, checkpoint=ON_STOP),
        ],
        urgent(),
        ["stop-new"],
    ),
    Order(
        "with the rule off, the most recently started goes first whatever it would lose",
        [running("none", started=60), running("on-stop", started=5000, checkpoint=ON_STOP)],
        urgent(),
        ["none"],
        policy=Policy(least_lost_work=False),
    ),
]


@pytest.mark.parametrize("s", ORDERS, ids=[s.title for s in ORDERS])
def test_who_is_preempted_first(s: Order):
    read: list[str] = []

    def saved_at(job):
        read.append(job.name)
        ago = (s.saved_ago or {}).get(job.name)
        return None if ago is None else NOW - ago

    capacity = {P5: sum(job.demand[P5] for job in s.active)}
    seen = Snapshot(NOW, capacity, s.active)
    decided = plan(seen, [s.preemptor], s.policy, LostWork(NOW, saved_at))
    assert [p.victim.name for p in decided.preemptions] == s.victims
    # Only jobs that save at an interval are looked up, each at most once.
    assert sorted(read) == sorted({j.name for j in s.active if j.checkpoint == HOURLY})


def test_each_preemption_says_what_it_throws_away():
    active = [running("none", started=700), running("hourly", started=5000, checkpoint=HOURLY)]
    decided = plan(Snapshot(NOW, {P5: 2}, active), [urgent(instances=2)])
    assert {p.victim.name: p.lost_work_s for p in decided.preemptions} == {
        "none": 700,
        "hourly": 5000 - 3600,
    }


def test_a_pass_that_preempts_nobody_reads_no_checkpoint_times():
    read = []
    active = [running("hourly", started=5000, checkpoint=HOURLY)]
    calm = WaitingJob("calm", 0, 1000, {P5: 1})  # lower priority: waits, preempts nobody

    def saved_at(job):
        read.append(job.name)
        return None

    plan(Snapshot(NOW, {P5: 1}, active), [calm], lost_work=LostWork(NOW, saved_at))
    plan(Snapshot(NOW, {P5: 2}, active), [], lost_work=LostWork(NOW, saved_at))
    assert read == []


def test_quota_shares_choose_victims_by_lost_work_too():
    share = Share("team", {P5: 2}, Strategy.LEND, in_share_preemption=True)
    active = [
        running("none", started=60, share="team"),
        running("on-stop", started=5000, checkpoint=ON_STOP, share="team"),
    ]
    preemptor = WaitingJob("urgent", 9, 1000, {P5: 1}, share="team")
    decided = plan(Snapshot(NOW, {P5: 2}, active, shares=(share,)), [preemptor])
    assert [(p.victim.name, p.lost_work_s) for p in decided.preemptions] == [("on-stop", 0.0)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on-stop", ON_STOP),
        ("ON-STOP", ON_STOP),
        ("1800", Checkpointing(1800)),
        (600, Checkpointing(600)),
    ],
)
def test_a_checkpoint_declaration_is_on_stop_or_seconds(text, expected):
    assert Checkpointing.parse(text) == expected
    assert Checkpointing.parse(str(expected)) == expected


@pytest.mark.parametrize("text", ["", "0", "-5", "1.5", "often", "on stop", None, True])
def test_anything_else_is_refused_naming_what_is_allowed(text):
    with pytest.raises(ValueError, match="'on-stop' or a positive number of seconds"):
        Checkpointing.parse(text)
