"""Jobs that wait for other jobs, on the emulated SageMaker through the real handler: a
chain runs overnight in order, a failure cancels what depended on it (two levels down, in one
pass), a clean-up job runs only when its parent failed, and a dependent job holds back
nobody while it waits."""

import pytest
from tjq.local.calls import training_request
from tjq.queue_log import event_line, read_events

from job_queue.scheduler import Share, Strategy
from tests.conftest import P5
from tests.integration.helpers import job, states

BUGGY = "AlgorithmError: ExecuteUserScriptError: exit 1"


def state(cloud, *names: str) -> dict[str, str]:
    """The states of these jobs, ended or not."""
    return {name: job(cloud, name)["state"] for name in names}


def submit_after(cloud, name: str, depends_on: str | None = None, priority: int = 0, **kw):
    request = training_request(name, priority, **kw)
    if depends_on is not None:
        request["Tags"].append({"Key": "depends-on", "Value": depends_on})
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 201, body
    return body


def test_a_chain_of_three_runs_in_order_without_anyone_watching(make_cloud):
    cloud = make_cloud({P5: 2})
    submit_after(cloud, "train")
    answer = submit_after(cloud, "evaluate", "afterok:train")
    submit_after(cloud, "export", "afterok:evaluate")
    assert answer["job"]["state"] == "pending"
    assert answer["job"]["waiting_for"]["code"] == "dependency"
    assert answer["job"]["waiting_for"]["jobs"] == ["train"]
    assert answer["job"]["dependency"] == "afterok:train"
    assert answer["job"]["position"] is None  # out of line: no place yet
    # Expected to start once train is bound to end (its MaxRuntimeInSeconds: a day).
    train_started = job(cloud, "train")["first_started_at"]
    expected = job(cloud, "export")["expected_start"]["at_latest"]
    assert expected > job(cloud, "evaluate")["expected_start"]["at_latest"] > train_started
    # Two instances, one of them free: the dependent jobs wait all the same.
    assert states(cloud) == {"train": "running", "evaluate": "pending", "export": "pending"}
    cloud.advance(700)  # train completes; evaluate joins the line and starts
    assert states(cloud)["evaluate"] == "running"
    assert states(cloud)["export"] == "pending"
    cloud.advance(700)
    assert states(cloud)["export"] == "running"
    cloud.advance(700)
    assert set(state(cloud, "train", "evaluate", "export").values()) == {"completed"}
    events = list(read_events(cloud.logs, cloud.settings.queue_name))
    met = [event_line(e).split(" ", 1)[1] for e in events if e.get("dependency")]
    assert met == [
        "evaluate dependency met (afterok:train): in line",
        "export dependency met (afterok:evaluate): in line",
    ]
    history = [e["action"] for e in job(cloud, "export")["history"]]
    assert history == ["submitted", "dependency-met"]


def test_fan_in_waits_for_every_parent(make_cloud):
    cloud = make_cloud({P5: 2})
    submit_after(cloud, "short", run_seconds=100)
    submit_after(cloud, "long", run_seconds=1000)
    submit_after(cloud, "merge", "afterok:short,long")
    cloud.advance(300)  # short completed, long runs: an instance is free, merge waits
    assert states(cloud)["merge"] == "pending"
    assert job(cloud, "merge")["waiting_for"]["jobs"] == ["long"]
    cloud.advance(1000)
    assert states(cloud)["merge"] == "running"


def test_a_failed_parent_cancels_two_levels_of_children_in_one_pass(make_cloud):
    cloud = make_cloud({P5: 1})
    cloud.sagemaker.fail_next_jobs(1, BUGGY, after_seconds=60)
    submit_after(cloud, "train")
    submit_after(cloud, "evaluate", "afterok:train")
    submit_after(cloud, "export", "afterok:evaluate", priority=5)  # offered before evaluate
    submit_after(cloud, "cleanup", "afternotok:train")
    cloud.advance(200)
    assert state(cloud, "train", "evaluate", "export", "cleanup") == {
        "train": "failed",
        "evaluate": "cancelled",
        "export": "cancelled",
        "cleanup": "running",
    }
    assert job(cloud, "evaluate")["failure_reason"] == (
        "dependency never satisfied: train ended failed (afterok)"
    )
    assert job(cloud, "export")["failure_reason"] == (
        "dependency never satisfied: evaluate will never run (its own dependency) (afterok)"
    )


def test_the_clean_up_job_is_cancelled_when_its_parent_completes(make_cloud):
    cloud = make_cloud({P5: 1})
    submit_after(cloud, "train")
    submit_after(cloud, "cleanup", "afternotok:train")
    cloud.advance(700)
    assert state(cloud, "train", "cleanup") == {"train": "completed", "cleanup": "cancelled"}


def test_a_cancelled_parent_cancels_an_afterok_child_and_releases_an_after_one(make_cloud):
    cloud = make_cloud({P5: 1})
    submit_after(cloud, "blocker")
    submit_after(cloud, "train")
    submit_after(cloud, "evaluate", "afterok:train")
    submit_after(cloud, "report", "after:train")
    status, _ = cloud.api("DELETE", "/jobs/train")
    assert status == 200
    assert state(cloud, "evaluate") == {"evaluate": "cancelled"}
    assert states(cloud)["report"] == "pending"  # in line now, behind blocker
    assert job(cloud, "report")["waiting_for"]["code"] != "dependency"


def test_a_preempted_parent_resumes_and_its_children_keep_waiting(make_cloud):
    cloud = make_cloud({P5: 1})
    submit_after(cloud, "train", run_seconds=600)
    submit_after(cloud, "evaluate", "afterok:train")
    cloud.advance(60)
    submit_after(cloud, "urgent", priority=9, run_seconds=100)
    cloud.advance(120)
    assert states(cloud)["train"] in ("preempting", "preempted")
    assert states(cloud)["evaluate"] == "pending"
    cloud.advance(300)  # urgent done, train resumes
    assert states(cloud)["train"] == "running"
    assert states(cloud)["evaluate"] == "pending"
    cloud.advance(1200)
    assert job(cloud, "evaluate")["state"] in ("running", "completed")


def test_a_dependent_job_whose_parents_already_completed_starts_at_once(make_cloud):
    cloud = make_cloud({P5: 1})
    submit_after(cloud, "train")
    cloud.advance(700)
    answer = submit_after(cloud, "evaluate", "afterok:train")
    assert answer["job"]["state"] == "running"


def test_the_dependency_tag_is_not_sent_to_sagemaker(make_cloud):
    cloud = make_cloud({P5: 1})
    submit_after(cloud, "a")
    submit_after(cloud, "b")
    cloud.advance(1400)
    submit_after(cloud, "merge", "afterok:a,b")  # a comma: SageMaker refuses it in a tag
    assert states(cloud)["merge"] == "running"
    sagemaker_job = job(cloud, "merge")["sagemaker_job_name"]
    assert "depends-on" not in cloud.sagemaker.jobs[sagemaker_job].tags


@pytest.mark.parametrize(
    ("depends_on", "message"),
    [
        ("afterok:nobody", "Tags.depends-on must name jobs of this queue: there is no job nobody"),
        ("afterok:merge", "Tags.depends-on must name other jobs than merge itself"),
        ("afterany:train", "Tags.depends-on must have a dependency type among after, afterok"),
        (
            "afterok:" + ",".join(f"j{i}" for i in range(21)),
            "Tags.depends-on must name at most 20 jobs, got 21",
        ),
        ("afterok:bad/name", "Tags.depends-on must name queue jobs, got 'bad/name'"),
    ],
)
def test_a_bad_dependency_is_refused_naming_the_field_and_queues_nothing(
    cloud, depends_on, message
):
    submit_after(cloud, "train")
    request = training_request("merge", 0)
    request["Tags"].append({"Key": "depends-on", "Value": depends_on})
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 400
    assert body["message"].startswith(message), body["message"]
    assert set(states(cloud)) == {"train"}


def test_a_job_out_of_line_can_be_reprioritised_and_cancelled(make_cloud):
    cloud = make_cloud({P5: 1})
    submit_after(cloud, "train")
    submit_after(cloud, "evaluate", "afterok:train")
    submit_after(cloud, "report", "afterok:train")
    status, body = cloud.api("PUT", "/jobs/evaluate/priority", {"priority": 7})
    assert (status, body["job"]["priority"]) == (200, 7)
    assert body["job"]["waiting_for"]["code"] == "dependency"
    status, _ = cloud.api("DELETE", "/jobs/report")
    assert status == 200
    assert {row["name"] for row in cloud.jobs()} == {"train", "evaluate"}
    cloud.advance(700)
    assert state(cloud, "evaluate", "report") == {"evaluate": "running", "report": "cancelled"}
    assert job(cloud, "evaluate")["priority"] == 7


def test_with_quota_shares_a_child_joins_its_shares_line(make_cloud):
    teams = (
        Share("vision", {P5: 1}, strategy=Strategy.LEND),
        Share("nlp", {P5: 1}, strategy=Strategy.LEND),
    )
    cloud = make_cloud({}, shares=teams)
    submit_after(cloud, "train", share="vision")
    submit_after(cloud, "evaluate", "afterok:train", share="vision")
    assert job(cloud, "evaluate")["waiting_for"]["code"] == "dependency"
    cloud.advance(700)
    evaluate = job(cloud, "evaluate")
    assert (evaluate["state"], evaluate["share"]) == ("running", "vision")
