"""Jobs started around the queue on its capped types: counted as held until they end (by
their events, or by the sweep when an event is lost), never over the cap, and reported."""

import json

from tjq.local.calls import training_request
from tjq.local.cloud import LambdaContext
from tjq.table import outside_lines

from job_queue.handler import handle
from tests.conftest import G5, P5
from tests.integration.helpers import states, submit

C5 = "ml.c5.xlarge"


def _start_outside(cloud, name, instance_type=P5, **request):
    """Someone starts a job straight in SageMaker (a script, the console)."""
    body = {**training_request(name, instance_type=instance_type, run_seconds=1800), **request}
    status, answer = cloud.sagemaker.respond("CreateTrainingJob", json.dumps(body).encode())
    assert status == 200, answer
    cloud.advance(1)  # its InProgress event reaches the queue


def test_a_job_started_around_the_queue_holds_its_instances_until_it_ends(cloud):
    _start_outside(cloud, "notebook-run")
    _, listing = cloud.api("GET", "/jobs")
    (outside,) = listing["outside"]
    assert outside["sagemaker_job_name"] == "notebook-run"
    assert outside["instances"] == {P5: 1}
    (line,) = outside_lines(listing["outside"])  # what `smq status` prints
    assert line.startswith("outside the queue: notebook-run, 1 x ml.p5.48xlarge")

    submit(cloud, "a", 1, run_seconds=7200)
    submit(cloud, "b", 1, run_seconds=7200)
    assert states(cloud) == {"a": "running", "b": "pending"}  # 1 outside + 1 queued = cap 2

    cloud.advance(1800)  # the outside job completes: its instance goes to b
    assert states(cloud) == {"a": "running", "b": "running"}
    assert cloud.api("GET", "/jobs")[1]["outside"] == []


def test_the_queue_never_preempts_a_job_it_did_not_start(make_cloud):
    cloud = make_cloud({P5: 1})
    _start_outside(cloud, "notebook-run")
    submit(cloud, "urgent", 100)
    assert states(cloud) == {"urgent": "pending"}
    assert cloud.sagemaker.jobs["notebook-run"].status == "InProgress"


def test_the_sweep_forgets_an_outside_job_whose_end_event_was_lost(cloud):
    _start_outside(cloud, "notebook-run")
    submit(cloud, "a", 1, run_seconds=7200)
    submit(cloud, "b", 1, run_seconds=7200)
    cloud.lose_next_events(1)
    cloud.advance(1800)  # it completes, but the queue does not hear of it
    assert states(cloud)["b"] == "pending"
    cloud.sweep()
    assert states(cloud)["b"] == "running"
    assert cloud.api("GET", "/jobs")[1]["outside"] == []


def test_jobs_of_types_the_queue_does_not_cap_are_ignored(make_cloud):
    cloud = make_cloud({P5: 2, C5: 0}, warm_pool_quota={})
    cloud.sagemaker.account_limits[G5] = 1
    _start_outside(cloud, "cpu-job", instance_type=G5)
    assert cloud.api("GET", "/jobs")[1]["outside"] == []


def test_only_the_capped_groups_of_a_heterogeneous_outside_job_count(cloud):
    cloud.sagemaker.account_limits[C5] = 4
    groups = {
        "InstanceGroups": [
            {"InstanceGroupName": "gpu", "InstanceType": P5, "InstanceCount": 1},
            {"InstanceGroupName": "cpu", "InstanceType": C5, "InstanceCount": 4},
        ],
        "VolumeSizeInGB": 30,
    }
    body = {**training_request("ray-cluster", run_seconds=1800), "ResourceConfig": groups}
    assert cloud.sagemaker.respond("CreateTrainingJob", json.dumps(body).encode())[0] == 200
    # EventBridge matches the rule's InstanceGroups.InstanceType inside the list of groups;
    # moto's pattern matcher does not look into lists of objects, so the event is handed to
    # the Lambda as EventBridge would.
    for event in list(cloud.sagemaker.events):
        handle(event, LambdaContext(), cloud.deps)
    (outside,) = cloud.api("GET", "/jobs")[1]["outside"]
    assert outside["instances"] == {P5: 1}


def test_jobs_of_this_queue_are_not_counted_twice(cloud):
    submit(cloud, "a", 1, run_seconds=600)
    cloud.advance(10)
    assert cloud.api("GET", "/jobs")[1]["outside"] == []


def test_instances_outside_the_queue_are_a_metric(cloud, capsys):
    _start_outside(cloud, "notebook-run")
    capsys.readouterr()
    cloud.sweep()
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "_aws" in line]
    assert [r["InstancesOutsideQueue"] for r in records if "InstancesOutsideQueue" in r] == [[1.0]]
    cloud.advance(1800)
    capsys.readouterr()
    cloud.sweep()
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines() if "_aws" in line]
    assert [r["InstancesOutsideQueue"] for r in records if "InstancesOutsideQueue" in r] == [[0.0]]
