"""Helper instance types the queue does not cap: a heterogeneous job (a GPU group plus CPU
helpers, as a Ray cluster on SageMaker) is held back only by its capped groups."""

from tjq.local.cloud import training_request
from tjq.table import queue_table

from tests.conftest import P5
from tests.integration.helpers import job, states

C5 = "ml.c5.18xlarge"


def _ray_job(name, gpus=1, helpers=8):
    request = training_request(name, 1)
    request["ResourceConfig"] = {
        "InstanceGroups": [
            {"InstanceGroupName": "gpu", "InstanceType": P5, "InstanceCount": gpus},
            {"InstanceGroupName": "cpu", "InstanceType": C5, "InstanceCount": helpers},
        ],
        "VolumeSizeInGB": 30,
    }
    return request


def test_uncapped_helpers_never_hold_a_job_back_and_are_never_counted(make_cloud):
    cloud = make_cloud({P5: 1, C5: "unlimited"})
    status, body = cloud.api("POST", "/add-job", _ray_job("ray-a", helpers=500))
    assert status == 201, body
    assert cloud.api("POST", "/add-job", _ray_job("ray-b"))[0] == 201
    # Only the one p5 holds ray-b back; 508 helper instances count against nothing.
    assert states(cloud) == {"ray-a": "running", "ray-b": "pending"}
    rows = {row["name"]: row for row in cloud.jobs()}
    assert rows["ray-a"]["instances"] == {P5: 1, C5: 500}
    assert rows["ray-a"]["helpers"] == {C5: 500}
    assert "1 x ml.p5.48xlarge + 500 x ml.c5.18xlarge" in queue_table(cloud.jobs())
    assert job(cloud, "ray-b")["instances"] == {P5: 1, C5: 8}
    listing = cloud.api("GET", "/jobs")[1]
    assert (listing["capacity"], listing["uncapped"]) == ({P5: 1}, [C5])

    cloud.advance(600)  # ray-a completes: its p5 goes to ray-b
    assert job(cloud, "ray-a")["state"] == "completed"
    assert states(cloud) == {"ray-b": "running"}


def test_a_job_only_on_uncapped_types_is_refused_naming_the_field(make_cloud):
    cloud = make_cloud({P5: 1, C5: "unlimited"})
    status, body = cloud.api("POST", "/add-job", training_request("cpu-only", instance_type=C5))
    assert status == 400
    assert body["message"].startswith("ResourceConfig.InstanceType: ml.c5.18xlarge is uncapped")
