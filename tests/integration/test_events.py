"""SageMaker state-change events: each kind, and the ones that must change nothing."""

import copy

from tjq.local.cloud import LambdaContext

from job_queue.handler import handle
from tests.integration.helpers import job, states, submit


def _deliver(cloud, event):
    handle(copy.deepcopy(event), LambdaContext(), cloud.deps)


def _snapshot(cloud):
    return cloud.jobs(), {n: job(cloud, n) for n in states(cloud)}


def test_completed_job_frees_its_instance_for_the_next(cloud):
    submit(cloud, "a", 1, run_seconds=100)
    submit(cloud, "b", 1)
    submit(cloud, "c", 1)
    cloud.advance(100)
    assert job(cloud, "a")["state"] == "completed"
    assert states(cloud) == {"b": "running", "c": "running"}


def test_failed_job_shows_sagemaker_failure_reason_and_frees_capacity(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 1)
    submit(cloud, "c", 1)
    cloud.sagemaker.jobs["a"].end_reason = ("Failed", "AlgorithmError: loss is NaN")
    cloud.sagemaker.set_run_seconds("a", 30)
    cloud.advance(30)
    failed = job(cloud, "a")
    assert failed["state"] == "failed"
    assert failed["failure_reason"] == "AlgorithmError: loss is NaN"
    assert failed["attempts"][-1]["outcome"] == "failed"
    assert states(cloud)["c"] == "running"


def test_job_stopped_outside_the_queue_ends_stopped_and_is_not_requeued(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 1)
    submit(cloud, "c", 1)
    cloud.sagemaker.stop_training_job({"TrainingJobName": "a"})  # someone used the console
    cloud.advance(60)
    assert job(cloud, "a")["state"] == "stopped"
    assert states(cloud) == {"b": "running", "c": "running"}


def test_duplicate_event_changes_nothing(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 1)
    submit(cloud, "c", 1)
    cloud.advance(600)
    completed = [e for e in cloud.delivered if e["detail"]["TrainingJobName"] == "a"]
    before = _snapshot(cloud)
    _deliver(cloud, completed[0])  # EventBridge delivers at least once
    assert _snapshot(cloud) == before


def test_late_event_of_an_earlier_attempt_changes_nothing(cloud):
    submit(cloud, "low", 1)
    submit(cloud, "other", 2)
    submit(cloud, "urgent", 3)
    cloud.advance(60)  # low preempted and stopped
    (stopped,) = [e for e in cloud.delivered if e["detail"]["TrainingJobName"] == "low"]
    cloud.advance(600)  # other completes; low resumes as a new attempt
    assert job(cloud, "low")["state"] == "running"
    before = _snapshot(cloud)
    _deliver(cloud, stopped)
    late_completed = copy.deepcopy(stopped)
    late_completed["detail"]["TrainingJobStatus"] = "Completed"
    _deliver(cloud, late_completed)
    assert _snapshot(cloud) == before


def test_out_of_order_stopped_after_completed_changes_nothing(cloud):
    submit(cloud, "a", 1)
    cloud.advance(600)
    (completed,) = [e for e in cloud.delivered if e["detail"]["TrainingJobName"] == "a"]
    before = _snapshot(cloud)
    stopped = copy.deepcopy(completed)
    stopped["detail"]["TrainingJobStatus"] = "Stopped"
    _deliver(cloud, stopped)
    assert _snapshot(cloud) == before
    assert job(cloud, "a")["state"] == "completed"


def test_event_for_a_job_the_queue_did_not_start_is_ignored(cloud):
    submit(cloud, "a", 1)
    before = _snapshot(cloud)
    foreign = {
        "version": "0",
        "id": "1",
        "detail-type": "SageMaker Training Job State Change",
        "source": "aws.sagemaker",
        "account": "123456789012",
        "time": "2026-01-01T00:00:00Z",
        "region": "us-east-1",
        "resources": [],
        "detail": {"TrainingJobName": "a", "TrainingJobStatus": "Completed", "Tags": {}},
    }
    _deliver(cloud, foreign)
    other_queue = copy.deepcopy(foreign)
    other_queue["detail"]["Tags"] = {
        "training-job-queue:queue": "another-queue",
        "training-job-queue:job": "a",
    }
    _deliver(cloud, other_queue)
    no_detail = {"detail-type": "SageMaker Training Job State Change", "source": "aws.sagemaker"}
    _deliver(cloud, no_detail)
    assert _snapshot(cloud) == before


def test_event_for_a_job_no_longer_in_the_table_is_ignored(cloud):
    submit(cloud, "a", 1)
    cloud.advance(600)
    (completed,) = [e for e in cloud.delivered if e["detail"]["TrainingJobName"] == "a"]
    renamed = copy.deepcopy(completed)
    renamed["detail"]["Tags"]["training-job-queue:job"] = "expired-long-ago"
    _deliver(cloud, renamed)
    assert cloud.api("GET", "/jobs/expired-long-ago")[0] == 404


def test_only_ended_states_of_this_queue_reach_the_handler(cloud):
    submit(cloud, "a", 1)
    submit(cloud, "b", 2)
    submit(cloud, "c", 3)  # preempts a: InProgress, Stopping, Stopped, Completed events
    cloud.advance(1800)
    delivered = {
        (e["detail"]["TrainingJobName"], e["detail"]["TrainingJobStatus"]) for e in cloud.delivered
    }
    assert delivered and {status for _, status in delivered} <= {"Completed", "Failed", "Stopped"}
    assert ("a", "Stopped") in delivered


def test_unknown_event_kind_is_ignored(cloud):
    submit(cloud, "a", 1)
    before = _snapshot(cloud)
    assert (
        handle({"detail-type": "Something Else", "detail": {}}, LambdaContext(), cloud.deps) is None
    )
    assert _snapshot(cloud) == before
