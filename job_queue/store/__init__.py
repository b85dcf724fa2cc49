"""Queue storage: the DynamoDB table that holds jobs, the waiting queue and the pool.

* :mod:`~job_queue.store.table` — the key design and the write expressions;
* :mod:`~job_queue.store.codecs` — items to and from the queue's types;
* :mod:`~job_queue.store.dynamodb` — the store: reads in queue order, conditional transitions.
"""

from job_queue.store.dynamodb import DynamoJobStore, Holders
from job_queue.store.table import order_key

__all__ = ["DynamoJobStore", "Holders", "order_key"]
