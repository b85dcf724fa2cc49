"""The emulated training container that runs your script (``smq local-api --run-scripts``).

For a job whose code the SDK uploaded — SDK v3's ``code`` channel with its ``sm_drivers``
``sourcecode.json``, or SDK v2's ``sagemaker_program`` and ``sagemaker_submit_directory``
hyperparameters — the emulator runs the entry script on this machine with this Python, as
SageMaker runs it in its container:

* the code is downloaded into a folder of its own, the script runs there with the
  hyperparameters as ``--name=value`` arguments (and ``SM_HPS``, ``SM_MODEL_DIR``,
  ``TRAINING_JOB_NAME``, ``TJQ_CHECKPOINT_DIR``);
* ``CheckpointConfig.S3Uri`` is copied into the checkpoint folder before the script starts,
  and the folder's new or changed files back to it while it runs and after it ends;
* StopTrainingJob sends the script SIGTERM; it is killed if it is still running after the
  stop window (120 seconds, as on SageMaker);
* what it prints goes to the job's log stream; exit status 0 is Completed, any other Failed.

No container, GPU or image: the script must run with the packages of this Python.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from job_queue.checkpoints import split_uri

STOP_WINDOW_S = 120.0  # SageMaker's time between SIGTERM and the kill


@dataclass
class Container:
    """One attempt's script, running."""

    process: subprocess.Popen
    root: Path
    checkpoints: Path
    checkpoint_uri: str | None
    output: Path
    read: int = 0  # bytes of the output already sent to the logs
    ended_at: float | None = None  # when the emulator saw the script end
    last_line: str | None = None  # the last line it printed
    uploaded: dict[str, float] = field(default_factory=dict)  # file -> mtime uploaded

    @property
    def exit_code(self) -> int | None:
        return self.process.poll()

    def terminate(self) -> None:
        """SIGTERM, as SageMaker stops a job."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def new_output(self) -> list[str]:
        """Lines printed since the last call."""
        with open(self.output, "rb") as out:
            out.seek(self.read)
            data = out.read()
        complete = data[: data.rfind(b"\n") + 1] if self.process.poll() is None else data
        self.read += len(complete)
        lines = [line for line in complete.decode(errors="replace").splitlines() if line]
        self.last_line = lines[-1] if lines else self.last_line
        return lines


class Containers:
    """Starts, tends and ends the emulated containers of one emulated SageMaker."""

    def __init__(self, s3, root: str | Path | None = None) -> None:
        self.s3 = s3
        self.root = Path(root or tempfile.mkdtemp(prefix="tjq-containers-"))
        self._running: dict[str, Container] = {}  # by SageMaker job name

    def start(self, name: str, request: dict) -> Container | None:
        """Run the job's entry script; None when the request names no code the emulator
        can find (the job is then emulated on the clock, as without ``--run-scripts``)."""
        root = self.root / name
        code = root / "code"
        try:
            command = self._fetch_code(request, code)
        except (BotoCoreError, ClientError, OSError, ValueError):  # its code is not there
            command = None
        if command is None:
            shutil.rmtree(root, ignore_errors=True)
            return None
        checkpoints, model = root / "checkpoints", root / "model"
        checkpoints.mkdir(parents=True, exist_ok=True)
        model.mkdir(exist_ok=True)
        uri = (request.get("CheckpointConfig") or {}).get("S3Uri")
        if uri:
            self._download(uri, checkpoints)
        hyperparameters = _hyperparameters(request.get("HyperParameters") or {})
        env = {
            **os.environ,
            "TRAINING_JOB_NAME": name,
            "SM_HPS": json.dumps(hyperparameters),
            "SM_MODEL_DIR": str(model),
            "SM_CURRENT_HOST": "algo-1",
            "TJQ_CHECKPOINT_DIR": str(checkpoints),
            "PYTHONUNBUFFERED": "1",
        }
        args = [f"--{k}={v}" for k, v in hyperparameters.items()]
        output = root / "output.log"
        with open(output, "wb") as out:
            process = subprocess.Popen(
                [*command, *args],
                cwd=code,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: the stop reaches it alone
            )
        container = Container(process, root, checkpoints, uri, output)
        container.uploaded = _files(checkpoints)  # what it was given is already there
        self._running[name] = container
        return container

    def sync(self, container: Container) -> None:
        """Copy the checkpoint folder's new or changed files to the job's S3 location."""
        if not container.checkpoint_uri:
            return
        bucket, prefix = split_uri(container.checkpoint_uri)
        for relative, mtime in _files(container.checkpoints).items():
            if container.uploaded.get(relative) != mtime and not relative.endswith(".partial"):
                path = container.checkpoints / relative
                with contextlib.suppress(FileNotFoundError):  # replaced meanwhile
                    self.s3.put_object(Bucket=bucket, Key=prefix + relative, Body=path.read_bytes())
                    container.uploaded[relative] = mtime

    def finish(self, container: Container) -> list[str]:
        """The attempt is over: kill what is left, copy the last checkpoints, clean up; the
        lines it printed last."""
        container.kill()
        self.sync(container)
        lines = container.new_output()
        shutil.rmtree(container.root, ignore_errors=True)
        self._running.pop(container.root.name, None)
        return lines

    def close(self) -> None:
        """The emulator stops: kill every script still running, and clean up."""
        for container in list(self._running.values()):
            container.kill()
        self._running.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- the code ---------------------------------------------------------------------------

    def _fetch_code(self, request: dict, code: Path) -> list[str] | None:
        channels = {
            c.get("ChannelName"): (c.get("DataSource") or {}).get("S3DataSource", {}).get("S3Uri")
            for c in request.get("InputDataConfig") or []
        }
        hyperparameters = request.get("HyperParameters") or {}
        if channels.get("code") and channels.get("sm_drivers"):  # SDK v3's ModelTrainer
            drivers = code.parent / "sm_drivers"
            self._download(channels["sm_drivers"], drivers)
            source = json.loads((drivers / "sourcecode.json").read_text() or "{}")
            self._download(channels["code"], code)
            if source.get("command"):
                return ["/bin/sh", "-c", source["command"]]
            if source.get("entry_script"):
                return [sys.executable, source["entry_script"]]
            return None
        program = _decoded(hyperparameters.get("sagemaker_program"))
        submitted = _decoded(hyperparameters.get("sagemaker_submit_directory"))
        if program and submitted:  # SDK v2's framework estimators
            code.mkdir(parents=True, exist_ok=True)
            bucket, key = split_uri(submitted)
            archive = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar.extractall(code, **safe)
            return [sys.executable, *shlex.split(program)]
        return None

    def _download(self, uri: str, folder: Path) -> None:
        bucket, prefix = split_uri(uri)
        folder.mkdir(parents=True, exist_ok=True)
        pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        with contextlib.suppress(self.s3.exceptions.NoSuchBucket):
            for page in pages:
                for item in page.get("Contents", []):
                    relative = item["Key"][len(prefix) :].lstrip("/")
                    if relative and not relative.endswith("/"):
                        target = folder / relative
                        target.parent.mkdir(parents=True, exist_ok=True)
                        body = self.s3.get_object(Bucket=bucket, Key=item["Key"])["Body"]
                        target.write_bytes(body.read())


def _decoded(value):
    """SDK v2 JSON-encodes its hyperparameters' values."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _hyperparameters(values: dict) -> dict:
    """The hyperparameters the script is given: the SDK's own (``sagemaker_*``) left out."""
    return {k: _decoded(v) for k, v in values.items() if not k.startswith("sagemaker_")}


def _files(folder: Path) -> dict[str, float]:
    return {
        str(path.relative_to(folder)): path.stat().st_mtime
        for path in folder.rglob("*")
        if path.is_file()
    }
