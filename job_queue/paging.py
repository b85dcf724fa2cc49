"""Pages of GET /jobs: ``limit`` and ``next_token``.

A token says where the next page starts (after the last job given, in queue order) and the
places in line counted so far, so that every page's ``position`` is the same as one answer
for the whole queue would give. It is opaque to clients, and checked when it comes back.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from job_queue.errors import InvalidRequest
from job_queue.scheduler.order import Line
from job_queue.scheduler.snapshot import WaitingJob

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(frozen=True)
class PageStart:
    """Where a page starts: after the job of (priority, seq), with the places counted."""

    after: tuple[int, int] | None
    line: Line


def parse_limit(value: str | None) -> int:
    """``limit``: waiting jobs per page, 1 to 1000 (default 100)."""
    if value is None or value == "":
        return DEFAULT_LIMIT
    if not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise InvalidRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {value!r}")
    return int(value)


def next_token(last: WaitingJob, line: Line) -> str:
    """The token of the page after ``last`` (the last job of this page)."""
    state = {
        "after": [last.priority, last.seq],
        "single": [[share, itype, n] for (share, itype), n in line.single.items()],
        "multi": [[share, sorted(types)] for share, types in line.multi],
    }
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode()


def page_start(token: str | None) -> PageStart:
    """Where the page of ``token`` starts (None: the first page)."""
    if not token:
        return PageStart(None, Line())
    try:
        state = json.loads(base64.urlsafe_b64decode(token.encode()))
        priority, seq = state["after"]
        line = Line(
            {(share, itype): int(n) for share, itype, n in state["single"]},
            [(share, frozenset(types)) for share, types in state["multi"]],
        )
        return PageStart((int(priority), int(seq)), line)
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise InvalidRequest(
            "next_token is not one this API gave; start again without it"
        ) from None
