"""What an attempt's end means in the simulator (a mixin of its replay), as the Lambda's
lifecycle and limits decide it: completed; failed at its max runtime or for the trace's reason
(retried under RetryOnFailure); preempted and requeued at its place, unless past
MaxPreemptions or its total run time; stopped for good."""

from __future__ import annotations

from job_queue.limits import past_total_runtime, preempted_too_often, retried
from job_queue.models import JobState, Outcome


class AttemptEnds:
    """Uses the replay's results, active attempts, settings and done work, and its pools'
    and spending's bookkeeping."""

    def _end_attempt(self, index: int, number: int, now: float) -> bool:
        if not self._is_current(index, number):
            return False
        state, attempt = self.active[index]
        result = self.results[index]
        spec = result.spec
        attempt.end = now
        del self.active[index]
        self._charge(self.active_view.pop(index), attempt.start, now)
        if self.on_plan.pop(index, None) is None:
            self._leave_pool(index, attempt, now)  # a plan's reservation keeps no pool
        limits = self.settings.limits
        ran = sum(a.end - a.start for a in result.attempts)
        if state == JobState.CANCELLING:  # stopped at its max-total-runtime
            attempt.outcome = Outcome.STOPPED
            return self._fail(index, now, past_total_runtime(spec.total_runtime_cap, ran))
        if state == JobState.PREEMPTING:
            attempt.outcome = Outcome.PREEMPTED
            result.preemptions += 1
            stopping = self.settings.stop_latency * spec.instance_count
            result.lost_instance_s += attempt.work_lost * spec.instance_count + stopping
            cap = limits.preemptions_allowed(spec.preemption_cap)
            why = preempted_too_often(cap, result.preemptions) or past_total_runtime(
                spec.total_runtime_cap, ran
            )
            if why is not None:
                return self._fail(index, now, why)
            return self._requeue(index)
        finished = attempt.work_done + self.done_work[index] >= spec.duration_s - 1e-9
        if finished and spec.failure_reason and not result.retried:
            # The trace's failure, on the attempt that would have finished.
            attempt.outcome = Outcome.FAILED
            note = retried(limits.retry_on_failure, spec.failure_reason, ())
            if note is None or past_total_runtime(spec.total_runtime_cap, ran):
                return self._fail(index, now, spec.failure_reason)
            result.retried += 1
            self.done_work[index] = spec.crash_kept(attempt.work_done + self.done_work[index])
            return self._requeue(index)
        if finished:
            attempt.outcome, result.state = Outcome.COMPLETED, JobState.COMPLETED
        else:
            attempt.outcome, result.state = Outcome.FAILED, JobState.FAILED  # max runtime
        result.end_s = now
        return True

    def _requeue(self, index: int) -> bool:
        """The job goes back to its place in line, to resume."""
        self.results[index].state = JobState.PREEMPTED
        self._enqueue(index)
        return True

    def _fail(self, index: int, now: float, why: str | None) -> bool:
        result = self.results[index]
        result.state, result.failure_reason, result.end_s = JobState.FAILED, why, now
        return True
