"""DynamoDB calls per operation: what each request and event costs the real handler against
the emulation, call by call. Part of `make bench` (bench/run.py)."""

from __future__ import annotations

from collections.abc import Callable

from tabulate import tabulate

P5 = "ml.p5.48xlarge"
DEPTH = 20  # jobs waiting behind the two running ones
OPERATIONS = (
    "get_item",
    "batch_get_item",
    "query",
    "update_item",
    "transact_write_items",
    "put_item",
)


def calls() -> dict:
    """Per operation, the DynamoDB calls by kind (two jobs run on two instances, DEPTH wait)."""
    from tjq.local.cloud import LocalCloud, training_request
    from tjq.local.dynamodb_usage import DynamoDBUsage

    with LocalCloud(capacity={P5: 2}) as cloud:

        def counted(call: Callable[[], object]) -> dict[str, int]:
            usage = cloud.dynamodb_usage
            before = DynamoDBUsage(dict(usage.calls), usage.items_read, usage.items_written)
            call()
            return dict(cloud.dynamodb_usage.since(before).calls)

        def api(method: str, path: str, body=None, ok=(200, 201)) -> Callable[[], object]:
            def call():
                status, answer = cloud.api(method, path, body)
                assert status in ok, answer
                return answer

            return call

        cloud.api("GET", "/jobs")  # the queue's first request creates its holders' item
        cloud.sweep()  # and its first sweep marks the month its usage reports start from
        results = {
            "submit, starts at once": counted(
                api("POST", "/add-job", training_request("first", 9, run_seconds=600))
            )
        }
        cloud.api("POST", "/add-job", training_request("second", 9, run_seconds=3600))
        for i in range(DEPTH):
            cloud.api("POST", "/add-job", training_request(f"queued-{i}", 1))
        waits = training_request("waits", 1)
        results["submit, waits"] = counted(api("POST", "/add-job", waits))
        results["submit again (same request)"] = counted(api("POST", "/add-job", waits))
        results["GET /jobs/{name}"] = counted(api("GET", "/jobs/queued-0"))
        results["GET /jobs"] = counted(api("GET", "/jobs"))
        results["change a waiting job's priority"] = counted(
            api("PUT", "/jobs/queued-1/priority", {"priority": 2})
        )
        results["cancel a waiting job"] = counted(api("DELETE", "/jobs/queued-2"))
        # The first job completes: its events, one pass each, and the next job starts.
        results["a job completes, the next starts"] = counted(lambda: cloud.advance(660))
        results["the sweep"] = counted(cloud.sweep)
    return {label: {op: used.get(op, 0) for op in OPERATIONS} for label, used in results.items()}


def calls_table(result: dict) -> str:
    headers = (
        "Operation",
        "GetItem",
        "BatchGetItem",
        "Query",
        "UpdateItem",
        "TransactWrite",
        "PutItem",
        "Total",
    )
    rows = [
        (label, *(used[op] for op in OPERATIONS), sum(used.values()))
        for label, used in result.items()
    ]
    note = (
        f"\n\nTwo jobs run on two ml.p5.48xlarge and {DEPTH} wait. A submission reads the "
        "holders' item once, with the run-time history (one BatchGetItem); its pass and its "
        "answer's expected start both begin from that reading, and the answer reads the queue "
        "on from where the pass stopped. Its other calls: the next sequence number, the "
        "transaction that queues it, and the queue's pages (this one: two of its instance "
        "type, one of jobs on several). A job that starts at once adds the start's writes and "
        "the job read back for the answer."
    )
    return tabulate(rows, headers=headers, tablefmt="github") + note
