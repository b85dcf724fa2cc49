"""The queue's errors. Each :class:`QueueError` carries the HTTP status the API answers with."""

from __future__ import annotations


class QueueError(Exception):
    """Base class: a request the queue refuses. ``str(error)`` is shown to the user."""

    status = 400


class InvalidRequest(QueueError):
    """The body or a field of it is not acceptable; the message names the field.

    ``field`` is the request field at fault (``ResourceConfig.InstanceType``) when one is,
    and ``problem`` the message without it, for callers that name the field their own way
    (the simulator names a workload's line and column).
    """

    status = 400

    def __init__(self, message: str, field: str | None = None, problem: str | None = None):
        super().__init__(message)
        self.field = field
        self.problem = problem or message

    @classmethod
    def of(cls, field: str, problem: str) -> InvalidRequest:
        """``<field>: <problem>``, e.g. ``TrainingJobName: 'x_y' is not a valid ...``."""
        return cls(f"{field}: {problem}", field, problem)

    @classmethod
    def must(cls, field: str, requirement: str) -> InvalidRequest:
        """``<field> must <requirement>``, e.g. ``Tags.priority must be an integer``."""
        return cls(f"{field} must {requirement}", field, f"must {requirement}")


class RoleNotAllowed(QueueError):
    """The RoleArn is not one the operator allowed the queue to pass to SageMaker."""

    status = 403


class Forbidden(QueueError):
    """The caller may not do this (not the job's submitter, above a priority ceiling, not a
    share's submitter, not an admin); the message names the rule."""

    status = 403


class JobNotFound(QueueError):
    status = 404


class JobConflict(QueueError):
    """The request contradicts the job's current state (a different body, a finished job)."""

    status = 409


class BodyTooLarge(QueueError):
    status = 413


class SageMakerError(Exception):
    """SageMaker failed or refused a call the queue needed (not a start: a start's outcome
    is a :class:`~job_queue.sagemaker.StartOutcome`). The next sweep tries again."""


class StaleState(Exception):
    """A conditional write lost a race: what was read changed. Re-read and decide again."""


class Contended(StaleState):
    """A transaction met another one on the same item (TransactionConflict): nothing it
    checked was false, so the same write may simply be tried again."""


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""
