"""The blog's scenario, end to end through the real handler: capacity 2, four jobs."""

from tests.integration.helpers import job, submit


def test_blog_scenario_runs_in_priority_order_with_preemption(cloud):
    for name, priority in (("job1", 1), ("job2", 2), ("job3", 1)):
        submit(cloud, name, priority)
    assert cloud.table() == [("job2", "running", 2), ("job1", "running", 1), ("job3", "pending", 1)]

    cloud.advance(300)
    submit(cloud, "job4", 3)
    assert cloud.table() == [
        ("job2", "running", 2),
        ("job1", "preempting", 1),
        ("job4", "pending", 3),
        ("job3", "pending", 1),
    ]

    cloud.advance(60)  # job1's stop completes; job4 takes its instance
    assert cloud.table() == [
        ("job4", "running", 3),
        ("job2", "running", 2),
        ("job1", "preempted", 1),
        ("job3", "pending", 1),
    ]

    cloud.advance(240)  # job2 completes first; job1 resumes ahead of job3
    assert cloud.table() == [("job4", "running", 3), ("job1", "running", 1), ("job3", "pending", 1)]
    assert job(cloud, "job2")["state"] == "completed"

    cloud.advance(360)  # then job4
    assert job(cloud, "job4")["state"] == "completed"
    assert cloud.table() == [("job1", "running", 1), ("job3", "running", 1)]

    cloud.advance(600)
    assert cloud.table() == []
    assert {job(cloud, n)["state"] for n in ("job1", "job2", "job3", "job4")} == {"completed"}


def _blog_submissions(cloud):
    for name, priority in (("job1", 1), ("job2", 2), ("job3", 1)):
        submit(cloud, name, priority)
    cloud.advance(300)
    submit(cloud, "job4", 3)


def test_preempted_job_keeps_its_history(cloud):
    _blog_submissions(cloud)
    cloud.advance(1800)

    history = job(cloud, "job1")
    assert history["state"] == "completed"
    assert history["preemptions"] == 1
    first, second = history["attempts"]
    assert first["sagemaker_job_name"] == "job1"
    assert first["outcome"] == "preempted" and first["preempted_by"] == "job4"
    assert second["outcome"] == "completed"
    assert second["sagemaker_job_name"] != "job1"
    assert second["sagemaker_job_name"].startswith("job1-r2-")


def test_capacity_is_never_exceeded_in_sagemaker(cloud):
    _blog_submissions(cloud)
    cloud.advance(3600)
    # Stopping jobs hold their instances: the emulated account never saw more than 2.
    assert cloud.sagemaker.peak_in_use == {"ml.p5.48xlarge": 2}
