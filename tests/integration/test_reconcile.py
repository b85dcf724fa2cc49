"""The scheduled sweep repairs what a missed event left behind."""

from tests.integration.helpers import job, states, submit


def test_sweep_repairs_a_dropped_completion_event(cloud):
    for name in ("a", "b", "c"):
        submit(cloud, name, 1)
    cloud.lose_next_events(1)
    cloud.advance(600)  # a and b complete; a's event is lost
    assert states(cloud)["c"] == "running"  # b's event started c
    lost = [n for n in ("a", "b") if job(cloud, n)["state"] == "running"]
    assert len(lost) == 1
    cloud.sweep()
    assert job(cloud, lost[0])["state"] == "completed"


def test_sweep_repairs_a_dropped_stop_event_and_starts_the_preemptor(cloud):
    submit(cloud, "low", 1)
    submit(cloud, "mid", 2)
    submit(cloud, "high", 3)
    cloud.lose_next_events(1)
    cloud.advance(60)  # low stops, but nobody hears of it
    assert states(cloud)["low"] == "preempting" and states(cloud)["high"] == "pending"
    cloud.sweep()
    assert states(cloud) == {"mid": "running", "high": "running", "low": "preempted"}


def test_sweep_repairs_a_dropped_failure_with_its_reason(cloud):
    submit(cloud, "a", 1)
    cloud.sagemaker.jobs["a"].end_reason = ("Failed", "OutOfMemory: the process was killed")
    cloud.lose_next_events(1)
    cloud.advance(600)
    assert job(cloud, "a")["state"] == "running"
    cloud.sweep()
    assert job(cloud, "a")["failure_reason"] == "OutOfMemory: the process was killed"


def test_sweep_resends_a_stop_that_did_not_reach_sagemaker(cloud):
    submit(cloud, "a", 1)
    status, _ = cloud.api("DELETE", "/jobs/a")
    assert status == 200
    # SageMaker lost the stop: the job is InProgress again, the queue says cancelling.
    cloud.sagemaker.jobs["a"].status = "InProgress"
    cloud.sweep()
    assert cloud.sagemaker.jobs["a"].status == "Stopping"
    cloud.advance(60)
    assert job(cloud, "a")["state"] == "cancelled"


def test_sweep_uses_describe_on_active_jobs_only(cloud):
    for i in range(6):
        submit(cloud, f"j{i}", 1)
    cloud.advance(600)
    before = dict(cloud.sagemaker.calls)
    cloud.sweep()
    assert (
        cloud.sagemaker.calls.get("DescribeTrainingJob", 0) - before.get("DescribeTrainingJob", 0)
        == 2
    )
    assert "ListTrainingJobs" not in cloud.sagemaker.calls


def test_sweep_with_nothing_to_do_changes_nothing(cloud):
    submit(cloud, "a", 1)
    before = cloud.jobs()
    cloud.sweep()
    assert cloud.jobs() == before


def test_a_job_that_cannot_be_checked_does_not_stop_the_sweep(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 1)
    cloud.lose_next_events(2)
    cloud.advance(600)  # both complete; neither event arrives
    cloud.sagemaker.fail_next("DescribeTrainingJob", 4)  # a's check is throttled throughout
    cloud.sweep()
    assert {job(cloud, "a")["state"], job(cloud, "b")["state"]} == {"running", "completed"}
    cloud.sweep()  # the next sweep repairs the other one
    assert job(cloud, "a")["state"] == job(cloud, "b")["state"] == "completed"
