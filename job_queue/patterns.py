"""IAM ARN patterns as the queue's settings write them (share submitters, admins, fair-share
weights). Pure."""

from __future__ import annotations

import re


def matches(pattern: str, arn: str) -> bool:
    """Whether ``arn`` matches ``pattern`` (``*``: any run of characters, ``/`` included)."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), arn) is not None
