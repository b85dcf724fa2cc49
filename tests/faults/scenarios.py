"""The invocations the crash points are enumerated over: each brings a queue to a moment
(``setup``) and then makes one invocation (``act``) — a request, a SageMaker event, the
sweep — that the harness kills at each of its calls in turn.

Between them they reach every crash site of the queue: submit, cancel and reprioritise;
each SageMaker event (started, completed, stopped after a preemption or a cancel, or past
the job's max-preemptions, failed for capacity, failed with an internal error that is
retried, a job started outside the queue and its end); a job failed at the head of its
line past its HeadOfLineLimits, or stopped past its max-total-runtime; jobs that depend on
others (queued, joining the line, cancelled with their parent); warm pools (kept, started on,
released, refused, expired, unclaimed); training plans; shares replaced at run time; an
admin's drain and resume; budgets (spent, raised by an admin, warned of); and the sweep's
repairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tjq.local.cloud import training_request

from job_queue import tags
from job_queue.head_of_line import Act, HeadOfLineLimit
from job_queue.limits import Limits
from job_queue.scheduler import Policy, Share, Strategy
from job_queue.scheduler.budgets import Budget, Holder
from job_queue.scheduler.fair_share import FairShare
from job_queue.scheduler.waiting_for import Reason
from tests.faults.wire import Outage
from tests.faults.world import World

P5 = "ml.p5.48xlarge"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"
Kill = tuple[int | str, str] | None


def job(name: str, priority: int = 1, count: int = 1, **options) -> dict:
    return training_request(name, priority=priority, instance_count=count, **options)


@dataclass(frozen=True)
class Scenario:
    """A moment of a queue's life, and the one invocation made at it."""

    name: str
    act: Callable[[World, Kill], object]
    setup: Callable[[World], object] = lambda world: None
    options: dict = field(default_factory=dict)  # the World's

    def world(self, seed: int = 0) -> World:
        world = World(seed, **self.options)
        self.setup(world)
        return world


# -- moments -----------------------------------------------------------------------------


def _running(*names: str, priority: int = 1) -> Callable[[World], None]:
    def setup(world: World) -> None:
        for name in names:
            world.submit(job(name, priority))

    return setup


def _two_running_one_waiting(world: World) -> None:
    _running("a", "b", "c")(world)


def _preempting(world: World) -> None:
    world.submit(job("a"))
    world.run_for(60)
    world.submit(job("b"))
    world.submit(job("urgent", priority=5))  # b, which has done less, is stopped for it


def _cancelling(world: World) -> None:
    _running("a", "b", "c")(world)
    world.request("DELETE", "/jobs/a")


def _an_idle_pool(world: World) -> None:
    world.submit(job("a"))
    world.run_for(400)  # a completed, its instances kept in a warm pool


def _start_answer_lost(world: World) -> None:
    world.cloud.sagemaker.lose_next_create_responses(1)
    world.submit(job("a"))  # created, but the queue does not know it


def _completion_lost(world: World) -> None:
    _running("a", "b", "c")(world)
    world.sweeping = False
    world.lose_events(lambda event: _is(event, "a", "Completed"))
    world.run_for(400)


def _pool_expired(world: World) -> None:
    _an_idle_pool(world)
    world.sweeping = False
    world.run_for(900)  # past its keep-alive


def _pool_claimed_and_start_died(world: World) -> None:
    world.submit(job("a"))
    world.submit(job("b"))
    world.submit(job("c"))
    world.sweeping = False
    completed = world.hold_event(lambda event: _is(event, "a", "Completed"))
    world.deliver(completed, kill=("DynamoJobStore.claim", "after"), retries=False)
    world.run_for(120)  # past the grace a start on a claimed pool gets


def _pool_claimed_by_a_cancelled_job(world: World) -> None:
    _pool_claimed_and_start_died(world)
    world.request("DELETE", "/jobs/c")  # c claimed the pool, and never started


def _table_from_before_pools(world: World) -> None:
    """A queue table written by a version without warm pools or outside jobs, read by a
    warm container (which has read the training plans already)."""
    world.cloud.dynamodb.put_item(
        TableName=world.cloud.settings.table_name,
        Item={"pk": {"S": "POOL"}, "sk": {"S": "POOL"}, "version": {"N": "0"}, "active": {"M": {}}},
    )
    world.cloud.deps.plans_read.set()


def _pool_claimed_and_gone(world: World) -> None:
    _pool_claimed_and_start_died(world)
    world.run_for(900)  # the pool's keep-alive ran out while it was claimed


def _outside_job(name: str, count: int = 1):
    request = job(name, count=count, run_seconds=200)
    request["Tags"] = []  # no queue's tags: someone started it from a notebook
    return request


def _started_outside(world: World) -> None:
    world.cloud.sagemaker_client.create_training_job(**_outside_job("notebook"))


def _by(name: str, submitter: str, priority: int = 1) -> dict:
    """A job whose use fair share charges to ``submitter`` (its fair-share-id tag)."""
    request = job(name, priority)
    request["Tags"].append({"Key": tags.FAIR_SHARE_ID, "Value": submitter})
    return request


def _two_submitters(world: World) -> None:
    """Alice's a and b run, her c waits, and bob's d waits (fair share: d is next)."""
    for name in ("a", "b", "c"):
        world.submit(_by(name, "alice"))
    world.submit(_by("d", "bob"))


def _is(event: dict, job_name: str, status: str) -> bool:
    """Whether ``event`` says that an attempt of ``job_name`` (or the outside job of that
    name) is now ``status``."""
    detail = event.get("detail") or {}
    of = {detail.get("TrainingJobName"), (detail.get("Tags") or {}).get(tags.JOB)}
    return detail.get("TrainingJobStatus") == status and job_name in of


def _after(name: str, depends_on: str, request: dict | None = None) -> dict:
    """A job that waits for the queue jobs ``depends_on`` names (its depends-on tag)."""
    request = request or job(name)
    request["Tags"].append({"Key": tags.DEPENDS_ON, "Value": depends_on})
    return request


def _with_dependents(world: World) -> None:
    """a and b run; c waits in line; d waits for c to complete, e for c to end at all."""
    _running("a", "b", "c")(world)
    world.submit(_after("d", "afterok:c"))
    world.submit(_after("e", "after:c"))


# -- acts --------------------------------------------------------------------------------


def _submit(name: str, priority: int = 1, **options):
    return lambda world, kill: world.submit(job(name, priority, **options), kill=kill)


def _request(method: str, path: str, body=None, caller=None):
    def act(world: World, kill: Kill):
        extra = {"caller": caller} if caller else {}
        return world.request(method, path, body, kill=kill, **extra)

    return act


def _drain(share: str | None = None, resume_after: bool = True):
    """An admin's drain of the queue (or ``share``), the invocation that may die; once its
    stops have landed, the admin resumes it (a queue left drained would never finish)."""
    body = {"share": share} if share else None

    def act(world: World, kill: Kill):
        answer = world.request("POST", "/queue/drain", body, kill=kill, caller=ADMIN)
        if resume_after:
            world.run_for(180)
            world.request("POST", "/queue/resume", body, caller=ADMIN)
        return answer

    return act


def _drained(*names: str) -> Callable[[World], None]:
    def setup(world: World) -> None:
        _running(*names)(world)
        _drain(resume_after=False)(world, None)
        world.run_for(180)

    return setup


def _event(job_name: str, status: str):
    def act(world: World, kill: Kill):
        event = world.hold_event(lambda event: _is(event, job_name, status))
        return world.deliver(event, kill=kill)

    return act


def _sweep(world: World, kill: Kill):
    return world.sweep(kill=kill)


HEAD_OF_LINE = {
    "shares": (Share("team", {P5: 1}, strategy=Strategy.LEND),),
    "limits": Limits(head_of_line=(HeadOfLineLimit(Reason.SHARE_LIMIT, 60, Act.CANCEL),)),
    "capacity": {P5: 1},
    "strict_order": False,
}


def _past_its_total_runtime(world: World) -> None:
    """capped may run 120 s in all; it has run longer, and the sweep (paused until now) is
    about to notice."""
    request = job("capped")
    request["Tags"].append({"Key": tags.MAX_TOTAL_RUNTIME, "Value": "120"})
    world.submit(request)
    world.sweeping = False
    world.run_for(180)


def _at_the_head(world: World) -> None:
    """second waits at its share's limit, first in line."""
    world.submit(job("first", share="team"))
    world.submit(job("second", share="team"))


def _blocked_past_its_limit(world: World) -> None:
    """A sweep has started second's count, and the next sweep (paused until then) finds it
    past its HeadOfLineLimits."""
    _at_the_head(world)
    world.sweep()
    world.sweeping = False
    world.run_for(120)


def _release_refused(world: World, kill: Kill):
    now = world.clock()
    world.wire.outages.append(Outage("sagemaker", now, now + 1, frozenset({"update_training_job"})))
    return world.submit(job("big", count=2), kill=kill)


KEEP_POOLS = {"keep_alive_seconds": 600}
TEAMS = (
    Share("vision", {P5: 1}, strategy=Strategy.LEND),
    Share("nlp", {P5: 1}, strategy=Strategy.LEND),
)
ADMIN = "arn:aws:iam::123456789012:user/testing"
FAIR = {"policy": Policy(fair_share=FairShare(half_life_s=3600.0))}
# Alice may spend 5 instance-minutes a day: one 300 s job spends it.
ALICE_BUDGET = {
    "budgets": {Holder("submitter", "alice"): Budget(300 / 3600, window_days=1)},
    "strict_order": False,
}


def _alice_spent(world: World) -> None:
    world.submit(_by("a", "alice"))
    world.run_for(400)
    world.submit(_by("b", "bob"))


SCENARIOS = (
    Scenario("the first submission to a new queue starts at once", _submit("a")),
    Scenario(
        "a submission to a queue table from an older version",
        _submit("a"),
        _table_from_before_pools,
    ),
    Scenario("a submission waits behind two running jobs", _submit("c"), _running("a", "b")),
    Scenario("the same request is submitted again", _submit("a"), _running("a")),
    Scenario("a higher-priority submission preempts", _submit("urgent", 5), _running("a", "b")),
    Scenario("a waiting job is cancelled", _request("DELETE", "/jobs/c"), _two_running_one_waiting),
    Scenario("a running job is cancelled", _request("DELETE", "/jobs/a"), _running("a", "b")),
    Scenario(
        "a waiting job's priority is raised over the running ones",
        _request("PUT", "/jobs/c/priority", {"priority": 9}),
        _two_running_one_waiting,
    ),
    Scenario(
        "a running job's priority changes",
        _request("PUT", "/jobs/a/priority", {"priority": 3}),
        _running("a", "b"),
    ),
    Scenario(
        "a job completes and the next one starts",
        _event("a", "Completed"),
        _two_running_one_waiting,
    ),
    Scenario(
        "a preempted job's stop ends, and the preemptor starts", _event("b", "Stopped"), _preempting
    ),
    Scenario("a cancelled job's stop ends", _event("a", "Stopped"), _cancelling),
    Scenario(
        "a job fails for lack of capacity and goes back in line",
        _event("a", "Failed"),
        lambda world: (
            world.cloud.sagemaker.fail_next_jobs_for_capacity(1),
            world.submit(job("a")),
        ),
    ),
    Scenario(
        "a job fails with an internal error and goes back to its place to resume",
        _event("a", "Failed"),
        lambda world: (
            world.cloud.sagemaker.fail_next_jobs(1, "InternalServerError: try again", 30),
            world.submit(job("a")),
        ),
    ),
    Scenario(
        "a job preempted past its max-preemptions fails, and the preemptor starts",
        _event("b", "Stopped"),
        _preempting,
        {"limits": Limits(max_preemptions=0)},
    ),
    Scenario(
        "a job completes into a warm pool, and the next one starts on it",
        _event("a", "Completed"),
        _two_running_one_waiting,
        KEEP_POOLS,
    ),
    Scenario(
        "an idle warm pool is released for a job that needs its instances",
        _submit("big", count=2),
        _an_idle_pool,
        KEEP_POOLS,
    ),
    Scenario(
        "SageMaker refuses to release a warm pool", _release_refused, _an_idle_pool, KEEP_POOLS
    ),
    Scenario(
        "the sweep stops a job whose attempts ran past its max-total-runtime",
        _sweep,
        _past_its_total_runtime,
        {"strict_order": False},
    ),
    Scenario(
        "the sweep starts counting how long a job blocks the head of its line",
        _sweep,
        lambda world: (_at_the_head(world), setattr(world, "sweeping", False)),
        HEAD_OF_LINE,
    ),
    Scenario(
        "the sweep fails a job blocked at the head of its line past its limit",
        _sweep,
        _blocked_past_its_limit,
        HEAD_OF_LINE,
    ),
    Scenario("the sweep finds a completion whose event was lost", _sweep, _completion_lost),
    Scenario("the sweep finds a start whose answer was lost", _sweep, _start_answer_lost),
    Scenario(
        "the sweep retries a start SageMaker does not know yet",
        _sweep,
        lambda world: (
            _start_answer_lost(world),
            setattr(world, "sweeping", False),
            world.run_for(120),  # past the grace a start gets
            world.cloud.sagemaker.fail_next("DescribeTrainingJob", 1, "ResourceNotFound"),
        ),
    ),
    Scenario("the sweep forgets an expired warm pool", _sweep, _pool_expired, KEEP_POOLS),
    Scenario(
        "the sweep frees a warm pool claimed by a job cancelled before it started",
        _sweep,
        _pool_claimed_by_a_cancelled_job,
        KEEP_POOLS,
    ),
    Scenario(
        "the sweep drops a claimed warm pool that expired",
        _sweep,
        _pool_claimed_and_gone,
        KEEP_POOLS,
    ),
    Scenario(
        "a job started outside the queue takes instances",
        _event("notebook", "InProgress"),
        _started_outside,
        {"strict_order": False},
    ),
    Scenario(
        "a job started outside the queue ends",
        _event("notebook", "Completed"),
        lambda world: (_started_outside(world), world.run_for(30)),
        {"strict_order": False},
    ),
    Scenario(
        "a training plan is read at cold start",
        _submit("a"),
        options={
            "capacity": {P5: [1, {"training_plan": PLAN_ARN + "p5-plan"}]},
            "training_plans": [f"p5-plan={P5}:1:0:86400"],
            "strict_order": False,
        },
    ),
    Scenario(
        "an admin replaces the shares",
        _request(
            "PUT",
            "/shares",
            [
                {
                    "name": "vision",
                    "capacity": {P5: 2},
                    "strategy": "LEND",
                    "in_share_preemption": False,
                },
                {
                    "name": "nlp",
                    "capacity": {P5: 0},
                    "strategy": "LEND",
                    "in_share_preemption": False,
                },
            ],
            caller=ADMIN,
        ),
        lambda world: (world.submit(job("v", share="vision")), world.submit(job("n", share="nlp"))),
        {"shares": TEAMS, "strict_order": False},
    ),
    Scenario(
        "an admin drains the queue: its running jobs are stopped and requeued",
        _drain(),
        _running("a", "b"),
        {"strict_order": False},
    ),
    Scenario(
        "an admin resumes a drained queue",
        _request("POST", "/queue/resume", caller=ADMIN),
        _drained("a", "b"),
        {"strict_order": False},
    ),
    Scenario(
        "an admin drains one share, the other goes on",
        _drain("vision"),
        lambda world: (world.submit(job("v", share="vision")), world.submit(job("n", share="nlp"))),
        {"shares": TEAMS, "strict_order": False},
    ),
    Scenario(
        "a job that depends on a running one is submitted",
        lambda world, kill: world.submit(_after("c", "afterok:a"), kill=kill),
        _running("a"),
    ),
    Scenario(
        "a job whose parent completed already is submitted, and starts at once",
        lambda world, kill: world.submit(_after("c", "afterok:a"), kill=kill),
        lambda world: (world.submit(job("a")), world.run_for(400)),
    ),
    Scenario(
        "a job completes, and the job that depends on it joins the line and starts",
        _event("a", "Completed"),
        lambda world: (_running("a", "b")(world), world.submit(_after("c", "afterok:a"))),
    ),
    Scenario(
        "a waiting parent is cancelled: its afterok child is cancelled, its after child joins",
        _request("DELETE", "/jobs/c"),
        _with_dependents,
    ),
    Scenario(
        "with fair share, a job completes and its dependent joins its submitter's line",
        _event("a", "Completed"),
        lambda world: (
            world.submit(_by("a", "alice")),
            world.submit(_by("b", "bob")),
            world.submit(_after("c", "afterok:a", _by("c", "alice"))),
        ),
        FAIR,
    ),
    Scenario(
        "with fair share, the first submission opens its submitter's line",
        lambda world, kill: world.submit(_by("a", "alice"), kill=kill),
        options=FAIR,
    ),
    Scenario(
        "with fair share, a job completes and the next submitter's job starts",
        _event("a", "Completed"),
        _two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, a waiting job is cancelled",
        _request("DELETE", "/jobs/c"),
        _two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, a waiting job's priority is raised over the running ones",
        _request("PUT", "/jobs/c/priority", {"priority": 9}),
        _two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, a job completes into a warm pool, and the next one starts on it",
        _event("a", "Completed"),
        _two_submitters,
        {**FAIR, **KEEP_POOLS},
    ),
    Scenario(
        "with fair share, an idle warm pool is released for a job that needs its instances",
        _submit("big", count=2),
        lambda world: (world.submit(_by("a", "alice")), world.run_for(400)),
        {**FAIR, **KEEP_POOLS},
    ),
    Scenario(
        "with fair share, an admin changes the weights",
        _request("PUT", "/usage/weights", {"bob": 3}, caller=ADMIN),
        _two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, the sweep forgets an expired warm pool",
        _sweep,
        lambda world: (
            world.submit(_by("a", "alice")),
            world.run_for(400),
            setattr(world, "sweeping", False),
            world.run_for(900),
        ),
        {**FAIR, **KEEP_POOLS},
    ),
    Scenario(
        "alice spent her budget: her next submission waits, bob's starts",
        lambda world, kill: world.submit(_by("a2", "alice"), kill=kill),
        _alice_spent,
        ALICE_BUDGET,
    ),
    Scenario(
        "an admin raises alice's spent budget, and her waiting job starts",
        _request("PUT", "/budgets", {"alice": {"instance_hours": 10}}, caller=ADMIN),
        lambda world: (_alice_spent(world), world.submit(_by("a2", "alice"))),
        ALICE_BUDGET,
    ),
    Scenario(
        "the sweep warns that alice's budget is 80% spent",
        _sweep,
        lambda world: (
            setattr(world, "sweeping", False),
            world.submit(_by("a", "alice")),
            world.run_for(250),
        ),
        ALICE_BUDGET,
    ),
)
