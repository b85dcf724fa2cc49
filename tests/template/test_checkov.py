"""A third-party IaC scanner (checkov) on template.yaml: at most two failed checks, and every
check that does not apply is skipped in the template with its reason."""

import json
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"


@pytest.fixture(scope="module")
def scan() -> dict:
    assert CHECKOV.exists(), f"{CHECKOV} is missing: `make venvs` installs the scanner"
    options = ["--framework", "cloudformation", "--skip-download", "--output", "json"]
    result = subprocess.run(
        [str(CHECKOV), "-f", "template.yaml", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.stdout.startswith("{"), result.stderr
    return json.loads(result.stdout)["results"]


def test_the_scanner_finds_at_most_two_failed_checks(scan):
    failed = [f"{c['check_id']} {c['check_name']} ({c['resource']})" for c in scan["failed_checks"]]
    assert len(failed) <= 2, failed
    assert not scan["parsing_errors"]
    assert len(scan["passed_checks"]) >= 15  # it did scan the resources


def test_every_skipped_check_says_why(scan):
    skipped = {
        c["check_id"]: c["check_result"].get("suppress_comment", "") for c in scan["skipped_checks"]
    }
    assert skipped, "expected the template's documented skips"
    for check, reason in skipped.items():
        assert len(reason.split()) >= 8, f"{check} is skipped without a reason: {reason!r}"
