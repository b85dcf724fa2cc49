"""Where jobs keep their checkpoints, and when a job last saved one.

A job that sets no ``CheckpointConfig`` gets one from the queue (the ``CheckpointS3Uri``
setting plus the job's name), the same for every attempt: SageMaker copies that location
into ``/opt/ml/checkpoints`` when an attempt starts and back while it runs, so a resumed
attempt finds what the previous one saved. A job that sets its own keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from aws_lambda_powertools import Logger
from botocore.exceptions import BotoCoreError, ClientError

from job_queue.scheduler import ActiveJob

logger = Logger(child=True)

# A bucket name (3-63 lowercase letters, digits, dots, hyphens) and an optional prefix.
S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?$")


def check_base_uri(value: str) -> str:
    """The ``CheckpointS3Uri`` setting, ending in ``/`` (empty: off); ValueError names the
    problem."""
    value = value.strip()
    if not value:
        return ""
    if not S3_URI.match(value):
        raise ValueError(f"{value!r} is not an s3:// URI such as s3://bucket/checkpoints/")
    return value if value.endswith("/") else value + "/"


def with_default_location(request: Mapping, base_uri: str, job_name: str) -> dict:
    """``request`` with ``CheckpointConfig.S3Uri`` = ``base_uri`` + job name + ``/`` if it sets
    no CheckpointConfig (and ``base_uri`` is set); otherwise unchanged."""
    request = dict(request)
    if base_uri and not request.get("CheckpointConfig"):
        request["CheckpointConfig"] = {"S3Uri": f"{base_uri}{job_name}/"}
    return request


def split_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix/`` → (``bucket``, ``some/prefix/``)."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix


class CheckpointTimes:
    """When a running job last saved: the newest object under its checkpoint location.

    Read only when victims are chosen, and only for jobs that save at an interval; a
    location the queue may not read (or that lists more than ``max_pages`` pages) counts
    as unknown, and the job's declared interval is used instead."""

    def __init__(self, s3, max_pages: int = 5) -> None:
        self._s3, self._max_pages = s3, max_pages

    def __call__(self, job: ActiveJob) -> float | None:
        if not job.checkpoint_uri:
            return None
        bucket, prefix = split_uri(job.checkpoint_uri)
        newest = None
        try:
            pages = self._s3.get_paginator("list_objects_v2").paginate(
                Bucket=bucket, Prefix=prefix, PaginationConfig={"MaxItems": 1000 * self._max_pages}
            )
            for page in pages:
                for item in page.get("Contents", []):
                    stamp = item["LastModified"].timestamp()
                    newest = stamp if newest is None else max(newest, stamp)
        except (BotoCoreError, ClientError) as exc:  # refused: fall back to the declaration
            logger.warning(
                "could not read checkpoint times", extra={"job": job.name, "error": str(exc)}
            )
            return None
        return newest
