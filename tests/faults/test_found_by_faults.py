"""Faults the suite found, each a regression test named for it."""

import pytest

from tests.faults import crashes
from tests.faults.crash_points import Site
from tests.faults.moments import job
from tests.faults.scenarios import SCENARIOS
from tests.faults.world import World

RELEASE = next(s for s in SCENARIOS if s.name.startswith("an idle warm pool is released"))
STORE_RELEASE = Site("store.pool_writes:PoolWrites.release_pool", "transact_write_items")
SAGEMAKER_RELEASE = Site("sagemaker:SageMakerGateway.release_pool", "update_training_job")


@pytest.mark.parametrize(
    "site, when",
    [(SAGEMAKER_RELEASE, "before"), (SAGEMAKER_RELEASE, "after"), (STORE_RELEASE, "before")],
)
def test_a_warm_pool_release_cut_short_never_takes_the_queue_over_its_cap(site, when):
    """The pool was forgotten by the table before SageMaker ended it: a Lambda that died in
    between left its instances held and uncounted, and the next job went over the cap."""
    index = crashes.calls_of(RELEASE).index(site)
    result = crashes.crash(RELEASE, index, when, site)
    assert result.violations == ()


def test_a_cancel_asked_again_after_its_answer_was_lost_is_answered_as_done():
    world = World()
    try:
        for name in ("a", "b", "c"):
            world.submit(job(name))
        answer = world.request("DELETE", "/jobs/c", kill=("DynamoJobStore.end_waiting", "after"))
        assert world.targeted.died_at is not None
        assert answer[0] == 200 and answer[1]["job"]["state"] == "cancelled"
    finally:
        world.close()


def test_a_job_cancelled_before_sagemaker_created_it_keeps_no_attempt_sagemaker_never_ran():
    scenario = next(s for s in SCENARIOS if "cancelled before it started" in s.name)
    world = scenario.world()
    try:
        world.sweep()
        cancelled = world.store.get("c")
        assert cancelled.state.value == "cancelled"
        assert cancelled.attempts == ()
    finally:
        world.close()
