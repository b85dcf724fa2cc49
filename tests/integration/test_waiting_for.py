"""Why a job waits, as GET /jobs, GET /jobs/{name} and the submit answer show it through the
real handler: the pass's own reason codes, with the jobs and share behind them."""

import pytest
from tjq.local.calls import training_request

from job_queue.scheduler import Policy, Share, Strategy
from tests.conftest import P5
from tests.integration.helpers import job, submit


def _why(cloud) -> dict[str, tuple[str, list[str], str | None]]:
    return {
        row["name"]: (
            row["waiting_for"]["code"],
            row["waiting_for"]["jobs"],
            row["waiting_for"]["share"],
        )
        for row in cloud.jobs()
        if row["position"]
    }


def _submit_to(cloud, name: str, share: str) -> dict:
    status, body = cloud.api("POST", "/add-job", training_request(name, 1, share=share))
    assert status == 201, body
    return body


@pytest.mark.parametrize(
    ("strategy", "code", "jobs", "share"),
    [
        pytest.param(Strategy.LEND, "share-limit", ["a1"], "team-a", id="it may not borrow"),
        pytest.param(
            Strategy.LEND_AND_BORROW,
            "reserved-elsewhere",
            [],
            "team-b",
            id="it may borrow, but the idle instances are a reserving share's",
        ),
    ],
)
def test_a_share_at_its_limit_says_so(make_cloud, strategy, code, jobs, share):
    shares = (Share("team-a", {P5: 1}, strategy), Share("team-b", {P5: 1}, Strategy.RESERVE))
    cloud = make_cloud({}, shares=shares)
    _submit_to(cloud, "a1", "team-a")
    answer = _submit_to(cloud, "a2", "team-a")["job"]
    assert answer["waiting_for"]["code"] == code, answer["waiting_for"]
    assert _why(cloud) == {"a2": (code, jobs, share)}
    assert job(cloud, "a2")["waiting_for"] == answer["waiting_for"]


def test_a_job_held_back_for_a_bigger_one_names_it(make_cloud):
    cloud = make_cloud({P5: 4})
    submit(cloud, "running3", 1, instance_count=3, max_runtime=3600)
    submit(cloud, "gang", 1, instance_count=2)
    submit(cloud, "single", 1, instance_count=1, max_runtime=7200)
    assert _why(cloud) == {
        "gang": ("queue-order", ["running3"], None),
        "single": ("held-for", ["gang"], None),
    }
    assert "gang" in job(cloud, "single")["waiting_reason"]


def test_a_job_that_may_not_preempt_yet_says_until_when(make_cloud):
    cloud = make_cloud(policy=Policy(min_run_s=600))
    submit(cloud, "low", 1)
    submit(cloud, "other", 1)
    answer = submit(cloud, "urgent", 5)["job"]
    assert answer["waiting_for"]["code"] == "min-runtime"
    assert answer["waiting_for"]["until"] is not None
    cloud.advance(660)  # the protection ends; the sweep preempts
    assert job(cloud, "urgent")["waiting_for"] is None
