"""The queue's errors. Each carries the HTTP status the API answers with."""


class QueueError(Exception):
    """Base class: a request the queue refuses. ``str(error)`` is shown to the user."""

    status = 400


class InvalidRequest(QueueError):
    """The body or a field of it is not acceptable; the message names the field."""

    status = 400


class RoleNotAllowed(QueueError):
    """The RoleArn is not one the operator allowed the queue to pass to SageMaker."""

    status = 403


class JobNotFound(QueueError):
    status = 404


class JobConflict(QueueError):
    """The request contradicts the job's current state (a different body, a finished job)."""

    status = 409


class BodyTooLarge(QueueError):
    status = 413


class StaleState(Exception):
    """A conditional write lost a race: what was read changed. Re-read and decide again."""
