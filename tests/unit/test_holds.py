"""Holding, draining and resuming the queue or a share: which hold applies, and what an
admin's change leaves in place."""

import pytest

from job_queue.scheduler.holds import HoldAction, HoldChange, QueueHold, changed, hold_on

NOW = 1_000_000.0
QUEUE_HELD = QueueHold(None, False, "ops", NOW - 600)
A_DRAINED = QueueHold("A", True, "ops", NOW - 300)
B_HELD = QueueHold("B", False, "ops", NOW - 60)


@pytest.mark.parametrize(
    ("title", "holds", "share", "expected"),
    [
        ("nothing held: nothing keeps a job back", (), "A", None),
        ("a hold on the whole queue applies to every share", (QUEUE_HELD,), "A", QUEUE_HELD),
        ("a hold on the whole queue applies without shares", (QUEUE_HELD,), None, QUEUE_HELD),
        ("a share's hold applies to its jobs", (B_HELD,), "B", B_HELD),
        ("a share's hold leaves the other shares alone", (B_HELD,), "A", None),
        (
            "a share's drain outranks a hold of the whole queue",
            (QUEUE_HELD, A_DRAINED),
            "A",
            A_DRAINED,
        ),
    ],
)
def test_which_hold_keeps_a_job_back(title, holds, share, expected):
    assert hold_on(holds, share) == expected


def change(action: HoldAction, share: str | None = None, by: str = "admin2") -> HoldChange:
    return HoldChange(action, share, by, NOW)


@pytest.mark.parametrize(
    ("title", "holds", "made", "expected"),
    [
        (
            "holding the queue adds the hold",
            (),
            change(HoldAction.HOLD),
            (QueueHold(None, False, "admin2", NOW),),
        ),
        (
            "holding it again keeps who held it first, and since when",
            (QUEUE_HELD,),
            change(HoldAction.HOLD),
            (QUEUE_HELD,),
        ),
        (
            "draining a held queue turns its hold into a drain",
            (QUEUE_HELD,),
            change(HoldAction.DRAIN),
            (QueueHold(None, True, "admin2", NOW),),
        ),
        (
            "holding a drained share stops the draining",
            (A_DRAINED,),
            change(HoldAction.HOLD, "A"),
            (QueueHold("A", False, "admin2", NOW),),
        ),
        (
            "resuming a share lifts only its hold",
            (QUEUE_HELD, A_DRAINED),
            change(HoldAction.RESUME, "A"),
            (QUEUE_HELD,),
        ),
        (
            "resuming the queue leaves the shares' own holds",
            (QUEUE_HELD, B_HELD),
            change(HoldAction.RESUME),
            (B_HELD,),
        ),
        (
            "resuming what is not held changes nothing",
            (B_HELD,),
            change(HoldAction.RESUME, "A"),
            (B_HELD,),
        ),
    ],
)
def test_an_admins_change_to_the_holds(title, holds, made, expected):
    assert changed(holds, made) == expected
