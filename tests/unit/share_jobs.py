"""The jobs, pools and teams the scenarios of quota shares with the other rules are written
against."""

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, Share, Strategy, WaitingJob
from job_queue.scheduler.snapshot import WarmPool

P5 = "ml.p5.48xlarge"
NOW = 100_000.0
ALLOWANCE = Policy().start_allowance_s

# Two teams of two instances: A borrows (and preempts within itself), B only lends.
A = Share("A", {P5: 2}, Strategy.LEND_AND_BORROW, in_share_preemption=True)
B = Share("B", {P5: 2}, Strategy.LEND)
TEAMS = (A, B)


def waiting(name, share, priority=0, instances=1, max_runtime=None, key=None, seq=None):
    return WaitingJob(
        name=name,
        priority=priority,
        seq=seq if seq is not None else sum(map(ord, name)),
        demand={P5: instances},
        max_runtime=max_runtime,
        share=share,
        warm_key=key,
        submitted_at=NOW - 60,
    )


def running(name, share, priority=0, started=NOW - 5000, ends_at=None, checkpoint=None):
    """A running job; ``ends_at``: when its MaxRuntimeInSeconds bound ends (None: no bound)."""
    max_runtime = None if ends_at is None else ends_at - started - ALLOWANCE
    return ActiveJob(
        name=name,
        priority=priority,
        seq=sum(map(ord, name)),
        demand={P5: 1},
        state=JobState.RUNNING,
        started_at=started,
        max_runtime=max_runtime,
        share=share,
        checkpoint=checkpoint,
    )


def pool(job, share, key):
    return WarmPool(
        f"{job}-1", job, {P5: 1}, key, since=NOW - 100, expires_at=NOW + 500, share=share
    )
