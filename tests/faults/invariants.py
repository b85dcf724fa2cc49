"""What must hold whatever fails: after every step (the cap, one attempt at a time), once
the faults stop (the queue settles: it agrees with SageMaker and leaves no instance idle
while a job that fits waits), and at the end (nothing accepted is lost, every job ended,
its attempts and audit trail are what SageMaker saw).

Each check answers a list of violations, in words a reader of a failed run understands.
SageMaker's side is read from the emulator itself, the queue's from its table (past the
faulty wire), never from the queue's own answers.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from job_queue import tags
from job_queue.ledger import NOT_STARTED
from job_queue.limits import ran_for
from job_queue.models import Action, JobState, Outcome
from job_queue.scheduler import dependencies
from job_queue.scheduler.budgets import Holder

_HOLDING = ("InProgress", "Stopping")
_STATUS_OF = {
    Outcome.COMPLETED: "Completed",
    Outcome.FAILED: "Failed",
    Outcome.CAPACITY_ERROR: "Failed",
    Outcome.PREEMPTED: "Stopped",
    Outcome.CANCELLED: "Stopped",
    Outcome.STOPPED: "Stopped",
}


def _owner(world, emulated) -> str | None:
    return tags.queued_job(emulated.tags, world.cloud.settings.queue_name)


def every_step(world) -> list[str]:
    """The cap is never exceeded (jobs, warm pools and outside jobs counted, on-demand and
    on training plans), and no queued job has two SageMaker jobs holding instances."""
    sagemaker, found = world.cloud.sagemaker, []
    for itype, cap in world.capacity.items():
        peak = sagemaker.peak_in_use.get(itype, 0)
        if peak > cap:
            found.append(f"{peak} x {itype} were held at once, over the cap of {cap}")
    holding = Counter()
    for emulated in sagemaker.jobs.values():
        if emulated.status in _HOLDING and (owner := _owner(world, emulated)):
            holding[owner] += 1
            if emulated.pending:
                found.append(f"{emulated.name} was started on a training plan with no room")
    found += [f"{job} had {n} SageMaker jobs at once" for job, n in holding.items() if n > 1]
    return found


def unsettled(world) -> list[str]:
    """Why the queue has not settled yet (empty: it has): events still on their way, the
    table and SageMaker disagreeing on who holds instances, or idle capacity while the
    first job in line fits in it."""
    if world.pending_deliveries():
        return ["events are still on their way"]
    sagemaker, found = world.cloud.sagemaker, []
    for name in sorted(world.names):
        job = world.store.get(name)
        if job is None or not job.state.holds_instances:
            continue
        emulated = sagemaker.jobs.get(job.attempt_name)
        if emulated is None or emulated.status not in _HOLDING:
            status = emulated.status if emulated else "no such job"
            found.append(f"{name} is {job.state} but {job.attempt_name} is {status}")
    for emulated in sagemaker.jobs.values():
        owner = _owner(world, emulated)
        if owner is None or emulated.status not in _HOLDING:
            continue
        job = world.store.get(owner)
        if job is None or not job.state.holds_instances or job.attempt_name != emulated.name:
            state = job.state if job else "unknown to the queue"
            found.append(f"SageMaker runs {emulated.name} for {owner}, which is {state}")
    if world.strict_order:
        found += _idle_while_waiting(world)
    return found


def _idle_while_waiting(world) -> list[str]:
    sagemaker, now, found = world.cloud.sagemaker, world.clock(), []
    for itype, cap in world.capacity.items():
        held = sum(
            j.demand.get(itype, 0)
            for j in sagemaker.jobs.values()
            if j.status in _HOLDING and not j.plan
        )
        head = next(iter(world.store.waiting([itype], lines=_lines(world))), None)
        if head is None or head.not_before > now or set(head.demand) != {itype}:
            continue
        if head.demand[itype] <= cap - held:
            found.append(
                f"{head.name} waits for {head.demand[itype]} x {itype}, and {cap - held} are idle"
            )
    return found


def _lines(world) -> dict:
    accounts = world.store.accounts(world.store.holders())
    return accounts.lines if accounts else {}


def _accounts_agree(world) -> list[str]:
    """Fair share's accounts count no job waiting once none waits: every write that queued
    or started a job counted it, once."""
    accounts = world.store.accounts(world.store.holders())
    return [
        f"{who}'s account counts {n} jobs waiting in {plain}, and none waits"
        for (plain, who), n in sorted((accounts.counts if accounts else {}).items())
    ]


def all_ended(world) -> bool:
    """Every job the users submitted has ended, and nothing of the queue's runs."""
    if world.pending_deliveries():
        return False
    for name in world.names:
        job = world.store.get(name)
        if job is not None and not job.state.is_finished and not _held_by_budget(world, job):
            return False
    return not any(
        _owner(world, j) and j.status in _HOLDING for j in world.cloud.sagemaker.jobs.values()
    )


def _held_by_budget(world, job) -> bool:
    """A waiting job whose submitter spent the budget deployed for it: the ledger (not the
    queue's own explanation) shows the instance-hours of its window used up."""
    budget = world.cloud.settings.budgets.get(Holder("submitter", job.submitter))
    if budget is None or not job.state.is_waiting:
        return False
    since = world.clock() - budget.window_days * 86400
    records = world.store.usage_records(since)
    spent = sum(r.billable_instance_s for r in records if r.submitter == job.submitter)
    return spent / 3600 >= budget.amount


def at_the_end(world) -> list[str]:
    """Nothing accepted was lost; every job ended as it should (completed, or cancelled if
    its user cancelled it, or failed if it was preempted more often than allowed, blocked
    its line past its HeadOfLineLimits or ran past its max-total-runtime); each
    job's attempts are the SageMaker jobs started for it, ended as SageMaker says; its audit
    trail says who did what."""
    found = []
    ran = defaultdict(list)
    for emulated in world.cloud.sagemaker.jobs.values():
        if owner := _owner(world, emulated):
            ran[owner].append(emulated)
    for name in sorted(world.names | set(ran)):
        job = world.store.get(name)
        if job is None:
            if name in world.accepted:
                found.append(f"{name} was accepted, and the queue lost it")
            if ran[name]:
                found.append(f"SageMaker ran {name}, which the queue does not know")
            continue
        ended = JobState.CANCELLED if name in world.cancelled else JobState.COMPLETED
        cap = world.cloud.settings.limits.preemptions_allowed(job.max_preemptions)
        if cap is not None and job.preemptions > cap:
            ended = JobState.FAILED  # preempted past its cap: it must not go back in line
        if any(entry.action is Action.BLOCKED for entry in job.history):
            ended = JobState.FAILED  # failed at the head of its line past HeadOfLineLimits
        total = job.max_total_runtime
        if total is not None and ran_for(job.attempts, world.clock()) > total:
            ended = JobState.FAILED  # its attempts ran longer in all than it allows
        if job.dependency is not None:
            ended = _dependency_end(world, name, job, ended)
            found += _started_after_parents(world, name, job)
        if _held_by_budget(world, job):
            ended = job.state  # it waits for its submitter's budget, as it must
        if job.state not in (ended, JobState.COMPLETED):
            why = f" ({job.failure_reason})" if job.failure_reason else ""
            found.append(f"{name} ended {job.state}{why}, not {ended}")
        found += _attempts_as_sagemaker_saw(name, job, ran[name])
        found += _audit_trail(name, job)
    return found + _accounts_agree(world) + _ledger_as_sagemaker_billed(world, ran)


def _ledger_as_sagemaker_billed(world, ran) -> list[str]:
    """The usage ledger has one record per ended attempt, ended as the attempt did and
    covering the whole time SageMaker ran it (give or take the containers' clock skew), and
    at most one per warm pool."""
    found, of = [], defaultdict(list)
    for record in world.store.usage_records(0.0):
        of["pool" if record.pool else "attempt", record.name].append(record)
    found += [
        f"the ledger has {len(kept)} records of the warm pool of {name}"
        for (kind, name), kept in of.items()
        if kind == "pool" and len(kept) > 1
    ]
    skew = world.max_skew_s + 1.0  # every container's clock, to the second
    for emulated in (j for jobs in ran.values() for j in jobs if j.ended_at is not None):
        ended = [r for r in of["attempt", emulated.name] if r.outcome != NOT_STARTED]
        if len(ended) != 1:
            found.append(f"the ledger has {len(ended)} records of the attempt {emulated.name}")
            continue
        start, end = ended[0].started_at, ended[0].ended_at
        if start > emulated.created_at + skew or end < emulated.ended_at - skew:
            found.append(
                f"the ledger's record of {emulated.name} ({start:.0f} to {end:.0f}) misses "
                f"SageMaker's {emulated.created_at:.0f} to {emulated.ended_at:.0f}"
            )
    return found


def _dependency_end(world, name, job, ended: JobState) -> JobState:
    """How a dependent job must end: cancelled if its parents ended so that its dependency
    can never hold (the pure rule, over the parents' final states)."""
    states = {p: (found.state if (found := world.store.get(p)) else None) for p in world.names}
    settled = dependencies.settle([dependencies.Dependent(name, job.dependency)], states)
    return JobState.CANCELLED if name in settled.doomed else ended


def _started_after_parents(world, name, job) -> list[str]:
    """A dependent job never starts before the parents it waits for have ended."""
    if not job.attempts:
        return []
    parents = [world.store.get(p) for p in job.dependency.parents]
    ends = [p.ended_at for p in parents if p is not None and p.ended_at is not None]
    if len(ends) < len(parents) or job.attempts[0].started_at < max(ends):
        return [f"{name} started before the jobs it depends on ({job.dependency}) ended"]
    return []


def _attempts_as_sagemaker_saw(name, job, ran) -> list[str]:
    found = []
    recorded = {a.sagemaker_job_name: a for a in job.attempts}
    started = {j.name: j for j in ran}
    if set(recorded) != set(started):
        found.append(
            f"{name}'s attempts are {sorted(recorded)}, but SageMaker ran {sorted(started)}"
        )
    completed = [j.name for j in ran if j.status == "Completed"]
    if len(completed) > 1:
        found.append(f"{name} ran to completion twice: {completed}")
    for attempt_name, attempt in recorded.items():
        emulated = started.get(attempt_name)
        expected = _STATUS_OF.get(attempt.outcome)
        if emulated is not None and expected != emulated.status:
            found.append(
                f"{name}'s attempt {attempt_name} is recorded as {attempt.outcome}, "
                f"but SageMaker has it {emulated.status}"
            )
    return found


def _audit_trail(name, job) -> list[str]:
    found = []
    actions = Counter(entry.action for entry in job.history)
    if actions[Action.SUBMITTED] != 1:
        found.append(f"{name}'s audit trail has {actions[Action.SUBMITTED]} submissions")
    if job.state is JobState.CANCELLED and not actions[Action.CANCELLED]:
        found.append(f"{name} was cancelled, and its audit trail does not say by whom")
    if job.preemptions > actions[Action.PREEMPTED]:
        found.append(
            f"{name} was preempted {job.preemptions} times, and its audit trail "
            f"says {actions[Action.PREEMPTED]}"
        )
    return found
