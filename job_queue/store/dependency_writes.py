"""Jobs out of line until their dependency holds (:mod:`job_queue.scheduler.dependencies`):
their ``DEPENDENT`` entries, their parents' states, and the move into line.

A queue that never had a dependent job reads nothing more: the holders item notes the first
one (``dependents``), and only then does each pass read the ``DEPENDENT`` partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from job_queue.models import Job, JobState
from job_queue.scheduler import WaitingJob
from job_queue.scheduler.dependencies import Dependency
from job_queue.store import codecs, table
from job_queue.store.accounts import line_of
from job_queue.store.reads import Holders
from job_queue.store.table import DEPENDENT, POOL_KEY

_BATCH = 100  # keys per BatchGetItem


class DependencyWrites:
    """The dependency reads and writes of :class:`~job_queue.store.DynamoJobStore` (a
    mixin: it uses the store's client, ``_transact``, ``_pages``, ``_placed`` and
    ``_accounts``)."""

    _dependents_marked = False

    def mark_dependents(self) -> None:
        """Note in the holders item, before the first dependent job is queued, that passes
        must read the ``DEPENDENT`` partition from now on."""
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(POOL_KEY),
            UpdateExpression="SET dependents = :yes, version = if_not_exists(version, :zero), "
            "active = if_not_exists(active, :none), pools = if_not_exists(pools, :none), "
            "outside = if_not_exists(outside, :none)",
            ExpressionAttributeValues=table.ser({":yes": True, ":zero": 0, ":none": {}}),
        )
        self._dependents_marked = True

    def has_dependents(self, held: Holders) -> bool:
        """Whether a dependent job was ever queued: as ``held`` notes it, or as this store
        just noted it (after ``held`` was read)."""
        return held.dependents or self._dependents_marked

    def dependents(self) -> list[tuple[WaitingJob, Dependency]]:
        """Every job out of line for its dependency, and what it waits for, in queue order
        (strongly consistent)."""
        query = {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": DEPENDENT},
        }
        items = [table.de(raw) for page in self._pages(query) for raw in page.get("Items", [])]
        return [
            (codecs.waiting_from_item(item), Dependency.parse(item["depends_on"])) for item in items
        ]

    def states_of(self, names: Iterable[str]) -> dict[str, JobState | None]:
        """The state of each named job (None: no such job in the table)."""
        wanted = sorted(set(names))
        states: dict[str, JobState | None] = dict.fromkeys(wanted)
        for start in range(0, len(wanted), _BATCH):
            request = {
                self._table: {
                    "Keys": [table.ser(table.job_key(n)) for n in wanted[start : start + _BATCH]],
                    "ConsistentRead": True,
                    "ProjectionExpression": "#n, #s",
                    "ExpressionAttributeNames": {"#n": "name", "#s": "state"},
                }
            }
            while request:
                result = self._db.batch_get_item(RequestItems=request)
                for raw in result.get("Responses", {}).get(self._table, []):
                    item = table.de(raw)
                    states[item["name"]] = JobState(item["state"])
                request = result.get("UnprocessedKeys") or None
        return states

    def join_line(self, job: Job, now: float, audit: Mapping) -> None:
        """Its dependency holds: the job leaves the ``DEPENDENT`` partition for its place in
        line (same priority and submission order; its submitter's line with fair share).
        StaleState if it moved on meanwhile (cancelled, or joined by another pass)."""
        joined = self._placed(replace(job, dependency_met_at=now))
        self._transact(
            table.set_fields(
                table.job_key(job.name),
                {"dependency_met_at": now, "updated_at": now, "in_line": joined.in_line},
                "#state = :expected_state AND attribute_not_exists(dependency_met_at)",
                {":expected_state": job.state.value},
                audit=audit,
            ),
            table.delete(table.waiting_key(job), "attribute_exists(pk)"),
            table.put(codecs.waiting_item(joined)),
            *self._accounts({line_of(joined): 1}),
        )
