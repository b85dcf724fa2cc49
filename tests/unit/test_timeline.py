"""The shares over time on `smq ui`'s timeline: at every moment a share's use changed, its
limit, use, borrowing and lending, counted as GET /shares counts them now."""

from job_queue.ledger import Phase, Span, UsageRecord
from job_queue.scheduler import Share, Strategy
from job_queue.scheduler.reservations import Reservation, TrainingPlan
from job_queue.timeline import shares_over_time

G5 = "ml.g5.xlarge"
PLAN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/g5-week"
RESEARCH = Share("research", {G5: 1}, Strategy.LEND_AND_BORROW)
PRODUCT = Share("product", {G5: 1}, Strategy.LEND)


def held(job: str, share: str, start: float, end: float, plan: str | None = None, pool=False):
    phase = Phase.POOL_IDLE if pool else Phase.RUNNING
    return UsageRecord(
        job, job, {G5: 1}, (Span(phase, start, end),), share=share, plan=plan, pool=pool
    )


def series(answer: list[dict], share: str) -> list[tuple]:
    (found,) = [row for row in answer if row["share"] == share]
    return [
        (p["at"][11:19], p["limit"], p["in_use"], p["borrowed"], p["lent"]) for p in found["points"]
    ]


def test_a_borrowing_is_drawn_as_the_borrowers_excess_and_the_lenders_loan():
    records = [held("tune-a", "research", 0, 100), held("tune-b", "research", 10, 50)]
    answer = shares_over_time([RESEARCH, PRODUCT], (), records, 0, 200)
    #                                   at,  limit, in use, borrowed, lent
    assert series(answer, "research") == [
        ("00:00:00", 1, 1, 0, 0),
        ("00:00:10", 1, 2, 1, 0),
        ("00:00:50", 1, 1, 0, 0),
        ("00:01:40", 1, 0, 0, 0),
    ]
    assert series(answer, "product") == [
        ("00:00:00", 1, 0, 0, 0),
        ("00:00:10", 1, 0, 0, 1),
        ("00:00:50", 1, 0, 0, 0),
    ]


def test_a_warm_pool_counts_against_its_share_as_the_pass_counts_it():
    records = [held("tune-a", "research", 0, 30), held("tune-a", "research", 30, 90, pool=True)]
    answer = shares_over_time([RESEARCH, PRODUCT], (), records, 0, 200)
    assert series(answer, "research") == [("00:00:00", 1, 1, 0, 0), ("00:01:30", 1, 0, 0, 0)]


def test_a_plans_open_reservation_adds_to_its_shares_limit_while_it_is_open():
    plan = TrainingPlan(PLAN, G5, "Active", (Reservation(1, 100, 100 + 7200),))
    research = Share("research", {G5: 1}, Strategy.LEND_AND_BORROW, plans=((G5, PLAN),))
    records = [held("on-plan", "research", 200, 400, plan=PLAN)]
    answer = shares_over_time([research, PRODUCT], [plan], records, 0, 10_000)
    assert series(answer, "research") == [
        ("00:00:00", 1, 0, 0, 0),
        ("00:01:40", 2, 0, 0, 0),  # the reservation opens
        ("00:03:20", 2, 1, 0, 0),
        ("00:06:40", 2, 0, 0, 0),
        ("01:26:40", 1, 0, 0, 0),  # 35 minutes before it ends (at 7300 s), it stops counting
    ]


def test_the_single_queue_has_no_shares_to_draw():
    assert shares_over_time((), (), [held("a", None, 0, 10)], 0, 100) == []
