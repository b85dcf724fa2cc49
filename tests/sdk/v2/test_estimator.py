"""`estimator.fit()` with QueueTrainingJobSession: the real SageMaker SDK v2, over HTTP, to
the local API. Nothing of the SDK or of the queue is mocked."""

import threading

import pytest
from sagemaker.estimator import Estimator
from sagemaker.exceptions import UnexpectedStatusException
from sagemaker.pytorch import PyTorch
from tjq import QueueTrainingJobSession
from tjq.api import QueueClient
from tjq.errors import InvalidJob
from tjq.local.calls import ROLE_ARN

from tests.client.conftest import G4, G5, P5, resumed_attempts_finish_at_once, wait_until
from tests.sdk.conftest import priority_tag


@pytest.fixture
def session(local_env, said):
    return QueueTrainingJobSession(poll_seconds=0.2, out=said.append)


def pytorch(session, source, instance_type=P5, tags=(), **kwargs):
    return PyTorch(
        entry_point="train.py",
        source_dir=source,
        role=ROLE_ARN,
        instance_type=instance_type,
        instance_count=1,
        framework_version="2.3",
        py_version="py311",
        sagemaker_session=session,
        tags=list(tags),
        **kwargs,
    )


def test_fit_without_waiting_queues_the_job_with_its_priority(session, source, unique, said):
    name = unique()
    estimator = pytorch(session, source, tags=priority_tag(3, seconds=30))
    estimator.fit(wait=False, job_name=name)

    job = QueueClient.from_environment().job(name)
    assert job["priority"] == 3
    assert job["state"] in ("running", "pending")
    assert said and said[0].startswith(f"[queue] {name}: ")
    # The request is the SDK's own: the entry point and the uploaded source.
    submitted = session.queue.job(name)
    assert submitted["instance_type"] == P5
    assert estimator.latest_training_job.name == name
    session.queue.cancel(name)


def test_session_priority_applies_to_jobs_without_a_tag(local_env, source, unique):
    session = QueueTrainingJobSession(priority=4, out=lambda _: None)
    untagged, tagged = unique("untagged"), unique("tagged")
    pytorch(session, source, instance_type=G4, tags=[{"Key": "team", "Value": "nlp"}]).fit(
        wait=False, job_name=untagged
    )
    pytorch(session, source, instance_type=G4, tags=priority_tag(1)).fit(
        wait=False, job_name=tagged
    )
    assert session.queue.job(untagged)["priority"] == 4
    assert session.queue.job(tagged)["priority"] == 1


def test_a_priority_that_is_not_an_integer_is_refused_and_nothing_is_queued(
    session, source, unique
):
    name = unique()
    with pytest.raises(InvalidJob, match="priority tag must be an integer"):
        pytorch(session, source, tags=priority_tag("urgent")).fit(wait=False, job_name=name)
    assert name not in {j["name"] for j in session.queue.jobs()["jobs"]}
    with pytest.raises(InvalidJob, match="priority= must be an integer"):
        QueueTrainingJobSession(priority="high")
    with pytest.raises(InvalidJob, match="between -9999 and 9999"):
        QueueTrainingJobSession(priority=10**6)


def test_fit_waits_on_the_queue_until_the_job_completes(session, source, unique, said):
    name = unique()
    estimator = pytorch(session, source, tags=priority_tag(1, seconds=1))
    estimator.fit(wait=True, job_name=name)

    assert said[-1] == f"[queue] {name}: completed"
    assert any("started as SageMaker job" in line for line in said)
    # Then the SDK works as for any finished job.
    assert estimator.model_data.endswith(f"/{name}/output/model.tar.gz")
    assert estimator.latest_training_job.describe()["TrainingJobStatus"] == "Completed"


def test_fit_follows_a_preempted_job_and_its_logs_to_completion_under_its_new_name(
    local_env, source, unique
):
    said = []
    low_session = QueueTrainingJobSession(poll_seconds=0.2, out=said.append)
    low, high = unique("low"), unique("high")
    # Each step waits for the one before, whatever the machine's speed: low trains until
    # high preempts it, high until low has been seen waiting; resumed, low finishes.
    estimator = pytorch(low_session, source, instance_type=G5, tags=priority_tag(1, seconds=3600))
    estimator.fit(wait=False, job_name=low)
    wait_until(lambda: low_session.queue.job(low)["state"] == "running", f"{low} to run")
    high_session = QueueTrainingJobSession(out=lambda _: None)
    with resumed_attempts_finish_at_once(local_env, low):
        pytorch(high_session, source, instance_type=G5, tags=priority_tag(9, seconds=3600)).fit(
            wait=False, job_name=high
        )
        # As fit(wait=True) does: logs_for_job, with the training logs.
        follow = threading.Thread(target=estimator.latest_training_job.wait, args=("All",))
        follow.start()
        wait_until(lambda: any("waiting to resume" in line for line in said), "low to wait")
        wait_until(lambda: high_session.queue.job(high)["state"] == "running", "high to run")
        local_env.cloud.sagemaker.set_run_seconds(high, 0)  # high's training ends
        follow.join(timeout=120)
        assert not follow.is_alive(), "fit() did not follow the job to its end"

    notes = [line.removeprefix(f"[queue] {low}: ") for line in said]
    assert any("waiting to resume" in note for note in notes)
    assert any(note.startswith("resumed as SageMaker job " + low + "-r2-") for note in notes)
    assert notes[-1] == "completed"
    # Each attempt's training logs, after a line saying which attempt.
    first = said.index(f"[queue] {low}: logs of attempt 1 (SageMaker job {low})")
    assert said[first + 1] == f"[algo-1] Starting training job {low}"
    assert "[algo-1] Received SIGTERM: the training job is being stopped" in said[first:]
    (second,) = [i for i, line in enumerate(said) if "logs of attempt 2" in line]
    assert second > first and said[second + 1].startswith(
        f"[algo-1] Starting training job {low}-r2-"
    )
    assert "[algo-1] Training finished: reporting success" in said[second:]
    final = estimator.latest_training_job.describe()
    assert final["TrainingJobName"] == low  # the queue's name; the ARN is its latest job's
    assert final["TrainingJobArn"].rsplit("/", 1)[1].startswith(low + "-r2-")
    assert final["TrainingJobStatus"] == "Completed"


def test_a_failed_job_raises_as_the_sdk_does(local_env, source, unique):
    session = QueueTrainingJobSession(poll_seconds=0.2, out=lambda _: None)
    name = unique("bad")
    estimator = Estimator(
        image_uri="123456789012.dkr.ecr.us-east-1.amazonaws.com/train:latest",
        role=ROLE_ARN,
        instance_type=G4,
        instance_count=1,
        sagemaker_session=session,
        output_path="s3://sagemaker-local/output",
        tags=priority_tag(1, seconds=30),
    )
    estimator.fit(wait=False, job_name=name)
    wait_until(lambda: session.queue.job(name)["state"] == "running", f"{name} to run")
    local_env.cloud.sagemaker.jobs[name].end_reason = ("Failed", "AlgorithmError: exit code 1")
    local_env.cloud.sagemaker.set_run_seconds(name, 0)
    with pytest.raises(UnexpectedStatusException, match="AlgorithmError: exit code 1"):
        estimator.latest_training_job.wait(logs="None")


def test_other_sdk_calls_still_reach_the_emulated_services(session, tmp_path, unique):
    data = tmp_path / "data.csv"
    data.write_text("x,y\n1,2\n")
    uri = session.upload_data(str(data), bucket="sagemaker-local", key_prefix=unique("data"))
    assert uri.startswith("s3://sagemaker-local/")
    assert session.read_s3_file("sagemaker-local", uri.split("sagemaker-local/")[1]) == "x,y\n1,2\n"

    model = unique("model")
    session.create_model(
        model, ROLE_ARN, {"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/m:1"}
    )
    names = [m["ModelName"] for m in session.sagemaker_client.list_models()["Models"]]
    assert model in names


def test_a_fair_share_id_tag_names_whom_fair_share_charges(session, source, unique):
    name = unique()
    project = [{"Key": "fair-share-id", "Value": "project-x"}, *priority_tag(1, seconds=30)]
    pytorch(session, source, tags=project).fit(wait=False, job_name=name)
    assert session.queue.job(name)["submitter"] == "project-x"
    session.queue.cancel(name)
