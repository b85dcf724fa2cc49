"""The moments of a queue's life the crash scenarios start from (a setup brings a fresh
:class:`~tests.faults.world.World` there), and the invocations they make (an act: a request,
a SageMaker event, the sweep) that the harness kills at each of its calls in turn."""

from __future__ import annotations

from collections.abc import Callable

from tjq.local.calls import training_request

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


# -- moments -----------------------------------------------------------------------------


def running(*names: str, priority: int = 1) -> Callable[[World], None]:
    def setup(world: World) -> None:
        for name in names:
            world.submit(job(name, priority))

    return setup


def two_running_one_waiting(world: World) -> None:
    running("a", "b", "c")(world)


def preempting(world: World) -> None:
    world.submit(job("a"))
    world.run_for(60)
    world.submit(job("b"))
    world.submit(job("urgent", priority=5))  # b, which has done less, is stopped for it


def cancelling(world: World) -> None:
    running("a", "b", "c")(world)
    world.request("DELETE", "/jobs/a")


def an_idle_pool(world: World) -> None:
    world.submit(job("a"))
    world.run_for(400)  # a completed, its instances kept in a warm pool


def start_answer_lost(world: World) -> None:
    world.cloud.sagemaker.lose_next_create_responses(1)
    world.submit(job("a"))  # created, but the queue does not know it


def completion_lost(world: World) -> None:
    running("a", "b", "c")(world)
    world.sweeping = False
    world.lose_events(lambda event: is_status(event, "a", "Completed"))
    world.run_for(400)


def pool_expired(world: World) -> None:
    an_idle_pool(world)
    world.sweeping = False
    world.run_for(900)  # past its keep-alive


def pool_claimed_and_start_died(world: World) -> None:
    world.submit(job("a"))
    world.submit(job("b"))
    world.submit(job("c"))
    world.sweeping = False
    completed = world.hold_event(lambda event: is_status(event, "a", "Completed"))
    world.deliver(completed, kill=("DynamoJobStore.claim", "after"), retries=False)
    world.run_for(120)  # past the grace a start on a claimed pool gets


def pool_claimed_by_a_cancelled_job(world: World) -> None:
    pool_claimed_and_start_died(world)
    world.request("DELETE", "/jobs/c")  # c claimed the pool, and never started


def table_from_before_pools(world: World) -> None:
    """A queue table written by a version without warm pools or outside jobs, read by a
    warm container (which has read the training plans already)."""
    world.cloud.dynamodb.put_item(
        TableName=world.cloud.settings.table_name,
        Item={"pk": {"S": "POOL"}, "sk": {"S": "POOL"}, "version": {"N": "0"}, "active": {"M": {}}},
    )
    world.cloud.deps.plans_read.set()


def pool_claimed_and_gone(world: World) -> None:
    pool_claimed_and_start_died(world)
    world.run_for(900)  # the pool's keep-alive ran out while it was claimed


def outside_job(name: str, count: int = 1):
    request = job(name, count=count, run_seconds=200)
    request["Tags"] = []  # no queue's tags: someone started it from a notebook
    return request


def started_outside(world: World) -> None:
    world.cloud.sagemaker_client.create_training_job(**outside_job("notebook"))


def submitted_by(name: str, submitter: str, priority: int = 1) -> dict:
    """A job whose use fair share charges to ``submitter`` (its fair-share-id tag)."""
    request = job(name, priority)
    request["Tags"].append({"Key": tags.FAIR_SHARE_ID, "Value": submitter})
    return request


def two_submitters(world: World) -> None:
    """Alice's a and b run, her c waits, and bob's d waits (fair share: d is next)."""
    for name in ("a", "b", "c"):
        world.submit(submitted_by(name, "alice"))
    world.submit(submitted_by("d", "bob"))


def is_status(event: dict, job_name: str, status: str) -> bool:
    """Whether ``event`` says that an attempt of ``job_name`` (or the outside job of that
    name) is now ``status``."""
    detail = event.get("detail") or {}
    of = {detail.get("TrainingJobName"), (detail.get("Tags") or {}).get(tags.JOB)}
    return detail.get("TrainingJobStatus") == status and job_name in of


def dependent(name: str, depends_on: str, request: dict | None = None) -> dict:
    """A job that waits for the queue jobs ``depends_on`` names (its depends-on tag)."""
    request = request or job(name)
    request["Tags"].append({"Key": tags.DEPENDS_ON, "Value": depends_on})
    return request


def with_dependents(world: World) -> None:
    """a and b run; c waits in line; d waits for c to complete, e for c to end at all."""
    running("a", "b", "c")(world)
    world.submit(dependent("d", "afterok:c"))
    world.submit(dependent("e", "after:c"))


# -- acts --------------------------------------------------------------------------------


def submit(name: str, priority: int = 1, **options):
    return lambda world, kill: world.submit(job(name, priority, **options), kill=kill)


def api_request(method: str, path: str, body=None, caller=None):
    def act(world: World, kill: Kill):
        extra = {"caller": caller} if caller else {}
        return world.request(method, path, body, kill=kill, **extra)

    return act


def drain(share: str | None = None, resume_after: bool = True):
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


def drained(*names: str) -> Callable[[World], None]:
    def setup(world: World) -> None:
        running(*names)(world)
        drain(resume_after=False)(world, None)
        world.run_for(180)

    return setup


def sagemaker_event(job_name: str, status: str):
    def act(world: World, kill: Kill):
        event = world.hold_event(lambda event: is_status(event, job_name, status))
        return world.deliver(event, kill=kill)

    return act


def sweep(world: World, kill: Kill):
    return world.sweep(kill=kill)


HEAD_OF_LINE = {
    "shares": (Share("team", {P5: 1}, strategy=Strategy.LEND),),
    "limits": Limits(head_of_line=(HeadOfLineLimit(Reason.SHARE_LIMIT, 60, Act.CANCEL),)),
    "capacity": {P5: 1},
    "strict_order": False,
}


def past_its_total_runtime(world: World) -> None:
    """capped may run 120 s in all; it has run longer, and the sweep (paused until now) is
    about to notice."""
    request = job("capped")
    request["Tags"].append({"Key": tags.MAX_TOTAL_RUNTIME, "Value": "120"})
    world.submit(request)
    world.sweeping = False
    world.run_for(180)


def at_the_head(world: World) -> None:
    """second waits at its share's limit, first in line."""
    world.submit(job("first", share="team"))
    world.submit(job("second", share="team"))


def blocked_past_its_limit(world: World) -> None:
    """A sweep has started second's count, and the next sweep (paused until then) finds it
    past its HeadOfLineLimits."""
    at_the_head(world)
    world.sweep()
    world.sweeping = False
    world.run_for(120)


def release_refused(world: World, kill: Kill):
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


def alice_spent(world: World) -> None:
    world.submit(submitted_by("a", "alice"))
    world.run_for(400)
    world.submit(submitted_by("b", "bob"))
