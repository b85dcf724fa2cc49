"""A queued job's progress in words, as the SDK sessions and `TrainingQueue` print it.

Pure functions over the queue's JSON view of a job (GET /jobs/{name}).
"""

from __future__ import annotations

from datetime import datetime

from job_queue.models import JobState

FINISHED = frozenset(state.value for state in JobState if state.is_finished)
WAITING = frozenset(state.value for state in JobState if state.is_waiting)
STARTED = frozenset((JobState.STARTING.value, JobState.RUNNING.value))


def describe_state(job: dict) -> str:
    """Where the job is now: "queued at position 3 (priority 2)", "started as ..."."""
    state = job["state"]
    if state in WAITING:
        share = f", share {job['share']}" if job.get("share") else ""
        where = f"queued {place(job)} (priority {job['priority']}{share})"
        expected = expected_text(job)
        where = f"{where}, expected to start {expected}" if expected else where
        reason = reason_text(job)
        return f"{where}: {reason}" if reason else where
    if state in STARTED:
        return f"started as SageMaker job {job['sagemaker_job_name']}{_on_pool(job)}"
    if state == JobState.FAILED:
        return f"failed: {job['failure_reason']}"
    if state == JobState.CANCELLED and job.get("failure_reason"):
        return f"cancelled: {job['failure_reason']}"  # its dependency can never hold
    return state


def progress(last: dict | None, job: dict) -> str | None:
    """What changed between two looks at a job, in words; None if nothing did."""
    state = job["state"]
    if last is None:
        return describe_state(job)
    if state == last["state"]:
        if state in WAITING and place(job) != place(last):
            return f"now {place(job)}"
        return None
    if state in STARTED:
        if last["state"] in STARTED:
            return None
        return _started(job)
    if state in FINISHED and len(job.get("attempts") or []) > len(last.get("attempts") or []):
        # It started and ended between two looks.
        return f"{_started(job)}, then {describe_state(job)}"
    if state == JobState.PREEMPTING:
        return f"preempted by {job['preempted_by']}; stopping"
    if state == JobState.PREEMPTED:
        waiting = f"waiting to resume, {place(job)}"
        if last["state"] == JobState.PREEMPTING:
            return waiting
        # The stop was over between two looks: say who preempted it all the same.
        attempts = job.get("attempts") or [{}]
        return f"preempted by {attempts[-1].get('preempted_by')}; {waiting}"
    return describe_state(job)


def _started(job: dict) -> str:
    verb = "resumed" if job["preemptions"] else "started"
    return f"{verb} as SageMaker job {job['sagemaker_job_name']}{_on_pool(job)}"


def _on_pool(job: dict) -> str:
    """ ", on the warm pool of <SageMaker job>" for an attempt that started on one."""
    attempts = job.get("attempts") or []
    if attempts and attempts[-1].get("start") == "warm":
        return f", on the warm pool of {attempts[-1]['warm_pool_of']}"
    return ""


def place(job: dict) -> str:
    """Where a waiting job is in line: "at position 3", or, further back than the queue
    counts for one job, "behind more than 100 jobs"."""
    if job.get("position") is None and job.get("dependency") and not job.get("dependency_met_at"):
        return "until its dependency holds"
    if job.get("position") is None and job.get("position_beyond"):
        return f"behind more than {job['position_beyond']} jobs"
    return f"at position {job.get('position')}"


def reason_text(job: dict) -> str:
    """Why a waiting job waits, in words with its code first: "higher-priority: behind big
    (priority 3), ..." ("" when it starts in the next pass). A queue too old to give codes
    gives only the sentence."""
    why = job.get("waiting_for")
    if why:
        return f"{why['code']}: {why['message']}"
    return job.get("waiting_reason") or ""


def expected_text(job: dict) -> str:
    """When a waiting job is expected to start, in words: "in ~2 h, at the latest in 9 h"
    ("" when the queue cannot say). Times are counted from the queue's own clock when it
    answered (``submitted_at`` + ``waiting_seconds``), not this machine's."""
    expected = job.get("expected_start")
    if not expected or job.get("submitted_at") is None:
        return ""
    now = _seconds(job["submitted_at"]) + (job.get("waiting_seconds") or 0)
    likely, latest = expected.get("likely"), expected.get("at_latest")
    if likely is None:
        return f"at the latest {_from_now(_seconds(latest) - now)}" if latest else ""
    plain = _from_now(_seconds(likely) - now)
    if latest == likely:
        return plain if plain == "now" else f"{plain} at the latest"
    text = plain.replace("in ", "in ~", 1)
    if latest is None:
        return f"{text} (no bound: a job ahead has no MaxRuntimeInSeconds)"
    return f"{text}, at the latest {_from_now(_seconds(latest) - now)}"


def _from_now(seconds: float) -> str:
    """in 40 s, in 25 min, in 3 h, in 2 d."""
    if seconds < 30:
        return "now"
    if seconds < 90 * 60:
        return f"in {max(1, round(seconds / 60))} min"
    if seconds < 48 * 3600:
        return f"in {round(seconds / 3600)} h"
    return f"in {round(seconds / 86400)} d"


def _seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
