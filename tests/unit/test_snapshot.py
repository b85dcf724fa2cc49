"""What a pass sees, and what it sees once its plan is carried out: the one step from a plan
to the next snapshot, which the expected-start replay and the simulator both take."""

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, Snapshot, WaitingJob, after, plan
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.scheduler.snapshot import WarmPool, started_names

P5 = "ml.p5.48xlarge"
NOW = 10_000.0
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p"


def running(name, priority, started=0.0):
    return ActiveJob(name, priority, 1, {P5: 1}, JobState.RUNNING, started, max_runtime=3600)


def test_after_a_preemption_the_victim_is_stopping_and_the_preemptor_runs_from_now():
    seen = Snapshot(NOW, {P5: 1}, [running("low", 0)])
    urgent = WaitingJob("urgent", 5, 2, {P5: 1}, max_runtime=600)

    decided = plan(seen, [urgent])
    assert [p.victim.name for p in decided.preemptions] == ["low"]
    assert decided.starts == ()  # it waits for the stop
    then = after(seen, decided)
    assert [(j.name, j.state) for j in then.active] == [("low", JobState.PREEMPTING)]

    stopped = Snapshot(NOW + 120, {P5: 1})  # the stop finished: nothing holds the instance
    started = plan(stopped, [urgent])
    (job,) = after(stopped, started).active
    assert (job.name, job.state, job.started_at, job.max_runtime) == (
        "urgent",
        JobState.RUNNING,
        NOW + 120,
        600,
    )
    assert started_names(started) == {"urgent"}  # it no longer waits
    assert seen.active[0].state is JobState.RUNNING, "the snapshot itself is never changed"


def test_a_job_started_on_a_pool_takes_it_and_a_released_pool_is_gone():
    pools = [
        WarmPool("left-a", "a", {P5: 1}, "config-a", NOW - 60, NOW + 600),
        WarmPool("left-b", "b", {P5: 1}, "config-b", NOW - 30, NOW + 600),
    ]
    seen = Snapshot(NOW, {P5: 2}, pools=pools)
    same = WaitingJob("same-as-a", 1, 1, {P5: 1}, warm_key="config-a")
    other = WaitingJob("other", 0, 2, {P5: 1}, warm_key="config-c")

    decided = plan(seen, [same, other], Policy())
    assert decided.warm["same-as-a"].name == "left-a"
    assert [r.pool.name for r in decided.releases] == ["left-b"]  # released for "other"
    then = after(seen, decided)
    assert then.pools == ()
    assert {j.name for j in then.active} == {"same-as-a", "other"}


def test_a_job_started_on_a_training_plan_runs_on_it():
    reserved = TrainingPlan(PLAN, P5, "Active", (Reservation(1, NOW - 60, NOW + 86_400),))
    seen = Snapshot(NOW, {P5: 0}, plans=[reserved])
    decided = plan(seen, [WaitingJob("reserved", 0, 1, {P5: 1}, max_runtime=3600)])
    (job,) = after(seen, decided).active
    assert job.plan == PLAN
    # The next pass counts it on the plan: nothing else fits.
    later = plan(after(seen, decided), [WaitingJob("next", 0, 2, {P5: 1}, max_runtime=3600)])
    assert later.starts == ()
