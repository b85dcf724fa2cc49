"""Errors of the queue's client side. Each message is meant for the person at the keyboard."""


class QueueClientError(Exception):
    """Base class of everything the client raises."""


class NotConfigured(QueueClientError):
    """No API URL: neither given nor in SMQ_API_URL."""


class NoCredentials(QueueClientError):
    """No AWS credentials to sign requests with."""


class QueueUnreachable(QueueClientError):
    """The API did not answer (wrong URL, endpoint down, no route to the VPC endpoint)."""


class QueueApiError(QueueClientError):
    """The API answered with an error; ``message`` is the server's own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class AccessDenied(QueueApiError):
    """403: the credentials may not call the API, or the role is not allowed."""


class JobNotFound(QueueApiError):
    """404: no job of that name."""


class JobConflict(QueueApiError):
    """409: the job's state does not allow the change, or the name is taken."""


class UnknownShare(QueueClientError):
    """A share that the queue does not have was named."""


class InvalidJob(QueueClientError):
    """A request refused before it was sent (for example, a priority that is not an integer)."""


class JobEnded(QueueClientError):
    """``fit(wait=True)`` followed a job that ended without a SageMaker job to report on."""


class JobNotStarted(QueueClientError):
    """The job has not run yet, so there is no SageMaker job to answer with."""
