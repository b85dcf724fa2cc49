"""training-job-queue, the user side.

* :class:`QueueTrainingJobSession` — ``ModelTrainer.train()`` (SDK v3) or ``Estimator.fit()``
  (SDK v2) through the queue (needs the ``sagemaker`` extra; imported on first use, since
  the SDK takes seconds to import);
* :class:`TrainingQueue` — the queue in the shape of the SDK's AWS Batch ``TrainingQueue``;
* :func:`reroute` — CreateTrainingJob through a plain boto3 session or client, queued;
* :class:`tjq.api.QueueClient` — the signed HTTP client of the queue's API;
* ``smq`` — the command line (:mod:`tjq.cli`);
* :mod:`tjq.local` — the whole queue on one machine, with AWS emulated.
"""

__all__ = [
    "QueueClient",
    "QueueTrainingJobSession",
    "TrainingQueue",
    "TrainingQueuedJob",
    "reroute",
]

_HOMES = {
    "QueueTrainingJobSession": "tjq.session",
    "TrainingQueue": "tjq.training_queue",
    "TrainingQueuedJob": "tjq.training_queue",
    "reroute": "tjq.route",
    "QueueClient": "tjq.api",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
