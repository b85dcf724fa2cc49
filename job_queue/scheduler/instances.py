"""Physical instances during one pass: free now, and releasing (held by stopping jobs, free
once their stops finish). Plain dicts per instance type, shared by both planners. Idle warm
pools hold instances too: they are neither free nor releasing until released."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from job_queue.models import Demand
from job_queue.scheduler.snapshot import ActiveJob, OutsideJob, WarmPool


def free_and_releasing(
    capacity: Mapping[str, int],
    active: Iterable[ActiveJob],
    pools: Iterable[WarmPool] = (),
    outside: Iterable[OutsideJob] = (),
) -> tuple[dict[str, int], dict[str, int]]:
    """Instances free now and instances stopping jobs are about to free, per type; jobs
    started outside the queue hold theirs until they end."""
    free = dict(capacity)
    releasing = dict.fromkeys(capacity, 0)
    for pool in [*pools, *outside]:
        for itype, count in pool.demand.items():
            if itype in free:
                free[itype] -= count
    for job in active:
        for itype, count in job.demand.items():
            if itype in free:
                free[itype] -= count
                if job.state.is_stopping:
                    releasing[itype] += count
    # Capacity lowered below what is in use (or a reservation ending): nothing is free, and
    # stops free only what the capacity still has room for.
    owed = {itype: min(releasing[itype], max(0, n + releasing[itype])) for itype, n in free.items()}
    return {itype: max(0, n) for itype, n in free.items()}, owed


def release(releasing: dict[str, int], demand: Demand) -> None:
    """A job is being stopped: its instances will free."""
    for itype, count in demand.items():
        if itype in releasing:
            releasing[itype] += count


def take(free: dict[str, int], releasing: dict[str, int], demand: Demand) -> None:
    """A job takes its instances: free ones first, then ones about to free."""
    for itype, count in demand.items():
        from_free = min(free[itype], count)
        free[itype] -= from_free
        releasing[itype] -= min(releasing[itype], count - from_free)


def shortfall(demand: Demand, available: Mapping[str, int]) -> dict[str, int]:
    """The instances of ``demand`` that ``available`` lacks, per type."""
    return {
        itype: count - available[itype]
        for itype, count in demand.items()
        if count > available[itype]
    }
