"""`sam build`'s package (the Makefile's build-QueueFunction): built for the Lambda's runtime,
Python 3.12 on arm64, whatever python3 runs the build — and it imports there."""

import glob
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _python312() -> str | None:
    """A Python 3.12 on this machine (on PATH, or one pyenv keeps), if there is one."""
    candidates = [shutil.which("python3.12"), *sorted(glob.glob(os.path.expanduser(
        "~/.pyenv/versions/3.12*/bin/python3.12")))]  # fmt: skip
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                               capture_output=True, text=True)  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 12)":
            return candidate
    return None


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> pathlib.Path:
    artifacts = tmp_path_factory.mktemp("artifacts")
    result = subprocess.run(
        ["make", "--no-print-directory", "build-QueueFunction", f"ARTIFACTS_DIR={artifacts}",
         f"PYTHON={sys.executable}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return artifacts


def test_the_package_holds_the_handler_and_its_dependency_and_no_bytecode(package):
    assert (package / "job_queue" / "handler.py").exists()
    assert (package / "aws_lambda_powertools").is_dir()
    assert not list(package.rglob("*.pyc")) and not list(package.rglob("__pycache__"))
    assert not (package / "boto3").exists()  # the runtime has it


def test_every_dependency_wheel_is_for_python_312_on_arm64(package):
    tags = [
        line.removeprefix("Tag: ").strip()
        for wheel in package.glob("*.dist-info/WHEEL")
        for line in wheel.read_text().splitlines()
        if line.startswith("Tag: ")
    ]
    assert tags
    for tag in tags:
        python, _abi, platform = tag.split("-")
        assert python in ("py3", "cp312"), tag
        assert platform == "any" or "aarch64" in platform, tag


def test_the_package_imports_under_python_312(package, tmp_path):
    python = _python312()
    assert python, "no Python 3.12 on this machine to import the package with"
    # boto3 comes with the Lambda runtime: give it to the import the same way.
    runtime = tmp_path / "runtime"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--platform",
         "manylinux2014_aarch64", "--python-version", "3.12", "--only-binary=:all:",
         "-t", str(runtime), "boto3"],
        check=True, timeout=600,
    )  # fmt: skip
    probe = (
        "import sys; assert sys.version_info[:2] == (3, 12), sys.version; "
        "import job_queue.handler as h; assert callable(h.lambda_handler); print('ok')"
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{package}{os.pathsep}{runtime}",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    result = subprocess.run(
        [python, "-B", "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
