"""The usage ledger in the table: one ``USAGE`` item per ended attempt and per ended warm
pool (:mod:`job_queue.ledger`), Put inside the transaction that ends it, so that a record
exists exactly when its end was written. Sorted by when it ended, so that a report reads
one range of one partition, never the jobs.

The same transaction adds the record's billable instance-seconds to its share's and its
submitter's spending (``SPENT#<kind>#<name>``, one item per calendar month, an attribute
per UTC day and capacity key), so that a pass reads a budgeted holder's window with one
Query (:mod:`job_queue.scheduler.budgets`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from job_queue.ledger import Phase, Span, UsageRecord, spending
from job_queue.scheduler.budgets import DAY, Holder, holders_of
from job_queue.store import table

USAGE_PK = "USAGE"
# Records outlive the jobs (FINISHED_RETENTION_DAYS): a year of reports, and a month more.
RECORD_RETENTION_S = 400 * 86400


def usage_sort_key(at: float) -> str:
    """The sort key prefix of a record that ended at ``at``: in order of ending."""
    return f"{int(at):011d}"


def usage_item(record: UsageRecord) -> dict:
    item = {
        "pk": USAGE_PK,
        # An attempt and the pool it left may end in the same second: their keys differ.
        "sk": f"{usage_sort_key(record.ended_at)}#{record.name}{'#pool' if record.pool else ''}",
        "name": record.name,
        "job": record.job,
        "demand": dict(record.demand),
        "spans": [[s.phase.value, s.start, s.end] for s in record.spans],
        "lost_s": record.lost_s,
        table.TTL_ATTRIBUTE: int(record.ended_at + RECORD_RETENTION_S),
    }
    optional = {
        "submitter": record.submitter,
        "share": record.share,
        "plan": record.plan,
        "pool": record.pool or None,
        "outcome": record.outcome,
        "warm_start": record.warm_start or None,
        "billed_s": record.billed_s,
        "queued_at": record.queued_at,
        "priority": record.priority,
    }
    item.update({k: v for k, v in optional.items() if v is not None})
    return item


def record_from_item(item: Mapping) -> UsageRecord:
    return UsageRecord(
        name=item["name"],
        job=item["job"],
        demand={t: int(n) for t, n in item["demand"].items()},
        spans=tuple(Span(Phase(p), float(a), float(b)) for p, a, b in item["spans"]),
        submitter=item.get("submitter"),
        share=item.get("share"),
        plan=item.get("plan"),
        pool=bool(item.get("pool")),
        outcome=item.get("outcome"),
        lost_s=float(item.get("lost_s", 0)),
        warm_start=bool(item.get("warm_start")),
        billed_s=float(item["billed_s"]) if "billed_s" in item else None,
        queued_at=float(item["queued_at"]) if "queued_at" in item else None,
        priority=int(item["priority"]) if "priority" in item else None,
    )


class LedgerWrites:
    """The ledger's part of :class:`~job_queue.store.DynamoJobStore` (a mixin): the Put
    that goes into an ending transaction, and the one read a report makes."""

    def _ledger(self, record: UsageRecord | None) -> list[dict]:
        """The Put action of ``record`` (a :func:`recorded` one; None: nothing to put), and
        the Updates that add it to its holders' spending."""
        if record is None:
            return []
        return [table.put(usage_item(record)), *spending_updates(record)]

    def spent(self, holders: Iterable[Holder], since_day: int) -> dict[Holder, dict]:
        """Each holder's recorded spending from ``since_day`` on (one Query per holder)."""
        found = {}
        for holder in holders:
            query = {
                "KeyConditionExpression": "pk = :pk AND sk >= :from",
                "ExpressionAttributeValues": {":pk": spent_key(holder), ":from": _month(since_day)},
            }
            days: dict[int, dict[str, float]] = {}
            for page in self._pages(query):
                for item in page["Items"]:
                    for name, value in table.de(item).items():
                        if name.startswith("d") and " " in name:
                            day, key = name[1:].split(" ", 1)
                            if int(day) >= since_day:
                                days.setdefault(int(day), {})[key] = float(value)
            found[holder] = days
        return found

    def usage_records(self, ended_after: float) -> list[UsageRecord]:
        """Every record of what ended after ``ended_after`` (one Query, paged)."""
        query = {
            "KeyConditionExpression": "pk = :pk AND sk >= :from",
            "ExpressionAttributeValues": {":pk": USAGE_PK, ":from": usage_sort_key(ended_after)},
        }
        pages = self._pages(query)
        return [record_from_item(table.de(item)) for page in pages for item in page["Items"]]


def spent_key(holder: Holder) -> str:
    return f"SPENT#{holder.kind}#{holder.name}"


def _month(day: int) -> str:
    return time.strftime("%Y-%m", time.gmtime(day * DAY))


def spending_updates(record: UsageRecord) -> list[dict]:
    """ADDs of ``record``'s billable instance-seconds to its holders' month items."""
    months: dict[str, dict[str, float]] = {}
    for day, keys in spending(record).items():
        for key, seconds in keys.items():
            months.setdefault(_month(day), {})[f"d{day} {key}"] = seconds
    updates = []
    for holder in holders_of(record.share, record.submitter):
        for month, counts in months.items():
            names = {f"#a{i}": name for i, name in enumerate(counts)}
            values = {f":a{i}": seconds for i, seconds in enumerate(counts.values())}
            adds = ", ".join(f"#a{i} :a{i}" for i in range(len(counts)))
            names["#ttl"] = table.TTL_ATTRIBUTE
            values[":ttl"] = int(record.ended_at + RECORD_RETENTION_S)
            key = {"pk": spent_key(holder), "sk": month}
            updates.append(table.update(key, f"ADD {adds} SET #ttl = :ttl", None, values, names))
    return updates


def recorded(record: UsageRecord | None) -> UsageRecord | None:
    """What a write puts in the ledger: ``record``, if it held anything (time or a bill)."""
    if record is None or not (record.spans or record.billed_s is not None):
        return None
    return record
