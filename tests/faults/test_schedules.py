"""Seeded fault schedules (four here; ``make faults SEEDS=200`` runs more): outages of
DynamoDB and SageMaker for minutes, EventBridge that drops, duplicates and delays events,
invocations that die or overlap, clocks seconds apart — and, once calm, every invariant."""

from tests.faults import schedules

# Between them, these take DynamoDB and SageMaker away, lose, repeat and delay events and
# kill invocations, in a single queue, one with warm pools, one with two teams' shares and one
# with fair share among three submitters.
SEEDS = (0, 1, 2, 3, 5)


def test_hours_of_outages_lose_nothing_and_the_queue_settles_within_two_sweeps():
    results = [schedules.run(seed) for seed in SEEDS]
    assert [(r.replay, r.violations) for r in results if r.violations] == []
    assert [r.replay for r in results if r.recovery_s > 120] == []
    # So that passing means something: every kind of fault was injected, in every layout.
    injected = {kind for r in results for kind, n in r.faults.items() if n}
    assert {"invocation killed", "event dropped", "event duplicated", "event delayed"} <= injected
    assert any(kind.startswith("dynamodb outage") for kind in injected)
    assert any(kind.startswith("sagemaker outage") for kind in injected)
    assert {r.layout for r in results} == {name for name, _ in schedules.LAYOUTS}
