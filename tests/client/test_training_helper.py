"""`tjq.training`, in a real training process: SIGTERM saves and exits, the next attempt finds
the newest complete checkpoint, and the module needs nothing beyond the standard library."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tjq import training

LOOP = """
import sys, time
from tjq import training

step = 0
def save(folder):
    with training.saving(folder / f"step-{step}.txt") as partial:
        partial.write_text(str(step))

stop = training.save_on_stop(save, deferred=DEFERRED)
print("ready", flush=True)
while True:
    time.sleep(0.01)
    step += 1
    if DEFERRED:
        stop.check()
"""


def start(tmp_path: Path, deferred: bool) -> subprocess.Popen:
    script = tmp_path / "train.py"
    script.write_text(LOOP.replace("DEFERRED", str(deferred)))
    env = {**os.environ, "TJQ_CHECKPOINT_DIR": str(tmp_path / "checkpoints")}
    process = subprocess.Popen(
        [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "ready"
    return process


@pytest.mark.parametrize("deferred", [False, True], ids=["at once", "at the next step"])
def test_sigterm_saves_a_checkpoint_and_exits_cleanly(tmp_path, deferred):
    process = start(tmp_path, deferred)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    assert "saved a checkpoint" in process.stdout.read()
    (saved,) = (tmp_path / "checkpoints").iterdir()
    assert saved.name == f"step-{saved.read_text()}.txt"


def test_the_newest_complete_checkpoint_is_the_one_to_resume_from(tmp_path, monkeypatch):
    monkeypatch.setenv("TJQ_CHECKPOINT_DIR", str(tmp_path))
    assert training.latest_checkpoint() is None  # a first attempt starts afresh
    for step in (100, 200):
        with training.saving(tmp_path / f"step-{step}.pt") as partial:
            partial.write_text(str(step))
        os.utime(tmp_path / f"step-{step}.pt", (time.time() + step, time.time() + step))
    (tmp_path / "step-300.pt.partial").write_text("cut short by the stop window")
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    assert training.latest_checkpoint(pattern="step-*.pt") == tmp_path / "step-200.pt"


def test_an_interrupted_save_leaves_no_checkpoint(tmp_path):
    with pytest.raises(RuntimeError), training.saving(tmp_path / "step-1.pt") as partial:
        partial.write_text("half")
        raise RuntimeError("killed mid-save")
    assert training.latest_checkpoint(tmp_path) is None


def test_the_helper_needs_only_the_standard_library(tmp_path):
    # A training image may have nothing of this project but the file itself: copied next to
    # the script, it imports with no site-packages at all.
    (tmp_path / "tjq_training.py").write_text(Path(training.__file__).read_text())
    found = subprocess.run(
        [sys.executable, "-S", "-c", "import tjq_training; print(tjq_training.checkpoint_dir)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0, found.stderr
