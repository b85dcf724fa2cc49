"""The harness catches a broken write order: with the two writes of a warm pool's release
swapped back (the table forgets the pool before SageMaker ends it), a Lambda that dies
between them takes the queue over its cap, and the suite says so."""

import pytest

from job_queue.actions import Actions
from job_queue.errors import SageMakerError
from tests.faults import crashes
from tests.faults.test_found_by_faults import RELEASE, STORE_RELEASE


def _release_table_first(self, release, now):
    self.store.release_pool(release.pool, now)
    try:
        self.sagemaker.release_pool(release.pool.name)
    except SageMakerError:
        return False
    return True


@pytest.fixture
def table_first(monkeypatch):
    monkeypatch.setattr(Actions, "_release", _release_table_first)


def test_a_release_that_forgets_the_pool_first_is_caught(table_first):
    index = crashes.calls_of(RELEASE).index(STORE_RELEASE)
    result = crashes.crash(RELEASE, index, "after", STORE_RELEASE)
    assert any("over the cap of 2" in v for v in result.violations), result.violations
