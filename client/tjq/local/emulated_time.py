"""The emulated SageMaker's jobs as its clock moves (a mixin of LocalSageMaker): when each
job next changes status on its own, and applying the changes that are due — runs ending,
stops finishing, scripts ending, warm pools expiring or kept."""

from __future__ import annotations

from tjq.local import emulated_logs, emulated_plans
from tjq.local import emulated_pools as pools
from tjq.local.emulated_container import STOP_WINDOW_S
from tjq.local.emulated_job import HOLDING, EmulatedJob


class StatusChanges:
    """Uses the service's jobs, plans, lock, containers and logs, and its ``_transition``
    and ``_start_pending``."""

    def next_change_at(self) -> float | None:
        """When the next job changes status (or its warm pool expires) on its own, if any."""
        with self._lock:
            times = [self._change_at(job) for job in self.jobs.values()]
            if any(job.pending for job in self.jobs.values()):
                times += [plan.next_change_at(self.clock()) for plan in self.plans.values()]
            times += [job.pool_expires_at for job in self.jobs.values() if job.pool_available]
            return min((t for t in times if t is not None), default=None)

    def run_until(self, when: float) -> None:
        """Apply every status change due by ``when`` (the clock already reads ``when``)."""
        with self._lock:
            self._expire_pools(when)
            self._tend_containers(when)
            for job in self.jobs.values():
                due = self._change_at(job)
                if due is None or due > when:
                    continue
                job.ended_at = due
                if job.container:
                    self._end_container(job)
                if reason := self._plan_end_reason(job, due):
                    job.end_reason = ("Failed", reason)
                if job.status == "Stopping":
                    self._keep_pool(job)
                    self._transition(job, "Stopped", "Stopped")
                else:
                    status, reason = job.end_reason
                    job.failure_reason = reason
                    if not (reason and "CapacityError" in reason):  # an infrastructure failure
                        self._keep_pool(job)
                    self._transition(job, status, status)

            self._start_pending(when)

    def _change_at(self, job: EmulatedJob) -> float | None:
        if job.container and job.status in HOLDING:
            if job.container.ended_at is not None:
                return job.container.ended_at  # its script ended
            if job.status == "Stopping":
                return job.stopped_at + STOP_WINDOW_S  # then it is killed
            return None  # it runs until its script ends
        if job.status == "InProgress" and job.pending:
            return job.created_at + emulated_plans.MAX_PENDING_S
        if job.status == "InProgress" and job.reservation_ends is not None:
            return min(job.ends_at, job.reservation_ends - emulated_plans.TERMINATION_WINDOW_S)
        if job.status == "InProgress":
            return job.ends_at
        if job.status == "Stopping":
            return job.stopped_at + self.stop_seconds
        return None

    def _tend_containers(self, now: float) -> None:
        """Send what running scripts printed to their logs and their checkpoints to S3;
        note those that ended."""
        for job in self.jobs.values():
            if job.container and job.status in HOLDING:
                if job.container.ended_at is None and job.container.exit_code is not None:
                    job.container.ended_at = now
                emulated_logs.append(self.logs, job, job.container.new_output())
                self.containers.sync(job.container)

    def _end_container(self, job: EmulatedJob) -> None:
        """A script's end (or the stop window's) ends its job."""
        container, job.container = job.container, None
        emulated_logs.append(self.logs, job, self.containers.finish(container))
        if container.exit_code != 0 and job.status == "InProgress":  # a stopped job is Stopped
            message = (
                f"AlgorithmError: the training script exited with status {container.exit_code}"
            )
            last = container.last_line
            job.end_reason = ("Failed", f"{message}: {last}" if last else message)

    def _expire_pools(self, now: float) -> None:
        """Pools whose keep-alive ran out are Terminated (no event announces it)."""
        for job in self.jobs.values():
            if job.pool_available and job.pool_expires_at <= now:
                job.pool = pools.TERMINATED

    def _keep_pool(self, job: EmulatedJob) -> None:
        pools.keep(job, self.jobs.values(), self.warm_pool_quota)
