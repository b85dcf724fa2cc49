"""The sample events in events/ (for `sam local invoke -e`) work with the handler."""

import json
import pathlib

from tjq.local.calls import ROLE_ARN
from tjq.local.cloud import LambdaContext

from job_queue.handler import handle
from job_queue.scheduler import Policy
from job_queue.scheduler.fair_share import FairShare

EVENTS = pathlib.Path(__file__).resolve().parents[2] / "events"
NAME = "pytorch-training-2026-01-01-00-00-00-000"


def _invoke(cloud, file: str):
    return handle(json.loads((EVENTS / file).read_text()), LambdaContext(), cloud.deps)


def test_api_samples_answer_as_documented(cloud):
    added = _invoke(cloud, "api-add-job.json")
    assert added["statusCode"] == 201
    assert json.loads(added["body"])["job"]["name"] == NAME
    assert json.loads(_invoke(cloud, "api-list-jobs.json")["body"])["jobs"][0]["name"] == NAME
    assert _invoke(cloud, "api-get-job.json")["statusCode"] == 200
    changed = _invoke(cloud, "api-change-priority.json")
    assert json.loads(changed["body"])["job"]["priority"] == 5
    cancelled = _invoke(cloud, "api-cancel-job.json")
    assert json.loads(cancelled["body"])["job"]["state"] == "cancelling"


def test_state_change_samples_settle_the_job(cloud):
    assert _invoke(cloud, "api-add-job.json")["statusCode"] == 201
    _invoke(cloud, "sagemaker-failed.json")
    failed = json.loads(_invoke(cloud, "api-get-job.json")["body"])["job"]
    assert failed["state"] == "failed"
    assert failed["failure_reason"].startswith("AlgorithmError")
    # Later events for the same attempt change nothing.
    _invoke(cloud, "sagemaker-completed.json")
    _invoke(cloud, "sagemaker-stopped.json")
    _invoke(cloud, "schedule-reconcile.json")
    assert json.loads(_invoke(cloud, "api-get-job.json")["body"])["job"]["state"] == "failed"


def test_samples_use_an_allowed_role():
    body = json.loads(json.loads((EVENTS / "api-add-job.json").read_text())["body"])
    assert body["RoleArn"] == ROLE_ARN


def test_api_samples_carry_their_callers_and_the_trail_records_them(make_cloud):
    cloud = make_cloud(admins=("arn:aws:iam::123456789012:role/QueueAdmin",))
    _invoke(cloud, "api-add-job.json")
    _invoke(cloud, "api-change-priority.json")
    job = json.loads(_invoke(cloud, "api-get-job.json")["body"])["job"]
    alice = "arn:aws:sts::123456789012:assumed-role/DataScientist/alice"
    assert job["submitted_by"] == alice
    assert [(h["action"], h["by"]) for h in job["history"]] == [
        ("submitted", alice),
        ("priority-changed", alice),
    ]


def test_share_samples_replace_and_list_the_shares(make_cloud):
    # The sample is signed by a session of the QueueAdmin role: an admin.
    cloud = make_cloud(admins=("arn:aws:iam::123456789012:role/QueueAdmin",))
    replaced = _invoke(cloud, "api-replace-shares.json")
    assert replaced["statusCode"] == 200, replaced["body"]
    listed = json.loads(_invoke(cloud, "api-list-shares.json")["body"])
    assert [s["name"] for s in listed["shares"]] == ["vision", "language"]
    assert listed["capacity"] == {"ml.p5.48xlarge": 2}
    assert listed["changed"]["by"] == "arn:aws:sts::123456789012:assumed-role/QueueAdmin/bob"


def test_outside_job_sample_is_counted_as_held(cloud):
    _invoke(cloud, "sagemaker-outside-in-progress.json")
    listed = json.loads(_invoke(cloud, "api-list-jobs.json")["body"])
    assert [j["sagemaker_job_name"] for j in listed["outside"]] == ["started-from-the-console"]


def test_queue_event_samples_are_what_the_queue_publishes_and_what_its_rules_match(cloud):
    from moto.events.models import EventPattern

    from job_queue import queue_events

    submit_body = json.loads(json.loads((EVENTS / "api-add-job.json").read_text())["body"])
    _invoke(cloud, "api-add-job.json")
    published = [
        json.loads(r["message"])
        for r in cloud.logs.filter_log_events(
            logGroupName=queue_events.log_group(cloud.settings.queue_name)
        )["events"]
    ]
    assert published, "the submission was published"
    rule = EventPattern.load(json.dumps(queue_events.pattern("training-job-queue")))
    for file in ("queue-job-preempted.json", "queue-job-completed.json"):
        sample = json.loads((EVENTS / file).read_text())
        assert set(published[0]) <= set(sample), file  # EventBridge adds "account"
        assert set(sample["detail"]) == set(published[0]["detail"]), file
        assert rule.matches_event(sample), file
        assert sample["detail"]["job"] == submit_body["TrainingJobName"]


def test_the_usage_sample_charges_a_role_session_to_its_role(make_cloud):
    cloud = make_cloud(policy=Policy(fair_share=FairShare(half_life_s=86400.0)))
    _invoke(cloud, "api-add-job.json")  # by a session of the role DataScientist
    usage = json.loads(_invoke(cloud, "api-list-usage.json")["body"])
    (row,) = usage["submitters"]
    assert row["submitter"] == "arn:aws:iam::123456789012:role/DataScientist"
    assert row["holds_instances"] == 1 and row["weight"] == 1


def test_the_weights_sample_sets_a_weight_an_admin_chose(make_cloud):
    cloud = make_cloud(
        policy=Policy(fair_share=FairShare(half_life_s=86400.0)),
        admins=("arn:aws:iam::123456789012:role/QueueAdmin",),
    )
    _invoke(cloud, "api-add-job.json")
    answer = _invoke(cloud, "api-set-fair-share-weights.json")
    assert answer["statusCode"] == 200, answer["body"]
    (row,) = json.loads(answer["body"])["submitters"]
    assert row["weight"] == 2
    usage = json.loads(_invoke(cloud, "api-list-usage.json")["body"])
    assert usage["changed"]["by"] == "arn:aws:sts::123456789012:assumed-role/QueueAdmin/bob"


def test_the_drain_and_resume_samples_stop_and_restart_the_queue(make_cloud):
    cloud = make_cloud(admins=("arn:aws:iam::123456789012:role/QueueAdmin",))
    _invoke(cloud, "api-add-job.json")
    cloud.advance(60)
    drained = _invoke(cloud, "api-drain-queue.json")
    assert drained["statusCode"] == 200, drained["body"]
    (hold,) = json.loads(drained["body"])["holds"]
    assert (hold["drain"], hold["by"]) == (
        True,
        "arn:aws:sts::123456789012:assumed-role/QueueAdmin/bob",
    )
    assert json.loads(_invoke(cloud, "api-get-job.json")["body"])["job"]["state"] == "preempting"
    cloud.advance(120)
    resumed = _invoke(cloud, "api-resume-queue.json")
    assert json.loads(resumed["body"])["holds"] == []
    assert json.loads(_invoke(cloud, "api-get-job.json")["body"])["job"]["state"] in (
        "starting",
        "running",
    )
