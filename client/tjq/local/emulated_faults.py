"""Faults the emulated SageMaker can be told to inject (a mixin of LocalSageMaker)."""

from __future__ import annotations

from collections import deque

from tjq.local.emulated_job import SageMakerFault


class FaultInjection:
    """Refused or throttled calls, lost responses, and jobs that fail for capacity."""

    def _init_faults(self) -> None:
        self._faults: deque[SageMakerFault] = deque()
        self._capacity_failures = 0
        self._lost_responses = 0
        self._failing: dict[str, deque[SageMakerFault]] = {}
        self._job_failures: deque[tuple[str, float]] = deque()

    def refuse_next_creates(self, count: int, code: str = "ResourceLimitExceeded") -> None:
        """The next ``count`` CreateTrainingJob calls fail with ``code``."""
        messages = {
            "ResourceLimitExceeded": "The account-level service limit for training job "
            "instances is exceeded.",
            "ThrottlingException": "Rate exceeded",
            "ValidationException": "Invalid request",
            "InternalFailure": "We encountered an internal error.",
        }
        status = 500 if code == "InternalFailure" else 400
        for _ in range(count):
            self._faults.append(SageMakerFault(code, messages.get(code, code), status))

    def fail_next(self, operation: str, count: int, code: str = "ThrottlingException") -> None:
        """The next ``count`` calls of ``operation`` (e.g. DescribeTrainingJob) fail."""
        queue = self._failing.setdefault(operation, deque())
        queue.extend(SageMakerFault(code, "Rate exceeded") for _ in range(count))

    def lose_next_create_responses(self, count: int) -> None:
        """The next ``count`` creates succeed, but the caller gets an InternalFailure."""
        self._lost_responses += count

    def fail_next_jobs(self, count: int, reason: str, after_seconds: float = 60.0) -> None:
        """The next ``count`` created jobs fail with FailureReason ``reason`` once they have
        run ``after_seconds`` (a hardware fault, an internal error)."""
        self._job_failures.extend((reason, after_seconds) for _ in range(count))

    def fail_next_jobs_for_capacity(self, count: int) -> None:
        """The next ``count`` created jobs fail at once with a CapacityError."""
        self._capacity_failures += count
