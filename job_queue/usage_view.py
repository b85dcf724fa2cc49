"""GET /usage: fair share's view of who used what lately, who stands where, and who is next
(and why), from a snapshot and the accounts."""

from __future__ import annotations

from collections import Counter

from job_queue.scheduler.fair_share import SHARE_ACCOUNT, FairShare, accounts, standings
from job_queue.scheduler.snapshot import Snapshot
from job_queue.store.accounts import Accounts

HOUR = 3600.0
OTHERS_SHOWN = 3  # in the reason for who is next


def usage_view(seen: Snapshot, kept: Accounts | None, fair: FairShare | None) -> dict:
    """Each submitter's decayed usage (instance-hours, with what it holds now and its entry
    penalties), weight, standing (usage / weight, 0 while idle), instances held and jobs
    waiting; each share's usage per instance of its limit; and who is next."""
    if fair is None:
        return {
            "fair_share": None,
            "submitters": [],
            "shares": [],
            "next": None,
            "note": "fair share is off (FairShareHalfLifeSeconds is 0): first come, first "
            "served within a priority",
        }
    standing = standings(seen, fair)
    held: Counter[str] = Counter()
    for holder in [*seen.active, *seen.pools]:
        for account in accounts(holder):
            held[account] += sum(holder.demand.values())
    kept = kept or Accounts()
    names = set(standing.usage) | {who for (_, who) in kept.counts}
    rows = [
        {
            "submitter": who,
            "usage_instance_hours": round(standing.usage.get(who, 0.0) / HOUR, 3),
            "weight": fair.weight(who),
            "standing": round(standing.of(who) / HOUR, 3),
            "holds_instances": held[who],
            "waiting": kept.waiting_of(who),
        }
        for who in names
        if not who.startswith(SHARE_ACCOUNT)
    ]
    rows.sort(key=lambda row: (row["standing"], row["submitter"]))
    shares = [
        {
            "share": share.name,
            "usage_instance_hours": round(
                standing.usage.get(SHARE_ACCOUNT + share.name, 0.0) / HOUR, 3
            ),
            "limit": sum(share.capacity.values()),
            "per_instance_of_limit": round(standing.of_share(share) / HOUR, 3),
        }
        for share in seen.shares
    ]
    return {
        "fair_share": {
            "half_life_seconds": fair.half_life_s,
            "lookahead_seconds": fair.lookahead_s,
            "weights": dict(fair.weights),
        },
        "submitters": rows,
        "shares": sorted(shares, key=lambda row: row["per_instance_of_limit"]),
        "next": _next(rows, fair),
    }


def who_is_next(seen: Snapshot, kept: Accounts | None, fair: FairShare | None) -> dict | None:
    """Fair share's next submitter and why (None: fair share is off, or nobody waits)."""
    return usage_view(seen, kept, fair)["next"]


def _next(rows: list[dict], fair: FairShare) -> dict | None:
    """Whose job a pass takes next among equal priorities, and why (None: nobody waits)."""
    waiting = [row for row in rows if row["waiting"]]
    if not waiting:
        return None
    first, others = waiting[0], waiting[1 : 1 + OTHERS_SHOWN]
    why = (
        f"fair share: {first['submitter']} is next among jobs of the same priority (and "
        f"share), having used {_used(first)}"
    )
    if others:
        why += "; " + ", ".join(f"{row['submitter']} {_used(row)}" for row in others)
    why += f" (usage halves every {fair.half_life_s / HOUR:g} h)"
    return {"submitter": first["submitter"], "why": why}


def _used(row: dict) -> str:
    text = f"{row['usage_instance_hours']:g} instance-h"
    return text if row["weight"] == 1 else f"{text} (weight {row['weight']:g})"
