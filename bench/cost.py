"""What one scheduling pass costs in DynamoDB and SageMaker calls, at 10 to 10,000 queued
jobs, against the AWS blog's Scan-based pattern; and with fair share on, the queued jobs
those of 100 submitters. Part of `make bench` (bench/run.py)."""

from __future__ import annotations

import json

from tabulate import tabulate

from job_queue.scheduler import Share, Strategy


def cost(depths: list[int]) -> dict:
    import boto3

    results = {}
    for depth in depths:
        results[depth] = {
            "queue": _queue_pass(depth),
            "queue_with_shares": _queue_pass(depth, with_shares=True),
            "queue_with_fair_share": _queue_pass(depth, submitters=FAIR_SUBMITTERS),
            "blog": _blog_scan_pattern(boto3, depth),
        }
    return results


# With shares: two teams of one instance each; the queued jobs all belong to the first.
COST_SHARES = (
    Share("team-a", {"ml.p5.48xlarge": 1}, Strategy.LEND_AND_BORROW, in_share_preemption=True),
    Share("team-b", {"ml.p5.48xlarge": 1}, Strategy.LEND),
)


FAIR_SUBMITTERS = 100


def _queue_pass(depth: int, with_shares: bool = False, submitters: int = 0) -> dict:
    """What one scheduling pass costs the queue (the real handler against the emulation):
    two jobs run, ``depth`` wait; the shorter one completes and the next one starts. With
    ``submitters``, fair share is on and the queued jobs are theirs, in turn."""
    from tjq.local.cloud import LocalCloud, training_request

    from job_queue.models import Job, JobState
    from job_queue.scheduler import Policy
    from job_queue.scheduler.fair_share import FairShare

    shares = COST_SHARES if with_shares else ()
    share = "team-a" if with_shares else None
    policy = Policy(fair_share=FairShare(86400.0) if submitters else None)
    with LocalCloud(capacity={"ml.p5.48xlarge": 2}, shares=shares, policy=policy) as cloud:
        for name, seconds, team in (("running-1", 60, share), ("running-2", 600, "team-b")):
            request = training_request(
                name, 9, run_seconds=seconds, share=team if with_shares else None
            )
            cloud.api("POST", "/add-job", request)
        request = training_request("queued", 1)
        cloud.deps.store.bulk_load(
            [
                Job(
                    name=f"queued-{i}",
                    priority=i % 3,
                    seq=10 + i,
                    demand={"ml.p5.48xlarge": 1},
                    state=JobState.PENDING,
                    submitted_at=cloud.clock(),
                    request={**request, "TrainingJobName": f"queued-{i}"},
                    share=share,
                    submitter=f"user-{i % submitters}" if submitters else None,
                )
                for i in range(depth)
            ]
        )
        dynamo_before = _copy(cloud.dynamodb_usage)
        sagemaker_before = dict(cloud.sagemaker.calls)
        cloud.advance(60)  # running-1 completes: one event, one pass, one start
        used = cloud.dynamodb_usage.since(dynamo_before)
        sagemaker_calls = sum(cloud.sagemaker.calls.values()) - sum(sagemaker_before.values())
    return {
        "items_read": used.items_read,
        "items_written": used.items_written,
        "dynamodb_calls": sum(used.calls.values()),
        "sagemaker_calls": sagemaker_calls,
        **({"submitters": min(submitters, depth)} if submitters else {}),
    }


def _copy(usage):
    from tjq.local.dynamodb_usage import DynamoDBUsage

    return DynamoDBUsage(dict(usage.calls), usage.items_read, usage.items_written)


def _blog_scan_pattern(boto3, depth: int) -> dict:
    """The blog's manage_queue reads, against moto: a Scan for pending jobs, two
    ListTrainingJobs, a Scan for running jobs, then GetItem + UpdateItem to start one."""
    from moto import mock_aws

    with mock_aws():
        db = boto3.client("dynamodb")
        db.create_table(
            TableName="sagemaker-queue",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "jobName", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "jobName", "AttributeType": "S"}],
        )
        details = json.dumps({"AlgorithmSpecification": {"TrainingImage": "x" * 900}})
        items = [("running-1", "running"), ("running-2", "running")]
        items += [(f"queued-{i}", "pending") for i in range(depth)]
        for start in range(0, len(items), 25):
            db.batch_write_item(
                RequestItems={
                    "sagemaker-queue": [
                        {
                            "PutRequest": {
                                "Item": {
                                    "jobName": {"S": n},
                                    "jobState": {"S": s},
                                    "priority": {"N": "1"},
                                    "entryTime": {"S": "t"},
                                    "jobDetails": {"S": details},
                                }
                            }
                        }
                        for n, s in items[start : start + 25]
                    ]
                }
            )
        read = calls = 0
        for state_filter in ("jobState <> :s", "jobState = :s"):
            params = {
                "TableName": "sagemaker-queue",
                "FilterExpression": state_filter,
                "ExpressionAttributeValues": {":s": {"S": "running"}},
            }
            while True:
                page = db.scan(**params)
                calls += 1
                read += page["ScannedCount"]
                if "LastEvaluatedKey" not in page:
                    break
                params["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        db.get_item(TableName="sagemaker-queue", Key={"jobName": {"S": "queued-0"}})
        db.update_item(
            TableName="sagemaker-queue",
            Key={"jobName": {"S": "queued-0"}},
            UpdateExpression="SET jobState = :r",
            ExpressionAttributeValues={":r": {"S": "running"}},
        )
    return {
        "items_read": read + 1,
        "items_written": 1,
        "dynamodb_calls": calls + 2,
        "sagemaker_calls": 3,
    }  # two ListTrainingJobs and one CreateTrainingJob


def _fair(fair: dict, fifo: dict) -> str:
    """Items a fair-share pass reads (beyond a FIFO pass's, per active submitter) and its
    DynamoDB calls (a Query per submitter's line)."""
    per = (fair["items_read"] - fifo["items_read"]) / fair["submitters"]
    return f"{fair['items_read']} (+{per:.2f} per submitter), {fair['dynamodb_calls']} calls"


def cost_table(results: dict) -> str:
    rows = []
    for depth, r in results.items():
        q, b = r["queue"], r["blog"]
        rows.append(
            (
                f"{int(depth):,}",
                q["items_read"],
                r["queue_with_shares"]["items_read"],
                b["items_read"],
                f"{b['items_read'] / q['items_read']:.0f}x",
                _fair(r["queue_with_fair_share"], q),
                q["items_written"],
                b["items_written"],
                q["dynamodb_calls"],
                b["dynamodb_calls"],
                q["sagemaker_calls"],
                b["sagemaker_calls"],
            )
        )
    return tabulate(
        rows,
        tablefmt="github",
        headers=(
            "queued jobs",
            "items read",
            "with shares",
            "blog: items read",
            "fewer",
            "fair share, 100 submitters",
            "items written",
            "blog: written",
            "DynamoDB calls",
            "blog: calls",
            "SageMaker calls",
            "blog: calls",
        ),
    )
