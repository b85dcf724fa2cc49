"""What an event or a description of a job no queue started means: a scenario table."""

import pytest

from job_queue import outside
from job_queue.models import JobState
from job_queue.sagemaker import SageMakerStatus, TrainingJobStatus
from job_queue.scheduler import ActiveJob, WaitingJob, plan
from job_queue.scheduler.snapshot import OutsideJob, Snapshot

P5, C5 = "ml.p5.48xlarge", "ml.c5.xlarge"
CAPPED = {P5}


def _detail(status, resource=None, tags=None):
    return {
        "TrainingJobName": "nb",
        "TrainingJobStatus": status,
        "ResourceConfig": resource or {"InstanceType": P5, "InstanceCount": 2},
        "Tags": tags or {},
    }


GROUPS = {
    "InstanceGroups": [
        {"InstanceGroupName": "gpu", "InstanceType": P5, "InstanceCount": 1},
        {"InstanceGroupName": "cpu", "InstanceType": C5, "InstanceCount": 8},
    ]
}


@pytest.mark.parametrize(
    ("detail", "decision"),
    [
        (_detail("InProgress"), outside.Hold(OutsideJob("nb", {P5: 2}, 100.0))),
        (_detail("Completed"), outside.Forget("nb", "it is Completed")),
        (_detail("Stopped"), outside.Forget("nb", "it is Stopped")),
        (_detail("Stopping"), None),  # still holds; the end event follows
        (_detail("InProgress", GROUPS), outside.Hold(OutsideJob("nb", {P5: 1}, 100.0))),
        (_detail("InProgress", {"InstanceType": C5, "InstanceCount": 1}), None),  # not capped
        (_detail("InProgress", {"InstanceType": P5}), None),  # a shape the queue cannot count
    ],
)
def test_an_outside_jobs_event(detail, decision):
    assert outside.on_event(detail, CAPPED, now=100.0) == decision


def test_jobs_of_any_queue_are_not_outside_jobs():
    assert outside.is_outside({})
    assert not outside.is_outside({"training-job-queue:queue": "another-queue"})


@pytest.mark.parametrize(
    ("found", "forgotten"),
    [
        (None, True),
        (TrainingJobStatus("nb", SageMakerStatus.FAILED, "boom"), True),
        (TrainingJobStatus("nb", SageMakerStatus.IN_PROGRESS, None), False),
    ],
)
def test_the_sweep_forgets_an_outside_job_that_ended(found, forgotten):
    job = OutsideJob("nb", {P5: 1}, 0.0)
    assert (outside.on_description(job, found) is not None) is forgotten


def _waiting(name, priority):
    return WaitingJob(name=name, priority=priority, seq=1, demand={P5: 1})


def test_an_outside_job_takes_capacity_and_is_never_a_victim():
    running = ActiveJob(
        name="low", priority=0, seq=1, demand={P5: 1}, state=JobState.RUNNING, started_at=0.0
    )
    seen = Snapshot(10.0, {P5: 2}, [running], outside=[OutsideJob("nb", {P5: 1}, 0.0)])
    found = plan(seen, [_waiting("urgent", 9)])
    # Of two instances, the outside job holds one: the urgent job preempts the queue's job.
    assert [p.victim.name for p in found.preemptions] == ["low"]


def test_a_free_instance_beside_an_outside_job_starts_the_next_job():
    found = plan(
        Snapshot(0.0, {P5: 2}, outside=[OutsideJob("nb", {P5: 1}, 0)]), [_waiting("next", 0)]
    )
    assert [s.name for s in found.starts] == ["next"]
    full = plan(
        Snapshot(0.0, {P5: 1}, outside=[OutsideJob("nb", {P5: 1}, 0)]), [_waiting("next", 0)]
    )
    assert not full.starts and not full.preemptions
