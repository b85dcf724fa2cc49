"""training-job-queue, the user side.

* :class:`QueueTrainingJobSession` — ``estimator.fit()`` through the queue (needs the
  ``sagemaker`` extra; imported on first use, since the SDK takes seconds to import);
* :class:`tjq.api.QueueClient` — the signed HTTP client of the queue's API;
* ``smq`` — the command line (:mod:`tjq.cli`);
* :mod:`tjq.local` — the whole queue on one machine, with AWS emulated.
"""

__all__ = ["QueueClient", "QueueTrainingJobSession"]


def __getattr__(name: str):
    if name == "QueueTrainingJobSession":
        from tjq.session import QueueTrainingJobSession

        return QueueTrainingJobSession
    if name == "QueueClient":
        from tjq.api import QueueClient

        return QueueClient
    raise AttributeError(name)
