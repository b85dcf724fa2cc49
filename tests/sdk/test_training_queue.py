"""`tjq.TrainingQueue`, shaped like AWS Batch's, with the installed SDK's own training object
(a v3 ModelTrainer or a v2 Estimator) against `smq local-api`. Runs under both SDKs."""

import boto3
import pytest
from tjq import QueueTrainingJobSession, TrainingQueue
from tjq.errors import InvalidJob, QueueApiError
from tjq.local.calls import ROLE_ARN

from job_queue.share_config import parse_shares
from tests.client.conftest import G4, G5, quiet_local_api, wait_until
from tests.sdk.conftest import SDK

IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311"
BUCKET = "sagemaker-local"


def training_job(
    source, name="tq", instance_type=G4, priority=None, run_seconds=3600, session=None
):
    """What a user of the installed SDK builds (with a plain SageMaker session unless
    ``session`` is given)."""
    tags = {"simulated-run-seconds": str(run_seconds)}
    if priority is not None:
        tags["priority"] = str(priority)
    if SDK >= 3:
        from sagemaker.core.shapes import Tag
        from sagemaker.core.training.configs import Compute, SourceCode
        from sagemaker.train import ModelTrainer

        return ModelTrainer(
            training_image=IMAGE,
            source_code=SourceCode(source_dir=source, entry_script="train.py"),
            compute=Compute(instance_type=instance_type, instance_count=1),
            role=ROLE_ARN,
            base_job_name=name,
            tags=[Tag(key=k, value=v) for k, v in tags.items()],
            sagemaker_session=session,
        )
    from sagemaker.pytorch import PyTorch
    from sagemaker.session import Session

    return PyTorch(
        entry_point="train.py",
        source_dir=source,
        role=ROLE_ARN,
        instance_type=instance_type,
        instance_count=1,
        framework_version="2.3",
        py_version="py311",
        base_job_name=name,
        sagemaker_session=session or Session(),
        tags=[{"Key": k, "Value": v} for k, v in tags.items()],
    )


def train_without_waiting(job, name: str) -> str:
    """``train(wait=False)`` (v3: the SDK names the job) or ``fit(wait=False)``; its name."""
    if SDK >= 3:
        job.train(wait=False)
        return job._latest_training_job.training_job_name
    job.fit(wait=False, job_name=name)
    return name


def data_input(uri: str):
    """One job's input data, as the installed SDK takes it."""
    if SDK >= 3:
        from sagemaker.core.training.configs import InputData

        return [InputData(channel_name="train", data_source=uri)]
    return uri


@pytest.fixture
def queue(local_env, said):
    return TrainingQueue(poll_seconds=0.2, out=said.append)


def uploaded() -> int:
    """How many objects the SDK has uploaded to its default bucket."""
    s3 = boto3.client("s3")
    try:
        return s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0)
    except s3.exceptions.NoSuchBucket:
        return 0


def test_submit_describe_update_and_terminate_as_with_aws_batch(queue, source, unique, said):
    blocker, name = unique("blocker"), unique("waiter")
    first = queue.submit(training_job(source), job_name=blocker, priority=5)
    wait_until(lambda: first.describe()["status"] == "RUNNING", "the first job to run")
    job = queue.submit(training_job(source, priority=1), job_name=name, priority=2)

    described = job.describe()
    assert (described["state"], described["status"], described["priority"]) == (
        "pending",
        "RUNNABLE",
        2,  # priority= replaces the job's own tag
    )
    queued_line = f"[queue] {name}: queued at position 1 (priority 2), expected to start in "
    assert any(line.startswith(queued_line) for line in said), said
    assert described["statusReason"].startswith("expected to start in ")
    assert [j.job_name for j in queue.list_jobs(status="RUNNABLE")] == [name]
    assert name in [j.job_name for j in queue.list_jobs()]
    assert [j.job_name for j in queue.list_jobs(job_name=name)] == [name]
    assert queue.get_job(name).job_name == name

    job.update(scheduling_priority=7)  # now above the running job: it preempts it
    wait_until(lambda: job.describe()["status"] == "RUNNING", f"{name} to preempt {blocker}")
    assert first.describe()["state"] in ("preempting", "preempted")

    job.terminate(reason="not needed after all")
    ended = job.wait()
    assert (ended["state"], ended["status"]) == ("cancelled", "FAILED")
    assert f"[queue] {name}: cancelled (not needed after all)" in said
    with pytest.raises(RuntimeError, match="cancelled in the queue"):
        job.result()
    first.terminate()


def test_result_waits_for_the_job_and_wait_returns_at_its_timeout(queue, source, unique):
    short = queue.submit(training_job(source, run_seconds=1), job_name=unique("short"))
    assert short.result()["status"] == "SUCCEEDED"

    long = queue.submit(training_job(source, run_seconds=3600), job_name=unique("long"))
    assert long.wait(timeout=0.5)["status"] in ("RUNNABLE", "STARTING", "RUNNING")
    with pytest.raises(TimeoutError, match="still"):
        long.result(timeout=0.5)
    long.terminate()


def test_a_failed_job_raises_with_its_reason(queue, local_env, source, unique):
    name = unique("bad")
    job = queue.submit(training_job(source), job_name=name)
    wait_until(lambda: job.describe()["state"] == "running", f"{name} to run")
    local_env.cloud.sagemaker.jobs[name].end_reason = ("Failed", "AlgorithmError: exit code 1")
    local_env.cloud.sagemaker.set_run_seconds(name, 0)
    with pytest.raises(RuntimeError, match="AlgorithmError: exit code 1"):
        job.result()
    assert job.describe()["statusReason"] == "AlgorithmError: exit code 1"


def test_map_queues_one_job_per_input(queue, source, unique):
    inputs = [data_input(f"s3://{BUCKET}/data/{part}") for part in ("a", "b")]
    named = [unique("part-a"), unique("part-b")]
    jobs = queue.map(training_job(source, instance_type=G5), inputs, job_names=named)
    assert [job.job_name for job in jobs] == named
    # Without names: the SDK would give both the same <base>-<second>; each gets a suffix.
    base = unique("mapped")
    unnamed = queue.map(training_job(source, name=base, instance_type=G5), inputs)
    assert len({job.job_name for job in unnamed}) == 2
    assert all(job.job_name.startswith(base) for job in unnamed)
    with pytest.raises(ValueError, match="1 job names for 2 inputs"):
        queue.map(training_job(source), inputs, job_names=[unique()])
    for job in [*jobs, *unnamed]:
        job.terminate()


def test_bad_input_is_refused_before_anything_is_uploaded_or_queued(queue, source, unique):
    name = unique("refused")
    before = uploaded()
    with pytest.raises(TypeError, match=r"ModelTrainer .* or an Estimator .*, not builtins\.dict"):
        queue.submit({"TrainingJobName": name})
    with pytest.raises(InvalidJob, match="priority= must be an integer"):
        queue.submit(training_job(source), job_name=name, priority="urgent")
    with pytest.raises(InvalidJob, match="the priority tag must be an integer"):
        queue.submit(training_job(source, priority="high"), job_name=name)
    with pytest.raises(InvalidJob, match="checkpoint= must be 'on-stop' or a positive number"):
        queue.submit(training_job(source), job_name=name, checkpoint="hourly")
    with pytest.raises(InvalidJob, match="checkpoint= must be 'on-stop' or a positive number"):
        QueueTrainingJobSession(checkpoint=0)
    with pytest.raises(ValueError, match=r"preemption_config= must be \{'preemptionRetriesBefore"):
        queue.submit(training_job(source), job_name=name, preemption_config={"retries": 2})
    with pytest.raises(ValueError, match="must be a whole number from 0, got -1"):
        queue.submit(
            training_job(source),
            job_name=name,
            preemption_config={"preemptionRetriesBeforeTermination": -1},
        )
    with pytest.raises(ValueError, match="share_identifier or quota_share_name, not both"):
        queue.submit(
            training_job(source), job_name=name, share_identifier="a", quota_share_name="b"
        )
    assert uploaded() == before
    assert not queue.list_jobs(job_name=name)
    with pytest.raises(ValueError, match="unknown status 'DONE'"):
        queue.list_jobs(status="DONE")
    with pytest.raises(ValueError, match="get_job"):
        queue.list_jobs(status="SUCCEEDED")


def test_a_share_named_on_a_queue_without_shares_is_refused_and_nothing_is_queued(
    queue, source, unique
):
    name = unique("vision-job")
    with pytest.raises(QueueApiError, match=r"Tags\.share: .* has no quota shares") as refused:
        queue.submit(training_job(source), job_name=name, quota_share_name="vision")
    assert refused.value.status == 400
    assert not queue.list_jobs(job_name=name)


def test_preemption_config_caps_how_often_the_job_is_preempted(queue, source, unique):
    config = {"preemptionRetriesBeforeTermination": 2}
    job = queue.submit(training_job(source), job_name=unique(), preemption_config=config)
    assert job.describe()["max_preemptions"] == 2
    job.terminate()


def test_without_shares_share_identifier_names_whom_fair_share_charges(queue, source, unique):
    job = queue.submit(training_job(source), job_name=unique(), share_identifier="project-x")
    described = job.describe()
    assert described["submitter"] == "project-x" and described["share"] is None
    job.terminate()


@pytest.fixture(scope="module")
def shared_api():
    shares = parse_shares(
        [
            {
                "name": "vision",
                "capacity": {G4: 1},
                "strategy": "LEND_AND_BORROW",
                "in_share_preemption": False,
            },
            {
                "name": "language",
                "capacity": {G4: 1},
                "strategy": "LEND_AND_BORROW",
                "in_share_preemption": False,
            },
        ]
    )
    with quiet_local_api(shares=shares, run_seconds=2, stop_seconds=0.5) as local:
        yield local


def test_the_share_is_quota_share_name_or_share_identifier(shared_api, monkeypatch, source, unique):
    for variable, value in shared_api.environment().items():
        monkeypatch.setenv(variable, value)
    queue = TrainingQueue(out=lambda _: None)
    vision = queue.submit(training_job(source), job_name=unique(), quota_share_name="vision")
    language = queue.submit(training_job(source), job_name=unique(), share_identifier="language")
    assert vision.describe()["share"] == "vision"
    assert language.describe()["share"] == "language"
    vision.terminate()
    language.terminate()


def test_the_sessions_share_is_the_share_of_jobs_without_one(shared_api, monkeypatch, source):
    for variable, value in shared_api.environment().items():
        monkeypatch.setenv(variable, value)
    session = QueueTrainingJobSession(share="language", out=lambda _: None)
    name = train_without_waiting(training_job(source, session=session), "from-a-notebook")
    assert session.queue.job(name)["share"] == "language"
    session.queue.cancel(name)


def test_a_job_that_depends_on_another_waits_for_it_and_gets_its_model(
    queue, local_env, source, unique, said
):
    train, evaluate = unique("train"), unique("evaluate")
    parent = queue.submit(training_job(source, run_seconds=2), job_name=train)
    child = queue.submit(
        training_job(source, run_seconds=1),
        inputs=data_input(parent.output("model")),
        job_name=evaluate,
        depends_on=[parent],
    )
    waiting = child.describe()
    if waiting["state"] == "pending" and waiting["waiting_for"]["code"] == "dependency":
        queued = f"[queue] {evaluate}: queued until its dependency holds"
        assert any(line.startswith(queued) for line in said), said
    elif waiting["state"] == "pending":
        # On a busy machine the parent may have ended already: the child is in line then.
        assert parent.describe()["state"] == "completed", waiting
    assert child.result()["status"] == "SUCCEEDED"
    sagemaker = local_env.cloud.sagemaker_client
    parent_job = sagemaker.describe_training_job(
        TrainingJobName=parent.describe()["sagemaker_job_name"]
    )
    child_job = sagemaker.describe_training_job(
        TrainingJobName=child.describe()["sagemaker_job_name"]
    )
    channel = child_job["InputDataConfig"][0]["DataSource"]["S3DataSource"]
    assert channel["S3Uri"] == parent_job["ModelArtifacts"]["S3ModelArtifacts"]
    assert child.describe()["first_started_at"] >= parent.describe()["ended_at"]


def test_a_dependency_on_a_job_not_in_the_queue_is_refused(queue, source, unique):
    with pytest.raises(QueueApiError, match=r"Tags\.depends-on must name jobs of this queue"):
        queue.submit(training_job(source), job_name=unique("orphan"), depends_on="nobody-here")
    with pytest.raises(ValueError, match="dependency type among after, afterok, afternotok"):
        queue.submit(training_job(source), job_name=unique("x"), depends_on="a", dependency="any")
