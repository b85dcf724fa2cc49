"""What `smq`'s commands share: the API client, reading files, reporting an error."""

from __future__ import annotations

import json
import sys

from tjq.errors import QueueClientError


def fail(message: str) -> int:
    """Print ``smq: error: <message>`` on stderr; the exit code of an error."""
    print(f"smq: error: {message}", file=sys.stderr)
    return 1


def client(args, **options):
    """The API client of --url, --api-id and --region (else the environment); ``options``
    are :class:`~tjq.api.QueueClient`'s."""
    from tjq.api import QueueClient

    return QueueClient.from_environment(args.url, api_id=args.api_id, region=args.region, **options)


def read_flag_file(flag: str, path: str | None) -> str:
    """The text of the file a flag names (empty without one); QueueClientError naming both."""
    if not path:
        return ""
    try:
        with open(path) as file:
            return file.read()
    except OSError as exc:
        raise QueueClientError(f"{flag} {path}: {exc.strerror}") from None


def read_json(path: str):
    try:
        with open(path) as file:
            return json.load(file)
    except OSError as exc:
        raise QueueClientError(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise QueueClientError(f"{path} is not JSON: {exc}") from None


def read_shares(path: str, max_priority: int | None = None):
    """The shares of a shares file, or QueueClientError naming the file and the problem
    (a share's max_priority above the queue's ``max_priority`` is one)."""
    from job_queue.models import MAX_PRIORITY
    from job_queue.share_config import SharesError, check_ceilings, parse_shares

    try:
        shares = parse_shares(read_json(path))
        check_ceilings(shares, MAX_PRIORITY if max_priority is None else max_priority)
        return shares
    except SharesError as exc:
        raise QueueClientError(f"{path}: {exc}") from None


def read_request(path: str) -> dict:
    request = read_json(path)
    if not isinstance(request, dict) or "TrainingJobName" not in request:
        raise QueueClientError(
            f"{path} is not a CreateTrainingJob request (a JSON object with TrainingJobName, "
            "AlgorithmSpecification, ResourceConfig ...)"
        )
    return request
