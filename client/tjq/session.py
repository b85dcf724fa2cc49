"""`QueueTrainingJobSession`: the SageMaker session whose training jobs go to the queue.

One name for both SageMaker Python SDKs; the implementation follows the one installed:
SDK v3 (``ModelTrainer.train()``, :mod:`tjq.session_v3`) or SDK v2 (``Estimator.fit()``,
:mod:`tjq.session_v2`). Importing this module imports the SDK (seconds); ``import tjq``
alone does not.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def sdk_major() -> int:
    """The major version of the installed SageMaker Python SDK (v3 may come as its parts,
    ``sagemaker-train`` and ``sagemaker-core``, without the ``sagemaker`` package)."""
    for package, major in (("sagemaker", None), ("sagemaker-train", 3)):
        try:
            found = version(package)
        except PackageNotFoundError:
            continue
        return major or int(found.split(".")[0])
    raise ImportError(
        "QueueTrainingJobSession needs the SageMaker Python SDK: "
        "pip install 'training-job-queue[sagemaker]'"
    )


if sdk_major() >= 3:
    from tjq.session_v3 import QueueTrainingJobSession
else:
    from tjq.session_v2 import QueueTrainingJobSession

__all__ = ["QueueTrainingJobSession", "sdk_major"]
