"""`ModelTrainer.train()` with QueueTrainingJobSession: the real SageMaker SDK v3, over HTTP,
to the local API. Nothing of the SDK or of the queue is mocked; no environment variable
beyond what `smq local-api` prints (the SDK's role check is answered by the local IAM)."""

import logging
import threading

import pytest
from sagemaker.core.resources import TrainingJob
from sagemaker.core.shapes import Tag
from sagemaker.core.training.configs import Compute, SourceCode
from sagemaker.core.utils.exceptions import FailedStatusError
from sagemaker.train import ModelTrainer
from tjq import QueueTrainingJobSession
from tjq.errors import AccessDenied, InvalidJob
from tjq.local.calls import ROLE_ARN

from job_queue import tags
from tests.client.conftest import G4, G5, resumed_attempts_finish_at_once, wait_until

IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.3.0-gpu-py311"


@pytest.fixture
def session(local_env, said):
    return QueueTrainingJobSession(out=said.append)


def trainer(
    session, source, name, instance_type=G4, tags_=(), role=ROLE_ARN, **compute
) -> ModelTrainer:
    return ModelTrainer(
        training_image=IMAGE,
        source_code=SourceCode(source_dir=source, entry_script="train.py"),
        compute=Compute(instance_type=instance_type, instance_count=1, **compute),
        role=role,
        base_job_name=name,
        sagemaker_session=session,
        tags=list(tags_),
    )


def priority_tag(value, seconds=None) -> list[Tag]:
    """A priority tag and, for the emulator, how long the job trains (v3 spells tags so)."""
    found = [Tag(key="priority", value=str(value))]
    if seconds is not None:
        found.append(Tag(key="simulated-run-seconds", value=str(seconds)))
    return found


def queued(model_trainer: ModelTrainer) -> str:
    """``train(wait=False)``; the job's name (ModelTrainer names it <base>-<timestamp>)."""
    model_trainer.train(wait=False)
    return model_trainer._latest_training_job.training_job_name


def created_by_the_queue_only(local, name: str) -> bool:
    """Every SageMaker job of queued job ``name`` was created by the queue (tagged by it)."""
    created = [
        job
        for sagemaker_name, job in local.cloud.sagemaker.jobs.items()
        if sagemaker_name == name or sagemaker_name.startswith(f"{name}-r")
    ]
    return bool(created) and all(tags.QUEUE in job.tags for job in created)


def test_train_without_waiting_queues_the_job_and_sagemaker_sees_it_only_when_it_starts(
    session, local_env, source, unique, said
):
    blocker = queued(trainer(session, source, unique("blocker"), tags_=priority_tag(5, 3600)))
    name = queued(trainer(session, source, unique("waiter"), tags_=priority_tag(2, 3600)))

    job = session.queue.job(name)
    assert (job["priority"], job["state"], job["position"]) == (2, "pending", 1)
    assert name not in local_env.cloud.sagemaker.jobs  # waiting: not in SageMaker
    queued_line = f"[queue] {name}: queued at position 1 (priority 2), expected to start in "
    assert any(line.startswith(queued_line) for line in said), said
    # The SDK's own view of the job: in progress, pending in the queue.
    described = TrainingJob.get(training_job_name=name, session=session.boto_session)
    assert (described.training_job_status, described.secondary_status) == ("InProgress", "Pending")
    assert "Waiting in training-job-queue at position 1 (priority 2), expected to start in " in (
        described.secondary_status_transitions[-1].status_message
    )

    session.queue.cancel(blocker)
    wait_until(lambda: session.queue.job(name)["state"] == "running", f"{name} to start")
    assert created_by_the_queue_only(local_env, name)
    session.queue.cancel(name)


def test_either_tag_spelling_and_the_sessions_priority_give_the_priority(local_env, source, unique):
    session = QueueTrainingJobSession(priority=4, out=lambda _: None)
    runs_long = {"key": "simulated-run-seconds", "value": "3600"}
    names = {
        "session": queued(trainer(session, source, unique(), tags_=[runs_long])),
        "dict": queued(
            trainer(session, source, unique(), tags_=[{"key": "priority", "value": "6"}, runs_long])
        ),
        "Tag": queued(trainer(session, source, unique(), tags_=priority_tag(7, 3600))),
    }
    priorities = {how: session.queue.job(name)["priority"] for how, name in names.items()}
    assert priorities == {"session": 4, "dict": 6, "Tag": 7}
    for name in names.values():
        session.queue.cancel(name)


def test_a_priority_that_is_not_an_integer_is_refused_and_nothing_is_queued(
    session, source, unique
):
    name = unique()
    with pytest.raises(InvalidJob, match="priority tag must be an integer"):
        trainer(session, source, name, tags_=[Tag(key="priority", value="urgent")]).train(
            wait=False
        )
    assert not [j for j in session.queue.jobs()["jobs"] if j["name"].startswith(name)]
    with pytest.raises(InvalidJob, match="priority= must be an integer"):
        QueueTrainingJobSession(priority="high")


def test_a_role_the_local_api_does_not_allow_is_refused_naming_the_allowed_ones(
    session, source, unique
):
    other = "arn:aws:iam::123456789012:role/SomeoneElses"
    with pytest.raises(AccessDenied) as refused:
        trainer(session, source, unique(), role=other).train(wait=False)
    assert f"RoleArn {other} is not one this queue may pass to SageMaker" in str(refused.value)
    assert ROLE_ARN in str(refused.value) and "--allowed-role" in str(refused.value)


def test_train_waits_through_preemption_and_resumption_and_ends_as_v3_does(
    local_env, source, unique, sdk_log
):
    said = []
    low_session = QueueTrainingJobSession(out=said.append)
    low_base, high_base = unique("low"), unique("high")
    low = trainer(low_session, source, low_base, G5, tags_=priority_tag(1, seconds=3600))
    follow = threading.Thread(target=low.train, kwargs={"wait": True, "logs": True})
    follow.start()
    wait_until(lambda: low._latest_training_job, "low to be queued")
    name = low._latest_training_job.training_job_name
    wait_until(lambda: low_session.queue.job(name)["state"] == "running", "low to run")
    high_session = QueueTrainingJobSession(out=lambda _: None)
    with resumed_attempts_finish_at_once(local_env, name):
        high = queued(
            trainer(high_session, source, high_base, G5, tags_=priority_tag(9, seconds=3600))
        )
        wait_until(lambda: any("waiting to resume" in line for line in said), "low to wait")
        wait_until(lambda: high_session.queue.job(high)["state"] == "running", "high to run")
        local_env.cloud.sagemaker.set_run_seconds(high, 0)  # high's training ends
        follow.join(timeout=180)
        assert not follow.is_alive(), "train() did not follow the job to its end"

    notes = [line.removeprefix(f"[queue] {name}: ") for line in said]
    assert notes[0].startswith("started as SageMaker job " + name)
    assert any(note.startswith("preempted by " + high) for note in notes)  # seen stopping or not
    assert any(note.startswith("resumed as SageMaker job " + name + "-r2-") for note in notes)
    assert notes[-1].endswith("completed")
    # The SDK's own log display shows every attempt, each after a line saying which.
    lines = [line.split("\n", 1)[-1] for line in sdk_log.lines]
    first = lines.index(f"[queue] {name}: logs of attempt 1 (SageMaker job {name})")
    assert lines[first + 1] == f"[algo-1] Starting training job {name}"
    (second,) = [i for i, line in enumerate(lines) if "logs of attempt 2" in line]
    assert "[algo-1] Received SIGTERM: the training job is being stopped" in lines[first:second]
    assert lines[second + 1].startswith(f"[algo-1] Starting training job {name}-r2-")
    assert "[algo-1] Training finished: reporting success" in lines[second:]
    latest = low._latest_training_job
    assert latest.training_job_name == name  # the queue's name, for the SDK
    assert latest.training_job_arn.rsplit("/", 1)[1].startswith(f"{name}-r2-")  # its attempt
    assert latest.training_job_status == "Completed"
    assert created_by_the_queue_only(local_env, name)


def test_a_failed_job_raises_failed_status_error(local_env, source, unique):
    session = QueueTrainingJobSession(out=lambda _: None)
    base = unique("bad")
    bad = trainer(session, source, base, tags_=priority_tag(1, seconds=3600))
    failing = {}

    def train():
        try:
            bad.train(wait=True, logs=False)
        except FailedStatusError as exc:
            failing["error"] = exc

    follow = threading.Thread(target=train)
    follow.start()
    wait_until(lambda: bad._latest_training_job, "the job to be queued")
    name = bad._latest_training_job.training_job_name
    wait_until(lambda: session.queue.job(name)["state"] == "running", "the job to run")
    local_env.cloud.sagemaker.jobs[name].end_reason = ("Failed", "AlgorithmError: exit code 1")
    local_env.cloud.sagemaker.set_run_seconds(name, 0)
    follow.join(timeout=120)
    assert "AlgorithmError: exit code 1" in str(failing["error"])


def test_other_calls_go_to_aws_as_usual(session, tmp_path, unique):
    data = tmp_path / "data.csv"
    data.write_text("x,y\n1,2\n")
    uri = session.upload_data(str(data), bucket="sagemaker-local", key_prefix=unique("data"))
    assert session.read_s3_file("sagemaker-local", uri.split("sagemaker-local/")[1]) == "x,y\n1,2\n"
    # A job the queue never had is described by SageMaker (here: none of that name).
    with pytest.raises(Exception, match=r"not found|does not exist|ResourceNotFound"):
        TrainingJob.get(training_job_name=unique("unknown"), session=session.boto_session)


@pytest.fixture
def sdk_log():
    """What SDK v3's log display shows: it logs at INFO (the application decides whether
    that is printed; here it is collected)."""
    logger = logging.getLogger("sagemaker.core.resources")
    lines, level = _Lines(), logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(lines)
    yield lines
    logger.removeHandler(lines)
    logger.setLevel(level)


class _Lines(logging.Handler):
    """The SDK's log records, as their messages."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_a_fair_share_id_tag_names_whom_fair_share_charges(session, source, unique):
    project = [Tag(key="fair-share-id", value="project-x")]
    name = queued(trainer(session, source, unique("project"), tags_=[*project, *priority_tag(1)]))
    assert session.queue.job(name)["submitter"] == "project-x"
    session.queue.cancel(name)
