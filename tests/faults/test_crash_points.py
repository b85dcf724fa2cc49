"""Every call the handler makes to DynamoDB, SageMaker and EventBridge is a point where the
Lambda can die, just before the call or just after it (the call done, its answer lost).
Killed at each, the queue must lose nothing, run nothing twice, keep its cap, and settle
once the retries and the sweep have run."""

from tests.faults import crashes
from tests.faults.crash_points import Site, universe
from tests.faults.scenarios import SCENARIOS


def test_the_crash_points_are_read_from_the_queues_source():
    sites = universe().sites
    assert Site("store.dynamodb:DynamoJobStore.claim", "transact_write_items") in sites
    assert Site("sagemaker:SageMakerGateway.start", "create_training_job") in sites
    assert Site("queue_events:publish", "put_events") in sites
    # Used by tests and tools only, never by the handler: no point of its own.
    assert not any(s.function.endswith("bulk_load") for s in sites)


def test_every_crash_point_is_covered_and_nothing_is_lost():
    """Each distinct point once, at the first scenario that reaches it (make faults kills
    every call of every scenario)."""
    results = crashes.run(SCENARIOS)
    missing = universe().points - {r.point for r in results}
    assert not missing, "crash points no scenario reaches: " + ", ".join(map(str, sorted(missing)))
    assert [str(r) for r in results if r.violations] == []
    # Within two sweeps of calm, the queue agrees with SageMaker and wastes no capacity.
    assert max(r.recovery_s for r in results) <= 120
