"""Structured logs name the job; metrics report starts, preemptions, usage and wait."""

import json

from tjq.local.calls import training_request

from job_queue.scheduler import Share, Strategy
from tests.conftest import P5
from tests.integration.helpers import submit


def _records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_log_lines_name_the_job(cloud, caplog):
    caplog.set_level("INFO")
    submit(cloud, "low", 1)
    submit(cloud, "other", 1)
    submit(cloud, "traced", 2)
    cloud.advance(60)
    queue_records = [r for r in caplog.records if ".job_queue." in r.name]
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
    # low (1 instance) had run 90 s and saves no checkpoints: 90 instance-seconds thrown away.
    assert [r["LostInstanceSeconds"] for r in metrics if "LostInstanceSeconds" in r] == [[90.0]]
    high_start = [r for r in metrics if r.get("WaitSecondsAtStart") == [60.0]]
    assert high_start, "high waited 60 s for low's stop"
    depth = [r["QueueDepth"] for r in metrics if "QueueDepth" in r]
    assert depth == [[1.0]]  # low, preempted, waits


def test_metrics_per_share_in_use_borrowed_and_waiting(make_cloud, capsys):
    shares = (
        Share("team-a", {P5: 1}, Strategy.LEND_AND_BORROW),
        Share("team-b", {P5: 1}, Strategy.LEND),
    )
    cloud = make_cloud({}, shares=shares)
    for name in ("a1", "a2", "a3"):
        status, body = cloud.api(
            "POST", "/add-job", training_request(name, 1, share="team-a", run_seconds=3600)
        )
        assert status == 201, body
    capsys.readouterr()
    cloud.sweep()
    metrics = [r for r in _records(capsys.readouterr().out) if "_aws" in r]
    values = {k: v for r in metrics for k, v in r.items() if k.startswith("Share")}
    assert values[f"ShareInUse.team-a.{P5}"] == [2.0]
    assert values[f"ShareBorrowed.team-a.{P5}"] == [1.0]
    assert values[f"ShareInUse.team-b.{P5}"] == [0.0]
    assert values["ShareWaiting.team-a"] == [1.0]


def test_metrics_count_the_billable_instance_seconds_the_ledger_recorded_per_share(
    make_cloud, capsys
):
    shares = (
        Share("team-a", {P5: 1}, Strategy.LEND_AND_BORROW),
        Share("team-b", {P5: 1}, Strategy.LEND),
    )
    cloud = make_cloud({}, shares=shares)
    for name, share, seconds in (("a1", "team-a", 600), ("b1", "team-b", 300)):
        request = training_request(name, 1, share=share, run_seconds=seconds)
        request["ResourceConfig"]["InstanceCount"] = 1
        assert cloud.api("POST", "/add-job", request)[0] == 201
    capsys.readouterr()
    cloud.advance(600)  # both ran to completion: b1 after 300 s, a1 after 600 s
    metrics = [r for r in _records(capsys.readouterr().out) if "_aws" in r]
    billed: dict[str, list] = {}
    for record in metrics:
        for key, values in record.items():
            if key.startswith("BillableInstance"):
                billed.setdefault(key, []).extend(values)
    assert billed == {
        "BillableInstanceSeconds": [300.0, 600.0],
        "BillableInstanceSeconds.team-b": [300.0],
        "BillableInstanceSeconds.team-a": [600.0],
    }


def test_the_sweep_counts_waiting_jobs_by_reason(cloud, capsys):
    for name, priority in (("a", 3), ("b", 3), ("c", 3), ("d", 1), ("e", 1)):
        submit(cloud, name, priority)
    capsys.readouterr()
    cloud.sweep()
    metrics = [r for r in _records(capsys.readouterr().out) if "_aws" in r]
    by_reason = {k: v for r in metrics for k, v in r.items() if k.startswith("WaitingJobs.")}
    # c waits for a or b to end (its own priority); d and e wait behind c, of a higher one.
    assert by_reason == {"WaitingJobs.higher-priority": [2.0], "WaitingJobs.queue-order": [1.0]}
    listed = {row["name"]: row["waiting_for"]["code"] for row in cloud.jobs() if row["position"]}
    assert listed == {"c": "queue-order", "d": "higher-priority", "e": "higher-priority"}


def test_the_dashboard_graphs_metrics_the_queue_emits(make_cloud, capsys):
    from tests.template.test_events_and_dashboard import dashboard_metrics, load_template

    emitted = set()

    def collect():
        records = _records(capsys.readouterr().out)
        for r in records:
            for d in r.get("_aws", {}).get("CloudWatchMetrics", []):
                emitted.update(m["Name"] for m in d["Metrics"])

    cloud = make_cloud(keep_alive_seconds=600)
    submit(cloud, "low", 1)
    submit(cloud, "other", 1)
    submit(cloud, "high", 2)
    cloud.advance(60)
    cloud.sagemaker.refuse_next_creates(1)
    cloud.advance(600)
    cloud.sweep()
    collect()
    shares = (
        Share("team-a", {P5: 1}, Strategy.LEND_AND_BORROW),
        Share("team-b", {P5: 1}, Strategy.LEND),
    )
    shared = make_cloud({}, shares=shares)
    for name in ("a1", "a2", "a3"):  # a3 waits
        shared.api("POST", "/add-job", training_request(name, 1, share="team-a"))
    shared.sweep()
    collect()
    prefixes = {name.split(".")[0] for name in emitted}
    assert dashboard_metrics(load_template()) <= prefixes


def test_the_sweep_counts_jobs_blocked_past_their_limit_for_the_alarm(make_cloud, capsys):
    from job_queue.head_of_line import Act, HeadOfLineLimit
    from job_queue.limits import Limits
    from job_queue.scheduler.waiting_for import Reason

    limits = Limits(head_of_line=(HeadOfLineLimit(Reason.QUEUE_ORDER, 60, Act.ALARM),))
    cloud = make_cloud({P5: 1}, limits=limits, run_seconds=3600)
    submit(cloud, "first", 1)
    submit(cloud, "second", 1)
    counted = []
    for _ in range(4):
        cloud.advance(60)
        capsys.readouterr()
        cloud.sweep()
        records = _records(capsys.readouterr().out)
        counted.append(sum(sum(r.get("BlockedJobs", [])) for r in records if "_aws" in r))
    # The first sweep starts second's count; the third finds it past 60 s; raised once.
    assert counted == [0, 0, 1, 0]


def test_the_sweep_counts_jobs_out_of_line_for_their_dependency(cloud, capsys):
    submit(cloud, "train", 1)
    request = training_request("evaluate", 1)
    request["Tags"].append({"Key": "depends-on", "Value": "afterok:train"})
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 201, body
    capsys.readouterr()
    cloud.sweep()
    metrics = [r for r in _records(capsys.readouterr().out) if "_aws" in r]
    by_reason = {k: v for r in metrics for k, v in r.items() if k.startswith("WaitingJobs.")}
    assert by_reason == {"WaitingJobs.dependency": [1.0]}
