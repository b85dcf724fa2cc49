"""What a job may go through before the queue fails it, on the emulated SageMaker through the
real handler: failed attempts tried again (RetryOnFailure) — an infrastructure failure puts
the job back in its place to resume; its own error, or one failure too many, fails it — and
preemptions (max-preemptions, MaxPreemptions)."""

from tjq.local.calls import training_request
from tjq.queue_log import read_events

from job_queue.limits import Limits, RetryRule
from tests.conftest import P5
from tests.integration.helpers import job, states, submit

INTERNAL = "InternalServerError: We encountered an internal error. Please try again."


def test_a_job_failing_twice_for_the_infrastructure_then_completes(make_cloud):
    cloud = make_cloud({P5: 1})
    cloud.sagemaker.fail_next_jobs(2, INTERNAL, after_seconds=120)
    submit(cloud, "long", 1)
    submit(cloud, "next", 1)  # submitted after it: long keeps its place ahead of it
    for _ in range(3):
        cloud.advance(200)
        assert states(cloud)["next"] == "pending", "long resumes ahead of next"
    cloud.advance(600)
    finished = job(cloud, "long")
    assert finished["state"] == "completed"
    outcomes = [(a["outcome"], a["failure_reason"]) for a in finished["attempts"]]
    assert outcomes == [("failed", INTERNAL), ("failed", INTERNAL), ("completed", None)]
    assert finished["failure_reason"] is None
    events = list(read_events(cloud.logs, cloud.settings.queue_name, job="long"))
    retries = [e["reason"] for e in events if e["from"] == "running" and e["to"] == "pending"]
    assert retries == [
        f"failed, retried (1 of 3 attempts): {INTERNAL}",
        f"failed, retried (2 of 3 attempts): {INTERNAL}",
    ]


def test_one_failure_too_many_fails_the_job(make_cloud):
    cloud = make_cloud({P5: 1}, limits=Limits((RetryRule("InternalServerError*", 2),)))
    cloud.sagemaker.fail_next_jobs(2, INTERNAL, after_seconds=60)
    submit(cloud, "long", 1)
    cloud.advance(200)
    cloud.advance(200)
    failed = job(cloud, "long")
    assert failed["state"] == "failed"
    assert failed["failure_reason"] == INTERNAL
    assert [a["outcome"] for a in failed["attempts"]] == ["failed", "failed"]


def test_the_jobs_own_error_fails_it_at_once(make_cloud):
    cloud = make_cloud({P5: 1})
    cloud.sagemaker.fail_next_jobs(1, "AlgorithmError: ExecuteUserScriptError: exit 1", 60)
    submit(cloud, "buggy", 1)
    cloud.advance(200)
    assert job(cloud, "buggy")["state"] == "failed"
    assert len(job(cloud, "buggy")["attempts"]) == 1


def _with_cap(name: str, priority: int, cap: str) -> dict:
    request = training_request(name, priority)
    request["Tags"].append({"Key": "max-preemptions", "Value": cap})
    return request


def test_a_job_preempted_past_its_cap_fails_instead_of_going_back_in_line(make_cloud):
    cloud = make_cloud({P5: 1})
    status, body = cloud.api("POST", "/add-job", _with_cap("low", 0, "1"))
    assert status == 201, body
    cloud.advance(60)
    submit(cloud, "urgent-1", 5)
    cloud.advance(60)  # low's first preemption: back in line
    assert job(cloud, "low")["state"] == "preempted"
    cloud.advance(600)  # urgent-1 completes; low resumes
    assert job(cloud, "low")["state"] == "running"
    submit(cloud, "urgent-2", 5)
    cloud.advance(60)
    low = job(cloud, "low")
    assert low["state"] == "failed"
    assert low["failure_reason"] == "preempted 2 times, more than its max-preemptions (1) allows"
    preempted = [e for e in low["history"] if e["action"] == "preempted"]
    assert [e["preempted_by"] for e in preempted] == ["urgent-1", "urgent-2"]
    assert states(cloud)["urgent-2"] == "running"


def test_the_queue_default_caps_jobs_without_the_tag(make_cloud):
    cloud = make_cloud({P5: 1}, limits=Limits(max_preemptions=0))
    submit(cloud, "low", 0)
    cloud.advance(60)
    submit(cloud, "urgent", 5)
    cloud.advance(60)
    assert job(cloud, "low")["state"] == "failed"


def test_a_cap_that_is_not_a_whole_number_is_refused_naming_the_tag(cloud):
    status, body = cloud.api("POST", "/add-job", _with_cap("low", 0, "two"))
    assert status == 400
    assert body["message"] == "Tags.max-preemptions must be a whole number from 0, got 'two'"
    assert cloud.jobs() == []


def test_a_job_is_stopped_once_its_attempts_ran_past_its_max_total_runtime(make_cloud):
    cloud = make_cloud({P5: 1}, run_seconds=3600)
    request = training_request("long", 0)
    request["Tags"].append({"Key": "max-total-runtime", "Value": "900"})
    assert cloud.api("POST", "/add-job", request)[0] == 201
    cloud.advance(600)
    submit(cloud, "urgent", 5, run_seconds=300)
    cloud.advance(400)  # urgent runs and completes; long resumes with 600 s used
    assert job(cloud, "long")["state"] == "running"
    for _ in range(8):  # the one-minute sweep
        cloud.advance(60)
        cloud.sweep()
    cloud.advance(120)  # the stop lands
    stopped = job(cloud, "long")
    assert stopped["state"] == "failed"
    assert stopped["failure_reason"].endswith("more than its max-total-runtime (900 s) allows")
    assert 900 < stopped["total_runtime_seconds"] <= 1000
    assert [a["outcome"] for a in stopped["attempts"]] == ["preempted", "stopped"]
    summary = stopped["preemption_summary"]
    assert summary["preempted_attempt_count"] == 1
    (preempted,) = summary["recent_preempted_attempts"]
    assert preempted["preempted_by"] == "urgent"
    assert stopped["history"][-1]["action"] == "limit-reached"


def test_a_max_total_runtime_that_is_not_seconds_is_refused_naming_the_tag(cloud):
    request = training_request("long", 0)
    request["Tags"].append({"Key": "max-total-runtime", "Value": "1h"})
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 400
    assert body["message"] == (
        "Tags.max-total-runtime must be a whole number of seconds above 0, got '1h'"
    )
    assert cloud.jobs() == []
