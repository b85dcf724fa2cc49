"""Structured logs name the job; metrics report starts, preemptions, usage and wait."""

import json

from tests.integration.helpers import submit


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_log_lines_name_the_job(cloud, caplog):
    caplog.set_level("INFO")
    submit(cloud, "low", 1)
    submit(cloud, "other", 1)
    submit(cloud, "traced", 2)
    cloud.advance(60)
    queue_records = [r for r in caplog.records if r.name.endswith("job_queue.service")]
    messages = {r.getMessage() for r in queue_records}
    assert {"job queued", "job started", "job preempted"} <= messages
    assert all(getattr(r, "job", None) for r in queue_records), "every line names its job"


def test_metrics_report_starts_preemptions_usage_and_wait(cloud, capsys):
    submit(cloud, "low", 1)
    submit(cloud, "mid", 2)
    cloud.advance(90)
    submit(cloud, "high", 3)
    cloud.advance(60)
    cloud.sweep()
    metrics = [r for r in _records(capsys.readouterr().out) if "_aws" in r]
    names = {
        m["Name"] for r in metrics for d in r["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]
    }
    assert {"JobsStarted", "Preemptions", "WaitSecondsAtStart", "QueueDepth"} <= names
    assert "InstancesInUse.ml.p5.48xlarge" in names
    high_start = [r for r in metrics if r.get("WaitSecondsAtStart") == [60.0]]
    assert high_start, "high waited 60 s for low's stop"
    depth = [r["QueueDepth"] for r in metrics if "QueueDepth" in r]
    assert depth == [[1.0]]  # low, preempted, waits
