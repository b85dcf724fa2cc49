"""`QueueTrainingJobSession` for the SageMaker Python SDK v3: ``ModelTrainer.train()`` queues.

Imported by :mod:`tjq.session` when SDK v3 is installed. ``ModelTrainer.train()`` hands
no request to its session (only a ``PipelineSession`` sees one): it creates the job with
the boto3 client of ``sagemaker_session.boto_session``, then describes it. So this session
routes its boto3 session to the queue (:mod:`tjq.route`) before any client is made from it.
"""

from __future__ import annotations

from sagemaker.core.helper.session_helper import Session

from tjq.log_route import show_attempts_in_sdk_logs
from tjq.route import RoutedSession


class QueueTrainingJobSession(RoutedSession, Session):
    """A SageMaker ``Session`` (SDK v3) whose CreateTrainingJob goes to the queue; nothing
    else changes.

    Example::

        from sagemaker.train import ModelTrainer
        from sagemaker.core.training.configs import Compute, SourceCode
        from tjq import QueueTrainingJobSession

        trainer = ModelTrainer(
            training_image=image, role=role,
            source_code=SourceCode(source_dir=".", entry_script="train.py"),
            compute=Compute(instance_type="ml.p5.48xlarge", instance_count=1),
            sagemaker_session=QueueTrainingJobSession(priority=2),  # SMQ_API_URL
        )
        trainer.train(wait=False)

    A job's priority is its ``priority`` tag; ``priority=`` sets it for jobs without one.
    Likewise its quota share: the ``share`` tag, or ``share=``. ``train(wait=True)`` follows
    the job through the queue, printing each change (queued, started, preempted, resumed),
    and ends as the SDK does: it returns for a completed or stopped job and raises
    ``FailedStatusError`` for a failed one. Describing the job by its name describes its
    latest SageMaker job. A ``boto_session`` passed in is routed too.

    ``train(wait=True, logs=True)`` shows the training logs as the SDK does, across the
    job's attempts (:mod:`tjq.log_route`): each resumed attempt's lines follow the last ones,
    after a line saying which attempt it is.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        show_attempts_in_sdk_logs(self.route, self.boto_session)
