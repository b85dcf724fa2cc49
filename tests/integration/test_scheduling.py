"""Scheduling through the real handler: several instance types, gangs, FIFO, preemption."""

from job_queue.scheduler import Policy
from tests.conftest import G5, P5
from tests.integration.helpers import job, running, states, submit


def test_equal_priorities_run_first_come_first_served(cloud):
    for name in ("first", "second", "third", "fourth"):
        submit(cloud, name, 1)
    assert running(cloud) == {"first", "second"}
    cloud.advance(600)
    assert running(cloud) == {"third", "fourth"}


def test_higher_priority_job_preempts_and_the_preempted_job_keeps_its_place(cloud):
    for name in ("a", "b", "low"):
        submit(cloud, name, 0)
    submit(cloud, "high", 1)
    # a and b started together; b was submitted later, so it counts as the more recent.
    assert states(cloud) == {"a": "running", "b": "preempting", "high": "pending", "low": "pending"}
    cloud.advance(60)
    assert states(cloud) == {"high": "running", "a": "running", "b": "preempted", "low": "pending"}
    positions = {r["name"]: r["position"] for r in cloud.jobs() if r["position"]}
    assert positions == {"b": 1, "low": 2}


def test_instance_types_have_separate_capacity(make_cloud):
    cloud = make_cloud({P5: 1, G5: 2})
    submit(cloud, "p5-a", 1, instance_type=P5)
    submit(cloud, "p5-b", 1, instance_type=P5)
    submit(cloud, "g5-a", 1, instance_type=G5)
    submit(cloud, "g5-b", 1, instance_type=G5)
    assert running(cloud) == {"p5-a", "g5-a", "g5-b"}
    # A high-priority g5 job preempts a g5 job, never the p5 one.
    submit(cloud, "g5-urgent", 5, instance_type=G5)
    assert states(cloud)["g5-b"] == "preempting"
    assert states(cloud)["p5-a"] == "running"


def test_multi_instance_job_needs_all_its_instances(make_cloud):
    cloud = make_cloud({P5: 4})
    submit(cloud, "small", 1, instance_count=3)
    body = submit(cloud, "gang", 1, instance_count=2)
    assert body["job"]["state"] == "pending"
    cloud.advance(600)
    assert job(cloud, "gang")["state"] == "running"
    assert cloud.sagemaker.jobs["gang"].demand == {P5: 2}


def test_waiting_gang_job_is_not_overtaken_by_a_job_that_could_delay_it(make_cloud):
    cloud = make_cloud({P5: 4})
    submit(cloud, "running3", 1, instance_count=3, max_runtime=3600)
    submit(cloud, "gang", 1, instance_count=2)
    submit(cloud, "single", 1, instance_count=1, max_runtime=7200)
    # One instance is free, but single might still run when gang can start: it waits.
    assert states(cloud) == {"running3": "running", "gang": "pending", "single": "pending"}
    cloud.advance(600)
    assert states(cloud) == {"gang": "running", "single": "running"}


def test_a_short_job_backfills_the_instance_a_gang_job_cannot_use_yet(make_cloud):
    cloud = make_cloud({P5: 4})
    submit(cloud, "running3", 1, instance_count=3, max_runtime=3600)
    submit(cloud, "gang", 1, instance_count=2)
    submit(cloud, "quick", 0, instance_count=1, max_runtime=1800, run_seconds=300)
    # quick is bound to end (1800 s + 600 s allowed to start) before running3 must end.
    assert states(cloud) == {"running3": "running", "gang": "pending", "quick": "running"}
    cloud.advance(600)
    assert states(cloud) == {"gang": "running"}


def test_a_blocked_job_does_not_hold_back_another_instance_type(make_cloud):
    cloud = make_cloud({P5: 2, G5: 1})
    submit(cloud, "p5-run", 1, instance_type=P5)
    submit(cloud, "p5-gang", 1, instance_type=P5, instance_count=2)
    submit(cloud, "g5", 0, instance_type=G5)
    assert states(cloud)["g5"] == "running"
    assert states(cloud)["p5-gang"] == "pending"


def test_preemption_frees_only_what_the_job_needs(make_cloud):
    cloud = make_cloud({P5: 4})
    for name in ("l1", "l2", "l3", "l4"):
        submit(cloud, name, 1)
        cloud.advance(10)
    submit(cloud, "urgent", 5, instance_count=2)
    preempting = {n for n, s in states(cloud).items() if s == "preempting"}
    assert preempting == {"l3", "l4"}  # the two most recently started
    cloud.advance(60)
    assert job(cloud, "urgent")["state"] == "running"
    assert states(cloud)["l1"] == "running" and states(cloud)["l2"] == "running"


def test_no_preemption_when_it_would_not_let_the_job_start(cloud):
    submit(cloud, "vip", 9)
    submit(cloud, "low", 1)
    submit(cloud, "big", 5, instance_count=2)
    assert states(cloud) == {"vip": "running", "low": "running", "big": "pending"}


def test_stopping_jobs_are_not_preempted_twice(cloud):
    submit(cloud, "low1", 1)
    submit(cloud, "low2", 1)
    submit(cloud, "urgent", 5)
    submit(cloud, "urgent-resubmitted-check", 0)
    # A second pass (the resubmission above ran one) must not stop another job.
    assert sorted(states(cloud).values()).count("preempting") == 1


def test_preempted_job_resumes_before_later_jobs_of_its_priority(cloud):
    submit(cloud, "old", 1)
    cloud.advance(10)
    submit(cloud, "other", 1)
    submit(cloud, "later", 1)
    submit(cloud, "urgent", 5)  # preempts "other", the most recently started
    cloud.advance(60)
    assert states(cloud)["other"] == "preempted"
    positions = {r["name"]: r["position"] for r in cloud.jobs() if r["position"]}
    assert positions == {"other": 1, "later": 2}
    cloud.advance(540)  # "old" completes: "other" resumes, not "later"
    assert states(cloud)["other"] == "running"
    assert states(cloud)["later"] == "pending"


def test_list_shows_wait_and_instances(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 1)
    submit(cloud, "c", 1)
    cloud.advance(120)
    status, body = cloud.api("GET", "/jobs")
    assert status == 200
    rows = {r["name"]: r for r in body["jobs"]}
    assert rows["c"]["waiting_seconds"] == 120.0
    assert rows["a"]["running_seconds"] == 120.0
    assert rows["c"]["position"] == 1
    assert body["capacity"] == {P5: 2}


def test_minimum_run_time_protects_a_new_job_until_the_sweep_after_it(make_cloud):
    cloud = make_cloud({P5: 1}, policy=Policy(min_run_s=600))
    submit(cloud, "low", 0, run_seconds=3600)
    cloud.advance(60)
    submit(cloud, "urgent", 5)
    assert states(cloud) == {"low": "running", "urgent": "pending"}
    cloud.advance(480)
    cloud.sweep()  # 9 minutes in: still protected
    assert states(cloud) == {"low": "running", "urgent": "pending"}
    cloud.advance(60)
    cloud.sweep()  # 10 minutes: the scheduled sweep preempts it
    assert states(cloud) == {"low": "preempting", "urgent": "pending"}
    cloud.advance(60)
    assert states(cloud) == {"low": "preempted", "urgent": "running"}
