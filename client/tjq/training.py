"""Checkpoints that survive preemption, for training scripts (the standard library only: copy
this file next to your script if the image lacks ``training-job-queue``).

When the queue preempts a job, SageMaker stops it: the container gets SIGTERM and has 120
seconds before it is killed. SageMaker copies ``/opt/ml/checkpoints`` to the job's
``CheckpointConfig.S3Uri`` while it runs, and back into ``/opt/ml/checkpoints`` when the next
attempt starts (the queue gives every attempt of a job the same location). So a script that
saves there when it is stopped, and looks there when it starts, resumes where it stopped::

    from tjq import training

    step, state = 0, init_state()
    if (latest := training.latest_checkpoint()) is not None:
        step, state = load(latest)                       # resume
    stop = training.save_on_stop(lambda folder: save(folder / f"step-{step}", step, state))
    while step < total_steps:
        state = train_one_step(state)
        step += 1

Declare it with the job's ``checkpoint`` tag (``on-stop``) so that the queue preempts such
jobs first among those of a priority: they lose nothing.

SageMaker sends SIGTERM to the container's first process. Run your script as that process
(a custom image whose entry point is your script, in exec form) or through a launcher that
passes the signal on; the SageMaker training toolkit of AWS's framework images does not
(aws/sagemaker-training-toolkit#125), and a script that never sees the signal should save at
an interval instead (and declare it: ``checkpoint`` = the interval in seconds).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

# SageMaker's default CheckpointConfig.LocalPath; `smq local-api --run-scripts` sets
# TJQ_CHECKPOINT_DIR to the folder it syncs instead.
DEFAULT_DIRECTORY = "/opt/ml/checkpoints"
PARTIAL = ".partial"


def checkpoint_dir() -> Path:
    """The folder this attempt's checkpoints go in (and the previous attempts' are found
    in), created if missing."""
    folder = Path(os.environ.get("TJQ_CHECKPOINT_DIR") or DEFAULT_DIRECTORY)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def latest_checkpoint(directory: str | Path | None = None, pattern: str = "*") -> Path | None:
    """The newest checkpoint (a file or folder in ``directory`` matching ``pattern``, by
    modification time, then name), or None when there is none: the job starts afresh.
    Unfinished saves (see :func:`saving`) are never returned."""
    folder = Path(directory) if directory is not None else checkpoint_dir()
    found = [p for p in folder.glob(pattern) if not p.name.endswith(PARTIAL)]
    return max(found, key=lambda p: (p.stat().st_mtime, p.name), default=None)


@contextlib.contextmanager
def saving(path: str | Path) -> Iterator[Path]:
    """Write a checkpoint to a temporary path that becomes ``path`` only once complete, so
    that a save cut short (the stop window ran out) is never resumed from::

        with training.saving(folder / "step-120.pt") as partial:
            torch.save(state, partial)
    """
    final = Path(path)
    partial = final.with_name(final.name + PARTIAL)
    yield partial
    os.replace(partial, final)


class StopSignal:
    """What :func:`save_on_stop` installed: ``requested`` turns true when SageMaker stops the
    job; with ``deferred``, :meth:`check` saves and exits at the next step boundary."""

    def __init__(self, save: Callable[[Path], None], directory: Path, deferred: bool) -> None:
        self.requested = False
        self._save, self._directory, self._deferred = save, directory, deferred
        self._saved = False

    def check(self) -> None:
        """Call between steps: if the job is being stopped, save and exit (status 0)."""
        if self.requested:
            self._save_and_exit()

    def _on_signal(self, signum, frame) -> None:
        self.requested = True
        if not self._deferred:
            self._save_and_exit()

    def _save_and_exit(self) -> None:
        if not self._saved:
            self._saved = True
            self._save(self._directory)
            print(f"[tjq.training] saved a checkpoint in {self._directory} on stop", flush=True)
        sys.exit(0)


def save_on_stop(
    save: Callable[[Path], None],
    directory: str | Path | None = None,
    *,
    deferred: bool = False,
) -> StopSignal:
    """On SIGTERM (SageMaker stopping the job), call ``save(directory)`` and exit.

    ``save`` writes the training state into the folder it is given (by default
    :func:`checkpoint_dir`); it has SageMaker's stop window, 120 seconds, to do so. By default
    it runs as soon as the signal arrives, wherever the script is; with ``deferred=True`` it
    runs when the script next calls :meth:`StopSignal.check` (between steps, where the state
    is consistent). Call it from the main thread.
    """
    folder = Path(directory) if directory is not None else checkpoint_dir()
    stop = StopSignal(save, folder, deferred)
    signal.signal(signal.SIGTERM, stop._on_signal)
    return stop
