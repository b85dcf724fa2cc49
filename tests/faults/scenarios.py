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

from job_queue.limits import Limits
from tests.faults.moments import (
    ADMIN,
    ALICE_BUDGET,
    FAIR,
    HEAD_OF_LINE,
    KEEP_POOLS,
    P5,
    PLAN_ARN,
    TEAMS,
    Kill,
    alice_spent,
    an_idle_pool,
    api_request,
    at_the_head,
    blocked_past_its_limit,
    cancelling,
    completion_lost,
    dependent,
    drain,
    drained,
    job,
    past_its_total_runtime,
    pool_claimed_and_gone,
    pool_claimed_by_a_cancelled_job,
    pool_expired,
    preempting,
    release_refused,
    running,
    sagemaker_event,
    start_answer_lost,
    started_outside,
    submit,
    submitted_by,
    sweep,
    table_from_before_pools,
    two_running_one_waiting,
    two_submitters,
    with_dependents,
)
from tests.faults.world import World


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


SCENARIOS = (
    Scenario("the first submission to a new queue starts at once", submit("a")),
    Scenario(
        "a submission to a queue table from an older version",
        submit("a"),
        table_from_before_pools,
    ),
    Scenario("a submission waits behind two running jobs", submit("c"), running("a", "b")),
    Scenario("the same request is submitted again", submit("a"), running("a")),
    Scenario("a higher-priority submission preempts", submit("urgent", 5), running("a", "b")),
    Scenario(
        "a waiting job is cancelled", api_request("DELETE", "/jobs/c"), two_running_one_waiting
    ),
    Scenario("a running job is cancelled", api_request("DELETE", "/jobs/a"), running("a", "b")),
    Scenario(
        "a waiting job's priority is raised over the running ones",
        api_request("PUT", "/jobs/c/priority", {"priority": 9}),
        two_running_one_waiting,
    ),
    Scenario(
        "a running job's priority changes",
        api_request("PUT", "/jobs/a/priority", {"priority": 3}),
        running("a", "b"),
    ),
    Scenario(
        "a job completes and the next one starts",
        sagemaker_event("a", "Completed"),
        two_running_one_waiting,
    ),
    Scenario(
        "a preempted job's stop ends, and the preemptor starts",
        sagemaker_event("b", "Stopped"),
        preempting,
    ),
    Scenario("a cancelled job's stop ends", sagemaker_event("a", "Stopped"), cancelling),
    Scenario(
        "a job fails for lack of capacity and goes back in line",
        sagemaker_event("a", "Failed"),
        lambda world: (
            world.cloud.sagemaker.fail_next_jobs_for_capacity(1),
            world.submit(job("a")),
        ),
    ),
    Scenario(
        "a job fails with an internal error and goes back to its place to resume",
        sagemaker_event("a", "Failed"),
        lambda world: (
            world.cloud.sagemaker.fail_next_jobs(1, "InternalServerError: try again", 30),
            world.submit(job("a")),
        ),
    ),
    Scenario(
        "a job preempted past its max-preemptions fails, and the preemptor starts",
        sagemaker_event("b", "Stopped"),
        preempting,
        {"limits": Limits(max_preemptions=0)},
    ),
    Scenario(
        "a job completes into a warm pool, and the next one starts on it",
        sagemaker_event("a", "Completed"),
        two_running_one_waiting,
        KEEP_POOLS,
    ),
    Scenario(
        "an idle warm pool is released for a job that needs its instances",
        submit("big", count=2),
        an_idle_pool,
        KEEP_POOLS,
    ),
    Scenario("SageMaker refuses to release a warm pool", release_refused, an_idle_pool, KEEP_POOLS),
    Scenario(
        "the sweep stops a job whose attempts ran past its max-total-runtime",
        sweep,
        past_its_total_runtime,
        {"strict_order": False},
    ),
    Scenario(
        "the sweep starts counting how long a job blocks the head of its line",
        sweep,
        lambda world: (at_the_head(world), setattr(world, "sweeping", False)),
        HEAD_OF_LINE,
    ),
    Scenario(
        "the sweep fails a job blocked at the head of its line past its limit",
        sweep,
        blocked_past_its_limit,
        HEAD_OF_LINE,
    ),
    Scenario("the sweep finds a completion whose event was lost", sweep, completion_lost),
    Scenario("the sweep finds a start whose answer was lost", sweep, start_answer_lost),
    Scenario(
        "the sweep retries a start SageMaker does not know yet",
        sweep,
        lambda world: (
            start_answer_lost(world),
            setattr(world, "sweeping", False),
            world.run_for(120),  # past the grace a start gets
            world.cloud.sagemaker.fail_next("DescribeTrainingJob", 1, "ResourceNotFound"),
        ),
    ),
    Scenario("the sweep forgets an expired warm pool", sweep, pool_expired, KEEP_POOLS),
    Scenario(
        "the sweep frees a warm pool claimed by a job cancelled before it started",
        sweep,
        pool_claimed_by_a_cancelled_job,
        KEEP_POOLS,
    ),
    Scenario(
        "the sweep drops a claimed warm pool that expired",
        sweep,
        pool_claimed_and_gone,
        KEEP_POOLS,
    ),
    Scenario(
        "a job started outside the queue takes instances",
        sagemaker_event("notebook", "InProgress"),
        started_outside,
        {"strict_order": False},
    ),
    Scenario(
        "a job started outside the queue ends",
        sagemaker_event("notebook", "Completed"),
        lambda world: (started_outside(world), world.run_for(30)),
        {"strict_order": False},
    ),
    Scenario(
        "a training plan is read at cold start",
        submit("a"),
        options={
            "capacity": {P5: [1, {"training_plan": PLAN_ARN + "p5-plan"}]},
            "training_plans": [f"p5-plan={P5}:1:0:86400"],
            "strict_order": False,
        },
    ),
    Scenario(
        "an admin replaces the shares",
        api_request(
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
        drain(),
        running("a", "b"),
        {"strict_order": False},
    ),
    Scenario(
        "an admin resumes a drained queue",
        api_request("POST", "/queue/resume", caller=ADMIN),
        drained("a", "b"),
        {"strict_order": False},
    ),
    Scenario(
        "an admin drains one share, the other goes on",
        drain("vision"),
        lambda world: (world.submit(job("v", share="vision")), world.submit(job("n", share="nlp"))),
        {"shares": TEAMS, "strict_order": False},
    ),
    Scenario(
        "a job that depends on a running one is submitted",
        lambda world, kill: world.submit(dependent("c", "afterok:a"), kill=kill),
        running("a"),
    ),
    Scenario(
        "a job whose parent completed already is submitted, and starts at once",
        lambda world, kill: world.submit(dependent("c", "afterok:a"), kill=kill),
        lambda world: (world.submit(job("a")), world.run_for(400)),
    ),
    Scenario(
        "a job completes, and the job that depends on it joins the line and starts",
        sagemaker_event("a", "Completed"),
        lambda world: (running("a", "b")(world), world.submit(dependent("c", "afterok:a"))),
    ),
    Scenario(
        "a waiting parent is cancelled: its afterok child is cancelled, its after child joins",
        api_request("DELETE", "/jobs/c"),
        with_dependents,
    ),
    Scenario(
        "with fair share, a job completes and its dependent joins its submitter's line",
        sagemaker_event("a", "Completed"),
        lambda world: (
            world.submit(submitted_by("a", "alice")),
            world.submit(submitted_by("b", "bob")),
            world.submit(dependent("c", "afterok:a", submitted_by("c", "alice"))),
        ),
        FAIR,
    ),
    Scenario(
        "with fair share, the first submission opens its submitter's line",
        lambda world, kill: world.submit(submitted_by("a", "alice"), kill=kill),
        options=FAIR,
    ),
    Scenario(
        "with fair share, a job completes and the next submitter's job starts",
        sagemaker_event("a", "Completed"),
        two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, a waiting job is cancelled",
        api_request("DELETE", "/jobs/c"),
        two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, a waiting job's priority is raised over the running ones",
        api_request("PUT", "/jobs/c/priority", {"priority": 9}),
        two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, a job completes into a warm pool, and the next one starts on it",
        sagemaker_event("a", "Completed"),
        two_submitters,
        {**FAIR, **KEEP_POOLS},
    ),
    Scenario(
        "with fair share, an idle warm pool is released for a job that needs its instances",
        submit("big", count=2),
        lambda world: (world.submit(submitted_by("a", "alice")), world.run_for(400)),
        {**FAIR, **KEEP_POOLS},
    ),
    Scenario(
        "with fair share, an admin changes the weights",
        api_request("PUT", "/usage/weights", {"bob": 3}, caller=ADMIN),
        two_submitters,
        FAIR,
    ),
    Scenario(
        "with fair share, the sweep forgets an expired warm pool",
        sweep,
        lambda world: (
            world.submit(submitted_by("a", "alice")),
            world.run_for(400),
            setattr(world, "sweeping", False),
            world.run_for(900),
        ),
        {**FAIR, **KEEP_POOLS},
    ),
    Scenario(
        "alice spent her budget: her next submission waits, bob's starts",
        lambda world, kill: world.submit(submitted_by("a2", "alice"), kill=kill),
        alice_spent,
        ALICE_BUDGET,
    ),
    Scenario(
        "an admin raises alice's spent budget, and her waiting job starts",
        api_request("PUT", "/budgets", {"alice": {"instance_hours": 10}}, caller=ADMIN),
        lambda world: (alice_spent(world), world.submit(submitted_by("a2", "alice"))),
        ALICE_BUDGET,
    ),
    Scenario(
        "the sweep warns that alice's budget is 80% spent",
        sweep,
        lambda world: (
            setattr(world, "sweeping", False),
            world.submit(submitted_by("a", "alice")),
            world.run_for(250),
        ),
        ALICE_BUDGET,
    ),
)
