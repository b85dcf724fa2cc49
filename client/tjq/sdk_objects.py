"""What :class:`tjq.TrainingQueue` needs of the SageMaker SDK's objects: the CreateTrainingJob
request of a v3 ``ModelTrainer`` or a v2 ``Estimator`` (the calls AWS Batch's
``TrainingQueue`` makes), their tags before anything is uploaded, and a ``ModelTrainer``
back from a job that ran. The SDK is imported only here, and only when used.
"""

from __future__ import annotations

import sys


def kind_of(training_job) -> str:
    """ "model_trainer" or "estimator"; ``TypeError`` naming what it is otherwise."""
    for kind, module, name in (
        ("model_trainer", "sagemaker.train.model_trainer", "ModelTrainer"),
        ("estimator", "sagemaker.estimator", "EstimatorBase"),
    ):
        cls = _find(module, name)
        if cls is not None and isinstance(training_job, cls):
            return kind
    raise TypeError(
        "TrainingQueue.submit takes a ModelTrainer (SDK v3) or an Estimator (SDK v2), "
        f"not {type(training_job).__module__}.{type(training_job).__name__}"
    )


def check_mode(training_job) -> None:
    """A ModelTrainer in local mode trains on this machine: nothing to queue."""
    if kind_of(training_job) != "model_trainer":
        return
    from sagemaker.train.model_trainer import Mode

    if training_job.training_mode != Mode.SAGEMAKER_TRAINING_JOB:
        raise ValueError(
            f"the ModelTrainer is in {training_job.training_mode} mode, which trains on this "
            "machine; the queue takes Mode.SAGEMAKER_TRAINING_JOB trainers only"
        )


def tags_of(training_job) -> list[dict]:
    """The object's tags as CreateTrainingJob's ``[{"Key": ..., "Value": ...}]``."""
    return api_tags(getattr(training_job, "tags", None))


def api_tags(given) -> list[dict]:
    """Tags in either spelling — ``Tag(key=, value=)``, ``{"key": ..., "value": ...}`` (SDK
    v3 passes such dicts on as they are) or ``{"Key": ..., "Value": ...}`` — as
    CreateTrainingJob spells them."""
    found = []
    for tag in given or []:
        if isinstance(tag, dict):
            key, value = tag.get("Key", tag.get("key")), tag.get("Value", tag.get("value"))
        else:
            key, value = tag.key, tag.value
        found.append({"Key": key, "Value": value})
    return found


def training_request(training_job, inputs=None, job_name: str | None = None) -> dict:
    """The CreateTrainingJob request ``training_job`` would send (uploading its code, as
    ``train()`` / ``fit()`` do), named ``job_name`` if given."""
    if kind_of(training_job) == "model_trainer":
        request = training_job._create_training_job_args(input_data_config=inputs, boto3=True)
    else:
        from sagemaker.estimator import _TrainingJob

        training_job.prepare_workflow_for_training(job_name)
        args = _TrainingJob.get_train_args(training_job, inputs, {})
        request = training_job.sagemaker_session.get_train_request(**args)
    if job_name:
        request["TrainingJobName"] = job_name
    if request.get("Tags"):
        request["Tags"] = api_tags(request["Tags"])
    return request


def model_trainer_of(name: str, sagemaker_session):
    """A v3 ``ModelTrainer`` configured as queued job ``name`` ran, with that job as its
    latest training job; ``sagemaker_session`` (a QueueTrainingJobSession) describes it
    through the queue, and a new ``train()`` queues again."""
    from sagemaker.core.resources import TrainingJob
    from sagemaker.core.shapes import Unassigned
    from sagemaker.core.training.configs import Compute, StoppingCondition
    from sagemaker.train import ModelTrainer

    def given(value):
        return None if isinstance(value, Unassigned) else value

    job = TrainingJob.get(training_job_name=name, session=sagemaker_session.boto_session)
    algorithm, resources = given(job.algorithm_specification), given(job.resource_config)
    stopping = given(job.stopping_condition)
    settings = {
        "role": given(job.role_arn),
        "base_job_name": name,
        "training_image": given(algorithm.training_image) if algorithm else None,
        "compute": Compute(
            instance_type=given(resources.instance_type),
            instance_count=given(resources.instance_count),
            volume_size_in_gb=given(resources.volume_size_in_gb),
        )
        if resources
        else None,
        "stopping_condition": StoppingCondition(
            max_runtime_in_seconds=given(stopping.max_runtime_in_seconds)
        )
        if stopping
        else None,
        "output_data_config": given(job.output_data_config),
        "hyperparameters": given(job.hyper_parameters),
        "environment": given(job.environment),
        "checkpoint_config": given(job.checkpoint_config),
    }
    trainer = ModelTrainer(
        sagemaker_session=sagemaker_session,
        **{key: value for key, value in settings.items() if value is not None},
    )
    trainer._latest_training_job = job  # as AWS Batch's TrainingQueuedJob does
    return trainer


def _find(module: str, name: str):
    """The class, if its module is loaded: an object of it cannot exist otherwise (and
    importing one SDK's module under the other would fail)."""
    loaded = sys.modules.get(module)
    return getattr(loaded, name, None) if loaded else None
