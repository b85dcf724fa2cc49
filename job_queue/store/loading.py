"""A deep queue written fast, for benchmarks and tests: waiting jobs in batches, without the
transactions (or checks) of a submission. Not for live use."""

from __future__ import annotations

from collections import Counter

from botocore.exceptions import ClientError

from job_queue.models import Job
from job_queue.store import codecs, table
from job_queue.store.accounts import line_of


class BulkLoading:
    """:meth:`bulk_load` of :class:`~job_queue.store.DynamoJobStore` (a mixin)."""

    _db: object
    _table: str

    def bulk_load(self, jobs: list[Job]) -> None:
        """Write waiting jobs without transactions: for benchmarks and tests that need a deep
        queue fast. Not for live use (it checks nothing). Later submissions come after them:
        the sequence moves past their ``seq``."""
        jobs = [self._placed(job) for job in jobs]
        items = [item for job in jobs for item in (codecs.job_item(job), codecs.waiting_item(job))]
        for start in range(0, len(items), 25):
            chunk = items[start : start + 25]
            batch = [{"PutRequest": {"Item": table.ser(item)}} for item in chunk]
            pending = {self._table: batch}
            while pending:
                pending = self._db.batch_write_item(RequestItems=pending).get("UnprocessedItems")
        for action in self._accounts(Counter(line_of(job) for job in jobs)):
            self._db.update_item(TableName=self._table, **action["Update"])
        top = max((job.seq for job in jobs), default=0)
        try:
            self._db.update_item(
                TableName=self._table,
                Key=table.ser(table.SEQ_KEY),
                UpdateExpression="SET #v = :top",
                ConditionExpression="attribute_not_exists(#v) OR #v < :top",
                ExpressionAttributeNames={"#v": "value"},
                ExpressionAttributeValues=table.ser({":top": top}),
            )
        except ClientError as exc:
            if table.error_code(exc) != "ConditionalCheckFailedException":
                raise  # (a failed condition: the sequence is past them already)
