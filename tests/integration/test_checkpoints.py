"""Preemption without lost work, through the real handler: every attempt of a job keeps its
checkpoints in one place, and the queue preempts first the job whose stop throws away least."""

import time

import pytest
from tjq.local.calls import training_request
from tjq.local.clock import SimClock
from tjq.local.cloud import LocalCloud

from tests.integration.helpers import job, running, submit

P5 = "ml.p5.48xlarge"
BASE = "s3://team-checkpoints/queue/"


def declared(how: str) -> dict:
    return {"Key": "checkpoint", "Value": how}


def submit_tagged(cloud, name, priority, *extra_tags, **request):
    body = training_request(name, priority)
    body["Tags"] += list(extra_tags)
    body.update(request)
    status, answer = cloud.api("POST", "/add-job", body)
    assert status == 201, answer
    return answer


def checkpoint_uris(cloud, name):
    """CheckpointConfig.S3Uri of each SageMaker job started for queued job ``name``."""
    return [
        sent.request.get("CheckpointConfig", {}).get("S3Uri")
        for sagemaker_name, sent in sorted(
            cloud.sagemaker.jobs.items(), key=lambda i: i[1].created_at
        )
        if sent.tags.get("training-job-queue:job") == name
    ]


def preempt_and_resume(cloud, name):
    """``name`` runs, is preempted by a higher-priority job, and resumes once it ends."""
    cloud.advance(60)
    submit(cloud, "urgent", 9, instance_count=2, run_seconds=300)
    cloud.advance(120)
    assert job(cloud, name)["preemptions"] == 1
    cloud.advance(600)


def test_every_attempt_of_a_job_sees_the_same_checkpoint_location(make_cloud):
    cloud = make_cloud(checkpoint_s3_uri=BASE)
    submit(cloud, "resumable", 1, instance_count=2)
    preempt_and_resume(cloud, "resumable")

    uris = checkpoint_uris(cloud, "resumable")
    assert uris == [f"{BASE}resumable/", f"{BASE}resumable/"]
    assert job(cloud, "resumable")["checkpoint_s3_uri"] == f"{BASE}resumable/"


def test_a_job_that_sets_its_own_checkpoint_location_keeps_it(make_cloud):
    cloud = make_cloud(checkpoint_s3_uri=BASE)
    own = {"S3Uri": "s3://my-bucket/exp-7/", "LocalPath": "/opt/ml/checkpoints"}
    submit_tagged(
        cloud,
        "own",
        1,
        CheckpointConfig=own,
        ResourceConfig={"InstanceType": P5, "InstanceCount": 2, "VolumeSizeInGB": 30},
    )
    preempt_and_resume(cloud, "own")

    assert [
        cloud.sagemaker.jobs[n].request["CheckpointConfig"]
        for n in cloud.sagemaker.jobs
        if n.startswith("own")
    ] == [own, own]


def test_without_a_checkpoint_location_the_request_is_left_as_it_is(make_cloud):
    cloud = make_cloud()
    submit(cloud, "plain", 1)
    assert "CheckpointConfig" not in cloud.sagemaker.jobs["plain"].request
    assert job(cloud, "plain")["checkpoint_s3_uri"] is None


def test_the_job_that_saves_on_stop_is_preempted_first_and_loses_nothing(make_cloud):
    cloud = make_cloud(checkpoint_s3_uri=BASE)
    submit_tagged(cloud, "saves-on-stop", 1, declared("on-stop"))
    cloud.advance(300)
    submit(cloud, "saves-nothing", 1)  # started later: without the rule, the victim
    cloud.advance(60)

    submit(cloud, "urgent", 9)
    preempted = job(cloud, "saves-on-stop")
    assert preempted["state"] == "preempting"
    assert running(cloud) == {"saves-nothing"}
    assert preempted["checkpoint"] == "on-stop"
    entry = preempted["history"][-1]
    assert (entry["action"], entry["preempted_by"], entry["lost_work_seconds"]) == (
        "preempted",
        "urgent",
        0,
    )


def test_a_job_that_saves_nothing_records_its_whole_attempt_as_lost(make_cloud):
    cloud = make_cloud(capacity={P5: 1})
    submit(cloud, "saves-nothing", 1)
    cloud.advance(420)
    submit(cloud, "urgent", 9)
    assert job(cloud, "saves-nothing")["history"][-1]["lost_work_seconds"] == 420


def test_the_newest_checkpoint_in_s3_tells_how_much_an_interval_job_would_lose(make_cloud):
    # S3 stamps objects with the wall clock: the simulated clock is set to reach it.
    clock = SimClock(start=time.time() - 3000)
    cloud = make_cloud(clock=clock, checkpoint_s3_uri=BASE, run_seconds=86400)
    cloud.s3.create_bucket(Bucket="team-checkpoints")
    submit_tagged(cloud, "hourly", 1, declared("3600"))
    submit(cloud, "saves-nothing", 1)
    cloud.advance(3000)
    # Without a reading, "hourly" would lose 3000 s, as much as "saves-nothing" (the later
    # submitted of the two, then, is the victim). It has just saved:
    cloud.s3.put_object(Bucket="team-checkpoints", Key="queue/hourly/step-900.pt", Body=b"x")

    submit(cloud, "urgent", 9)
    assert job(cloud, "hourly")["state"] == "preempting"
    # S3 stamps an object to the whole second, rounded down: up to a second before "now".
    assert job(cloud, "hourly")["history"][-1]["lost_work_seconds"] <= 1
    assert running(cloud) == {"saves-nothing"}


def test_an_interval_job_whose_checkpoints_cannot_be_read_is_judged_by_its_interval(make_cloud):
    cloud = make_cloud(checkpoint_s3_uri="s3://no-such-bucket/", run_seconds=86400)
    submit_tagged(cloud, "every-10-min", 1, declared("600"))
    cloud.advance(100)
    submit(cloud, "saves-nothing", 1)
    cloud.advance(700)  # every-10-min: 800 s since start, 200 s since its last interval

    submit(cloud, "urgent", 9)
    assert job(cloud, "every-10-min")["state"] == "preempting"
    assert job(cloud, "every-10-min")["history"][-1]["lost_work_seconds"] == 200
    assert running(cloud) == {"saves-nothing"}


@pytest.mark.parametrize("how", ["often", "-1", "0"])
def test_a_bad_checkpoint_tag_is_refused_and_nothing_is_queued(cloud, how):
    body = training_request("bad", 1)
    body["Tags"].append(declared(how))
    status, answer = cloud.api("POST", "/add-job", body)
    assert status == 400
    assert "Tags.checkpoint must be 'on-stop' or a positive number of seconds" in answer["message"]
    assert cloud.api("GET", "/jobs/bad")[0] == 404


def test_a_checkpoint_location_that_is_not_an_s3_uri_is_refused_at_start_up():
    with pytest.raises(ValueError, match="'team-checkpoints/' is not an s3:// URI"):
        LocalCloud(capacity={P5: 1}, checkpoint_s3_uri="team-checkpoints/")
