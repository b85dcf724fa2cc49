"""The read-decide-write loop every writer of the queue runs: read what it decides on, decide,
write with a condition; when the write loses a race (:class:`StaleState`: what was read
changed meanwhile), read again and decide again, a bounded number of times."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, TypeVar

from job_queue.errors import JobConflict, StaleState

T = TypeVar("T")

RETRIES = 8  # re-reads after a lost race before giving up on one request or decision


def until_settled(attempt: Callable[[], T], rounds: int, gave_up: Callable[[], T]) -> T:
    """``attempt()`` (read, decide, conditional write) until it does not lose a race, at most
    ``rounds`` times; then ``gave_up()`` answers (or raises).

    Example::

        job = until_settled(lambda: cancel_once(name), 8, lambda: raise_busy(name))
    """
    for _ in range(rounds):
        try:
            return attempt()
        except StaleState:
            continue
    return gave_up()


def busy(what: str, during: str = "") -> Callable[[], NoReturn]:
    """What a request that kept losing races answers: 409, try again."""

    def refuse() -> NoReturn:
        if during:
            raise JobConflict(f"{what} kept changing {during}; try again")
        raise JobConflict(f"{what} is changing state too often; try again")

    return refuse
