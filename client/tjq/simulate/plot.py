"""`smq simulate --plot`: what a replay did, as a picture.

* ``gantt`` (a few hundred jobs at most): one bar per attempt, coloured by priority, hatched
  if preempted, with queue depth beneath.
* ``load`` (any size): instances in use by priority over time, stacked, against the
  capacity; queue depth; and each priority's waits as a distribution.

``auto`` picks the Gantt chart up to :data:`GANTT_JOBS` jobs, the load chart beyond.
"""

from __future__ import annotations

from job_queue.models import Outcome
from tjq.simulate.engine import SimResult

GANTT_JOBS = 300  # beyond this a row per job is ink
KINDS = ("auto", "gantt", "load")


def plot(result: SimResult, path: str, kind: str = "auto") -> str:
    """Write a PNG of ``kind`` to ``path``; the kind drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if kind == "auto":
        kind = "gantt" if sum(1 for j in result.jobs if j.attempts) <= GANTT_JOBS else "load"
    figure = (_gantt if kind == "gantt" else _load)(result, plt, matplotlib)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return kind


def _scale(result: SimResult) -> tuple[float, str]:
    span = max((t for t, _ in result.queue_depth), default=0.0)
    return (3600.0, "hours") if span > 7200 else (1.0, "seconds")


def _colours(result: SimResult, matplotlib) -> dict[int, tuple]:
    priorities = sorted({job.spec.priority for job in result.jobs})
    colours = matplotlib.colormaps["viridis"].resampled(max(len(priorities), 2))
    return {p: colours(i) for i, p in enumerate(priorities)}


def _title(result: SimResult) -> str:
    pool = ", ".join(f"{n} x {t}" for t, n in result.settings.capacity.items())
    return f"{len(result.jobs)} jobs on {pool}"


def _depth(axes, result: SimResult, scale: float, unit: str) -> None:
    times = [t / scale for t, _ in result.queue_depth]
    axes.step(times, [d for _, d in result.queue_depth], where="post", color="tab:gray")
    axes.set_ylabel("waiting jobs")
    axes.set_xlabel(f"{unit} since the first submission")


def _gantt(result: SimResult, plt, matplotlib):
    jobs = [job for job in result.jobs if job.attempts]
    colour = _colours(result, matplotlib)
    scale, unit = _scale(result)
    figure, (gantt, depth) = plt.subplots(
        2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    for row, job in enumerate(jobs):
        for attempt in job.attempts:
            if attempt.end is None:
                continue
            preempted = attempt.outcome is Outcome.PREEMPTED
            gantt.barh(
                row,
                (attempt.end - attempt.start) / scale,
                left=attempt.start / scale,
                height=0.8,
                color=colour[job.spec.priority],
                hatch="//" if preempted else None,
                edgecolor="black" if preempted else None,
                linewidth=0.3,
            )
    gantt.set_ylabel("job (attempts; hatched = preempted)")
    if len(jobs) <= 40:
        gantt.set_yticks(range(len(jobs)), [job.spec.name for job in jobs], fontsize="small")
    else:
        gantt.set_yticks([])
    gantt.invert_yaxis()  # first started at the top
    priorities = sorted(colour, reverse=True)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[p]) for p in priorities]
    gantt.legend(
        handles,
        [f"priority {p}" for p in priorities],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),  # beside the bars, never over them
        fontsize="small",
    )
    gantt.set_title(_title(result))
    _depth(depth, result, scale, unit)
    return figure


def in_use_by_priority(result: SimResult) -> tuple[list[float], dict[int, list[int]]]:
    """The times at which use changes, and, per priority, the capped instances its jobs hold
    from each of those times on (attempts from start to end)."""
    capped = set(result.settings.capacity)
    changes: dict[float, dict[int, int]] = {}
    for job in result.jobs:
        count = sum(n for t, n in job.spec.demand.items() if t in capped)
        for attempt in job.attempts if count else ():
            if attempt.end is None:
                continue
            for at, delta in ((attempt.start, count), (attempt.end, -count)):
                by_priority = changes.setdefault(at, {})
                by_priority[job.spec.priority] = by_priority.get(job.spec.priority, 0) + delta
    times = sorted(changes)
    priorities = sorted({job.spec.priority for job in result.jobs})
    held = dict.fromkeys(priorities, 0)
    series: dict[int, list[int]] = {p: [] for p in priorities}
    for at in times:
        for priority, delta in changes[at].items():
            held[priority] += delta
        for priority in priorities:
            series[priority].append(held[priority])
    return times, series


def _load(result: SimResult, plt, matplotlib):
    colour = _colours(result, matplotlib)
    scale, unit = _scale(result)
    figure = plt.figure(figsize=(11, 9))
    grid = figure.add_gridspec(3, 1, height_ratios=[3, 1, 2])
    load = figure.add_subplot(grid[0])
    depth = figure.add_subplot(grid[1], sharex=load)
    waits = figure.add_subplot(grid[2])

    times, series = in_use_by_priority(result)
    x = [t / scale for t in times]
    below = [0] * len(times)
    for priority in sorted(series, reverse=True):  # the highest priority at the bottom
        above = [b + n for b, n in zip(below, series[priority], strict=True)]
        load.fill_between(
            x, below, above, step="post", color=colour[priority], label=f"priority {priority}"
        )
        below = above
    capacity = sum(result.settings.capacity.values())
    load.axhline(capacity, color="black", linestyle="--", linewidth=1, label="capacity")
    load.set_ylabel("instances in use")
    load.set_ylim(0, capacity * 1.08 or 1)
    load.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    load.set_title(_title(result))
    _depth(depth, result, scale, unit)

    for priority in sorted(colour, reverse=True):
        waited = sorted(
            (job.attempts[0].start - job.spec.submit_s) / 3600
            for job in result.jobs
            if job.attempts and job.spec.priority == priority
        )
        if waited:
            share = [(i + 1) / len(waited) for i in range(len(waited))]
            waits.step(
                waited, share, where="post", color=colour[priority], label=f"priority {priority}"
            )
    waits.set_xlabel("wait, hours from submission to first start")
    waits.set_ylabel("fraction of jobs started")
    waits.set_ylim(0, 1.02)
    waits.legend(loc="lower right", fontsize="small")
    return figure
