"""The victim search: the fewest running jobs whose stop lets a waiting job start (and the
fewest idle warm pools whose release does).

One search serves every step of the pass that frees instances (releasing idle pools,
reclaiming borrowed capacity, preempting within a share or the single queue); what differs
is the :class:`Room` — which candidates a preemptor may stop, and when it has room enough
(:class:`job_queue.scheduler.room.Room`: the instances, and its share's quota).

The search walks the candidates in preemption order (lowest priority first, then the one
that would lose least work, then the most recently started:
:func:`~job_queue.scheduler.order.preemption_candidates`), stopping each one
that helps until there is room, then releases, last chosen first, every victim the room
turns out not to need. None when even all of them would not be enough: nobody is preempted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from job_queue.models import Demand


class Holder(Protocol):
    """What holds instances and can give them back: a running job, or an idle warm pool
    (whose release frees its instances at once)."""

    @property
    def demand(self) -> Demand: ...

    @property
    def share(self) -> str | None: ...


H = TypeVar("H", bound=Holder)


class Room(Protocol):
    """What a preemptor needs, as victims are taken and given back."""

    def enough(self) -> bool:
        """The preemptor can start once the victims taken so far have stopped."""

    def helps(self, candidate: Holder) -> bool:
        """The candidate may be stopped for the preemptor, and its stop would count."""

    def take(self, victim: Holder) -> None:
        """Count the victim's instances as freed."""

    def give_back(self, victim: Holder) -> None:
        """Undo :meth:`take`."""


def choose_victims(candidates: Iterable[H], room: Room) -> tuple[H, ...] | None:
    """The fewest candidates (given in preemption order) to stop so that there is room.

    None if there is room without stopping anyone, or not even with every candidate.
    ``room`` is left counting the victims returned.
    """
    chosen: list[H] = []
    for candidate in candidates:
        if room.enough():
            break
        if room.helps(candidate):
            chosen.append(candidate)
            room.take(candidate)
    if not chosen or not room.enough():
        return None
    for victim in reversed(list(chosen)):  # release those that turn out unnecessary
        room.give_back(victim)
        if room.enough():
            chosen.remove(victim)
        else:
            room.take(victim)
    return tuple(chosen)
