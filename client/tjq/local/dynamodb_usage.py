"""What the local queue asks of DynamoDB, counted (moto's ConsumedCapacity is not real), and
a client whose calls run one at a time."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class DynamoDBUsage:
    """What the queue asked of DynamoDB: calls by operation, items read and written.

    (moto's ConsumedCapacity numbers are not real; items are what capacity is billed on.)
    """

    calls: dict[str, int] = field(default_factory=dict)
    items_read: int = 0
    items_written: int = 0

    def since(self, earlier: DynamoDBUsage) -> DynamoDBUsage:
        """What was done after ``earlier`` (a copy taken before)."""
        return DynamoDBUsage(
            calls={
                op: n - earlier.calls.get(op, 0)
                for op, n in self.calls.items()
                if n > earlier.calls.get(op, 0)
            },
            items_read=self.items_read - earlier.items_read,
            items_written=self.items_written - earlier.items_written,
        )

    def record(self, operation: str, params: dict, result: dict) -> None:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        if operation in ("query", "scan"):
            self.items_read += result.get("ScannedCount", len(result.get("Items", [])))
        elif operation == "get_item":
            self.items_read += 1 if "Item" in result else 0
        elif operation == "transact_write_items":
            self.items_written += len(params["TransactItems"])
        elif operation in ("put_item", "update_item", "delete_item"):
            self.items_written += 1


class Serialized:
    """A DynamoDB client whose calls run one at a time, and are counted.

    DynamoDB itself serializes conflicting writes; moto does not (a failed transaction even
    restores a copy of the table), so threads share one lock per request.
    """

    def __init__(self, client, lock: threading.Lock, usage: DynamoDBUsage) -> None:
        self._client, self._lock, self._usage = client, lock, usage

    def __getattr__(self, name):
        method = getattr(self._client, name)

        def call(**params):
            with self._lock:
                result = method(**params)
                self._usage.record(name, params, result)
                return result

        return call
