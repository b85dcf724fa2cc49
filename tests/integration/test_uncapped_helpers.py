"""Helper instance types the queue does not cap: a heterogeneous job (a GPU group plus CPU
helpers, as a Ray cluster on SageMaker) is held back only by its capped groups."""

from tjq.local.calls import training_request
from tjq.table import queue_table

from job_queue.share_config import parse_shares
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


def test_a_job_only_on_uncapped_types_starts_at_once_and_holds_nothing(make_cloud):
    cloud = make_cloud({P5: 1, C5: "unlimited"})
    assert cloud.api("POST", "/add-job", training_request("gpu", 1))[0] == 201
    assert cloud.api("POST", "/add-job", training_request("gpu-waits", 1))[0] == 201
    # A CPU preprocessing job through the same queue: behind a waiting GPU job, it runs.
    status, body = cloud.api("POST", "/add-job", training_request("cpu-only", instance_type=C5))
    assert status == 201, body
    assert states(cloud) == {"gpu": "running", "gpu-waits": "pending", "cpu-only": "running"}
    rows = {row["name"]: row for row in cloud.jobs()}
    assert rows["cpu-only"]["instances"] == {C5: 1}
    assert rows["cpu-only"]["helpers"] == {C5: 1}
    assert cloud.api("POST", "/add-job", training_request("cpu-2", instance_type=C5))[0] == 201
    assert states(cloud)["cpu-2"] == "running"  # never counted: any number run at once

    cloud.advance(600)  # tracked like any job: it completes, and the p5 goes on as before
    assert job(cloud, "cpu-only")["state"] == "completed"
    assert states(cloud) == {"gpu-waits": "running"}


def test_with_shares_an_uncapped_job_needs_no_share_but_one_it_names_must_exist(make_cloud):
    team = {
        "name": "team",
        "capacity": {P5: 1},
        "strategy": "RESERVE",
        "in_share_preemption": False,
    }
    shares = parse_shares([team])
    cloud = make_cloud({P5: 1, C5: "unlimited"}, shares=shares)
    plain = training_request("cpu-plain", instance_type=C5)
    assert cloud.api("POST", "/add-job", plain)[0] == 201
    named = training_request("cpu-team", instance_type=C5, share="team")
    assert cloud.api("POST", "/add-job", named)[0] == 201
    assert states(cloud) == {"cpu-plain": "running", "cpu-team": "running"}
    assert job(cloud, "cpu-team")["share"] == "team"

    unknown = training_request("cpu-lost", instance_type=C5, share="nosuch")
    status, body = cloud.api("POST", "/add-job", unknown)
    assert status == 400
    assert "share 'nosuch' does not exist" in body["message"]
