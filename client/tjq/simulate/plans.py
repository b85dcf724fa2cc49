"""Training plans in a what-if replay: ``smq simulate --plan TYPE=COUNT@START_S-END_S``.

Each option is one reservation (seconds on the workload's clock); the reservations of one
instance type make one plan, as a team's plan of several reservations does. The replay
counts them with the queue's own rules (:mod:`job_queue.scheduler.reservations`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from job_queue.scheduler.reservations import Reservation, TrainingPlan, never_used
from job_queue.share_config import INSTANCE_TYPE

_OPTION = re.compile(r"(ml\.[a-z0-9.]+)=(\d+)@(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)")
EXAMPLE = "ml.p5.48xlarge=4@0-1209600"


def parse_plan(text: str) -> tuple[str, Reservation]:
    """One ``--plan`` option; ValueError saying what is wrong with it."""
    found = _OPTION.fullmatch(text)
    if found is None:
        raise ValueError(f"expected TYPE=COUNT@START_S-END_S such as {EXAMPLE}, got {text!r}")
    itype, count, start, end = found[1], int(found[2]), float(found[3]), float(found[4])
    if count < 1 or end <= start:
        raise ValueError(f"{text!r}: needs COUNT >= 1 and START_S < END_S")
    if problem := never_used(start, end):
        raise ValueError(f"{text!r}: {problem}")
    if not INSTANCE_TYPE.match(itype):
        raise ValueError(f"{text!r}: {itype!r} is not a SageMaker instance type")
    return itype, Reservation(count, start, end)


def sim_plans(options: Iterable[str]) -> tuple[TrainingPlan, ...]:
    """The plans of ``--plan`` options, one per instance type; ValueError for a malformed
    option or reservations of one type that overlap."""
    by_type: dict[str, list[Reservation]] = {}
    for option in options:
        itype, reservation = parse_plan(option)
        by_type.setdefault(itype, []).append(reservation)
    plans = []
    for itype, found in by_type.items():
        found.sort(key=lambda r: r.start)
        for earlier, later in itertools.pairwise(found):
            if later.start < earlier.end:
                raise ValueError(f"--plan: two reservations of {itype} overlap")
        name = "sim-" + itype.removeprefix("ml.").replace(".", "-")
        arn = f"arn:aws:sagemaker:sim:000000000000:training-plan/{name}"
        plans.append(TrainingPlan(arn, itype, "Active", tuple(found)))
    return tuple(plans)
