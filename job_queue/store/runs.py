"""How long completed jobs ran: one item, ``RUNS`` / ``RUNS``, with two counters per kind of
job (:func:`~job_queue.scheduler.forecast.run_key`): ``n|<type>|<priority>``, the completed
jobs, and ``s|<type>|<priority>``, their seconds. ``ADD`` makes each completion one
unconditional write that concurrent completions cannot lose."""

from __future__ import annotations

from collections.abc import Mapping

from job_queue.models import Demand
from job_queue.scheduler.forecast import RunHistory, run_key
from job_queue.store import table

RUNS_KEY = {"pk": "RUNS", "sk": "RUNS"}


class RunTimes:
    """The run-time history of :class:`~job_queue.store.DynamoJobStore` (a mixin)."""

    _db: object
    _table: str

    def record_run(self, demand: Demand, priority: int, seconds: float) -> None:
        """Count one completed job of this kind that ran ``seconds``."""
        label, priority = run_key(demand, priority)
        self._db.update_item(
            TableName=self._table,
            Key=table.ser(RUNS_KEY),
            UpdateExpression="ADD #n :one, #s :seconds",
            ExpressionAttributeNames={"#n": f"n|{label}|{priority}", "#s": f"s|{label}|{priority}"},
            ExpressionAttributeValues=table.ser({":one": 1, ":seconds": round(seconds, 1)}),
        )

    def run_history(self) -> RunHistory:
        """Every kind of job's completed runs (eventually consistent: an estimate)."""
        item = self._db.get_item(TableName=self._table, Key=table.ser(RUNS_KEY)).get("Item")
        return history_from(table.de(item) if item else {})


def history_from(counters: Mapping) -> RunHistory:
    """The run-time history in the ``RUNS`` item's counters."""
    runs = {}
    for name, count in counters.items():
        if name.startswith("n|"):
            label, priority = name[2:].rsplit("|", 1)
            total = counters.get(f"s|{label}|{priority}", 0)
            runs[label, int(priority)] = (int(count), float(total))
    return RunHistory(runs)
