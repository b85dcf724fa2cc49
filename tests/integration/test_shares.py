"""Quota shares through the real handler: the issue's scenario, reclaim without loops,
submission rules, the shares API and changes at run time."""

import pytest
from tjq.local.calls import training_request

from job_queue.scheduler import Share, Strategy
from job_queue.share_config import share_to_dict
from tests.integration.helpers import states

G5 = "ml.g5.xlarge"
SHARES = [
    Share("QS1", {G5: 1}, Strategy.LEND_AND_BORROW, borrow_limit=200, in_share_preemption=True),
    Share("QS2", {G5: 1}, Strategy.LEND),
    Share("QS3", {G5: 1}, Strategy.RESERVE),
]
HOUR = 3600


@pytest.fixture
def shared(make_cloud):
    return make_cloud({}, shares=SHARES)


def submit(cloud, name, priority, share, **kwargs):
    request = training_request(
        name, priority, instance_type=G5, share=share, run_seconds=HOUR, **kwargs
    )
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 201, body
    return body["job"]


def usage(cloud) -> dict:
    status, body = cloud.api("GET", "/shares")
    assert status == 200, body
    return {
        s["name"]: (
            s["instance_types"][G5]["in_use"],
            s["instance_types"][G5]["borrowed"],
            s["instance_types"][G5]["lent"],
            s["waiting"],
        )
        for s in body["shares"]
    }


def test_the_three_share_scenario(shared):
    cloud = shared
    # 1. high runs on QS1's instance, med borrows QS2's idle one, low waits (QS3 keeps its own).
    for name, priority in (("qs1-job-high", 3), ("qs1-job-med", 2), ("qs1-job-low", 1)):
        submit(cloud, name, priority, "QS1")
    assert states(cloud) == {
        "qs1-job-high": "running",
        "qs1-job-med": "running",
        "qs1-job-low": "pending",
    }
    assert usage(cloud) == {"QS1": (2, 1, 0, 1), "QS2": (0, 0, 1, 0), "QS3": (0, 0, 0, 0)}

    # 2. QS2's job takes its instance back: med is preempted, whatever the priorities.
    assert submit(cloud, "qs2-job-1", 1, "QS2")["share"] == "QS2"
    assert states(cloud)["qs1-job-med"] == "preempting"
    cloud.advance(60)
    assert states(cloud) == {
        "qs1-job-high": "running",
        "qs2-job-1": "running",
        "qs1-job-med": "preempted",
        "qs1-job-low": "pending",
    }
    status, med = cloud.api("GET", "/jobs/qs1-job-med")
    assert med["job"]["attempts"][-1]["preempted_by"] == "qs2-job-1"

    # 3. low raised to 4: in-share preemption stops high; low runs.
    status, body = cloud.api("PUT", "/jobs/qs1-job-low/priority", {"priority": 4})
    assert status == 200, body
    assert states(cloud)["qs1-job-high"] == "preempting"
    cloud.advance(60)
    assert states(cloud) == {
        "qs1-job-low": "running",
        "qs2-job-1": "running",
        "qs1-job-high": "preempted",
        "qs1-job-med": "preempted",
    }


def test_a_job_started_by_reclaim_is_not_preempted_back_by_the_job_it_displaced(shared):
    cloud = shared
    submit(cloud, "qs1-job-high", 3, "QS1")
    submit(cloud, "qs1-job-med", 9, "QS1")  # borrows QS2's instance
    submit(cloud, "qs2-job-1", 1, "QS2")  # reclaims it
    cloud.advance(60)
    # The displaced job outranks the reclaimer and waits through many passes: no loop.
    for _ in range(10):
        cloud.advance(60)
        cloud.sweep()
        assert states(cloud)["qs2-job-1"] == "running"
    _status, body = cloud.api("GET", "/jobs/qs2-job-1")
    assert body["job"]["preemptions"] == 0


def test_a_job_needs_a_valid_share(shared):
    request = training_request("nameless", 1, instance_type=G5)
    status, body = shared.api("POST", "/add-job", request)
    assert status == 400 and "QS1, QS2, QS3" in body["message"]
    status, body = shared.api(
        "POST", "/add-job", training_request("lost", 1, instance_type=G5, share="QS9")
    )
    assert status == 400 and "'QS9' does not exist" in body["message"]
    assert shared.jobs() == []


def test_a_job_bigger_than_its_share_may_ever_hold_is_refused(shared):
    request = training_request("huge", 1, instance_type=G5, instance_count=2, share="QS3")
    status, body = shared.api("POST", "/add-job", request)
    assert status == 400 and "share QS3 may hold at most 1" in body["message"]


def test_the_default_share_takes_jobs_that_name_none(make_cloud):
    cloud = make_cloud({}, shares=SHARES, default_share="QS2")
    status, body = cloud.api("POST", "/add-job", training_request("plain", 0, instance_type=G5))
    assert status == 201 and body["job"]["share"] == "QS2"


def test_raising_a_limit_at_run_time_starts_waiting_jobs(shared):
    cloud = shared
    for name in ("a", "b", "c", "d"):
        submit(cloud, name, 1, "QS1")
    assert sorted(n for n, s in states(cloud).items() if s == "running") == ["a", "b"]
    layout = [share_to_dict(s) for s in SHARES]
    layout[2]["strategy"] = "LEND"  # QS3 now lends its idle instance
    status, body = cloud.api("PUT", "/shares", layout)
    assert status == 200, body
    assert sorted(n for n, s in states(cloud).items() if s == "running") == ["a", "b", "c"]


def test_lowering_a_limit_makes_jobs_over_it_reclaimable(make_cloud):
    two = [
        Share("A", {G5: 2}, Strategy.LEND_AND_BORROW),
        Share("B", {G5: 1}, Strategy.LEND),
    ]
    cloud = make_cloud({}, shares=two)
    submit(cloud, "a1", 1, "A")
    submit(cloud, "a2", 2, "A")
    layout = [share_to_dict(s) for s in two]
    layout[0]["capacity"] = {G5: 1}
    layout[1]["capacity"] = {G5: 2}
    assert cloud.api("PUT", "/shares", layout)[0] == 200
    assert states(cloud) == {"a1": "running", "a2": "running"}  # nobody needs it back yet
    submit(cloud, "b1", 0, "B")
    submit(cloud, "b2", 0, "B")
    assert states(cloud)["a1"] == "preempting"  # A is over its new limit: lowest priority
    assert states(cloud)["a2"] == "running"


@pytest.mark.parametrize(
    ("layout", "message"),
    [
        (
            [{"name": "X", "capacity": {G5: 1}, "strategy": "SHARE", "in_share_preemption": False}],
            "strategy 'SHARE' is not one of RESERVE, LEND, LEND_AND_BORROW",
        ),
        (
            [{"name": "X", "capacity": {G5: -1}, "strategy": "LEND", "in_share_preemption": False}],
            "ml.g5.xlarge must be a whole number >= 0",
        ),
        (
            [
                {
                    "name": "X",
                    "capacity": {G5: 1},
                    "strategy": "LEND",
                    "borrow_limit": 50,
                    "in_share_preemption": False,
                }
            ],
            "borrow_limit applies only to LEND_AND_BORROW shares, not LEND",
        ),
        (
            [
                {
                    "name": "X",
                    "capacity": {"g5.big": 1},
                    "strategy": "LEND",
                    "in_share_preemption": False,
                }
            ],
            "'g5.big' is not a SageMaker instance type",
        ),
        ({"QS1": 1}, "non-empty JSON list"),
        ("[{", "body is not valid JSON"),
    ],
)
def test_bad_shares_are_refused_and_change_nothing(shared, layout, message):
    status, body = shared.api("PUT", "/shares", layout)
    assert status == 400 and message in body["message"]
    status, body = shared.api("GET", "/shares")
    assert [s["name"] for s in body["shares"]] == ["QS1", "QS2", "QS3"]


def test_positions_count_the_jobs_ahead_in_the_same_share(shared):
    cloud = shared
    submit(cloud, "a1", 1, "QS1")
    submit(cloud, "a2", 1, "QS1")  # borrows QS2's instance
    submit(cloud, "c1", 1, "QS3")
    assert submit(cloud, "a3", 1, "QS1")["position"] == 1
    assert submit(cloud, "c2", 1, "QS3")["position"] == 1
    assert submit(cloud, "a4", 1, "QS1")["position"] == 2
    listed = {row["name"]: row["position"] for row in cloud.jobs() if row["position"]}
    assert listed == {"a3": 1, "c2": 1, "a4": 2}


def test_a_reclaimed_job_keeps_its_place_in_its_share(shared):
    cloud = shared
    submit(cloud, "a1", 5, "QS1")
    submit(cloud, "a2", 3, "QS1")  # borrows QS2's instance
    submit(cloud, "a3", 3, "QS1")  # waits: nothing left to borrow
    submit(cloud, "b1", 0, "QS2")  # reclaims from a2
    cloud.advance(60)
    listed = {row["name"]: row["position"] for row in cloud.jobs() if row["position"]}
    assert listed == {"a2": 1, "a3": 2}  # a2 was submitted before a3


def test_without_shares_the_queue_refuses_a_share_tag_and_lists_no_shares(cloud):
    request = training_request("tagged", 1, share="anything")
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 400 and body["message"].startswith("Tags.share: ")
    assert "has no quota shares, so a job cannot name one ('anything')" in body["message"]
    assert cloud.api("GET", "/jobs/tagged")[0] == 404  # nothing was queued
    listed = {"shares": [], "capacity": {"ml.p5.48xlarge": 2}, "changed": None}
    assert cloud.api("GET", "/shares") == (200, listed)


def test_an_empty_share_tag_is_refused_naming_the_tag(shared):
    request = training_request("blank", 1, instance_type=G5)
    request["Tags"].append({"Key": "share", "Value": ""})
    status, body = shared.api("POST", "/add-job", request)
    assert status == 400 and "Tags.share must be a share's name" in body["message"]
    assert shared.jobs() == []
