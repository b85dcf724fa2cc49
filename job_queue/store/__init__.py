"""Queue storage: the DynamoDB table that holds jobs, the waiting queue and the pool."""

from job_queue.store.dynamodb import DynamoJobStore, Pool, order_key

__all__ = ["DynamoJobStore", "Pool", "order_key"]
