"""A queued job's progress in words, as the SDK sessions and `TrainingQueue` print it.

Pure functions over the queue's JSON view of a job (GET /jobs/{name}).
"""

from __future__ import annotations

from job_queue.models import JobState

FINISHED = frozenset(state.value for state in JobState if state.is_finished)
WAITING = frozenset(state.value for state in JobState if state.is_waiting)
STARTED = frozenset((JobState.STARTING.value, JobState.RUNNING.value))


def describe_state(job: dict) -> str:
    """Where the job is now: "queued at position 3 (priority 2)", "started as ..."."""
    state = job["state"]
    if state in WAITING:
        share = f", share {job['share']}" if job.get("share") else ""
        return f"queued at position {job.get('position')} (priority {job['priority']}{share})"
    if state in STARTED:
        return f"started as SageMaker job {job['sagemaker_job_name']}{_on_pool(job)}"
    if state == JobState.FAILED:
        return f"failed: {job['failure_reason']}"
    return state


def progress(last: dict | None, job: dict) -> str | None:
    """What changed between two looks at a job, in words; None if nothing did."""
    state = job["state"]
    if last is None:
        return describe_state(job)
    if state == last["state"]:
        if state in WAITING and job.get("position") != last.get("position"):
            return f"now at position {job['position']}"
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
        waiting = f"waiting to resume, at position {job.get('position')}"
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
