"""`smq simulate --plot`: instance use per job over time, and queue depth beneath."""

from __future__ import annotations

from job_queue.models import Outcome
from tjq.simulate.engine import SimResult

_MAX_ROWS = 400  # beyond this a Gantt chart is ink: show the busiest jobs


def plot(result: SimResult, path: str) -> None:
    """Write a PNG: one bar per attempt (coloured by priority, hatched if preempted)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = [job for job in result.jobs if job.attempts]
    if len(jobs) > _MAX_ROWS:
        jobs = sorted(jobs, key=lambda j: -sum(a.end - a.start for a in j.attempts if a.end))
        jobs = sorted(jobs[:_MAX_ROWS], key=lambda j: j.attempts[0].start)
    priorities = sorted({job.spec.priority for job in result.jobs})
    colours = matplotlib.colormaps["viridis"].resampled(max(len(priorities), 2))
    colour = {p: colours(i) for i, p in enumerate(priorities)}

    span = max((t for t, _ in result.queue_depth), default=0.0)
    scale, unit = (3600.0, "hours") if span > 7200 else (1.0, "seconds")
    figure, (gantt, depth) = plt.subplots(
        2, 1, figsize=(11, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    for row, job in enumerate(jobs):
        for attempt in job.attempts:
            if attempt.end is None:
                continue
            gantt.barh(
                row,
                (attempt.end - attempt.start) / scale,
                left=attempt.start / scale,
                height=0.8,
                color=colour[job.spec.priority],
                hatch="//" if attempt.outcome is Outcome.PREEMPTED else None,
                edgecolor="black" if attempt.outcome is Outcome.PREEMPTED else None,
                linewidth=0.3,
            )
    gantt.set_ylabel("job (attempts; hatched = preempted)")
    if len(jobs) <= 40:
        gantt.set_yticks(range(len(jobs)), [job.spec.name for job in jobs], fontsize="small")
    else:
        gantt.set_yticks([])
    gantt.invert_yaxis()  # first started at the top
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[p]) for p in reversed(priorities)]
    gantt.legend(
        handles, [f"priority {p}" for p in reversed(priorities)], loc="upper left", fontsize="small"
    )
    pool = ", ".join(f"{n} x {t}" for t, n in result.settings.capacity.items())
    gantt.set_title(f"{len(result.jobs)} jobs on {pool}")
    times = [t / scale for t, _ in result.queue_depth]
    depth.step(times, [d for _, d in result.queue_depth], where="post")
    depth.set_ylabel("waiting jobs")
    depth.set_xlabel(f"{unit} since the first submission")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
