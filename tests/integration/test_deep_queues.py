"""Deep queues: GET /jobs answers a page at a time, and a submission's place in line costs
the same few reads however deep the queue is."""

import copy

from job_queue.scheduler.forecast import HORIZON
from tests.conftest import G5, P5
from tests.integration.helpers import load, submit


def page(cloud, query: str = "") -> dict:
    status, body = cloud.api("GET", f"/jobs{query}")
    assert status == 200, body
    return body


def test_the_queue_is_listed_in_pages_with_the_places_one_answer_would_give(make_cloud):
    cloud = make_cloud({P5: 1, G5: 1})
    submit(cloud, "running-p5", 9)
    submit(cloud, "running-g5", 9, instance_type=G5)
    load(cloud, 150)
    load(cloud, 60, prefix="g5", itype=G5)

    # Before the sweep has counted the queue, a page knows there is more than it shows.
    assert page(cloud, "?limit=100")["waiting"] == 101
    cloud.sweep()  # it counts the queue (once a minute)
    first = page(cloud, "?limit=100")
    assert [r["name"] for r in first["jobs"][:2]] == ["running-p5", "running-g5"]
    assert first["waiting"] == 210 and first["next_token"]
    assert first["waiting_counted_at"] is not None
    rows = [r for r in first["jobs"] if r["position"]]
    token = first["next_token"]
    while token:
        later = page(cloud, f"?limit=100&next_token={token}")
        assert [r["name"] for r in later["jobs"] if not r["position"]] == [
            "running-p5",
            "running-g5",
        ]  # every page shows what holds the instances
        rows += [r for r in later["jobs"] if r["position"]]
        token = later["next_token"]
    assert len(rows) == 210
    p5 = [r["position"] for r in rows if r["instance_type"] == P5]
    g5 = [r["position"] for r in rows if r["instance_type"] == G5]
    assert (p5, g5) == (list(range(1, 151)), list(range(1, 61)))
    # In queue order across the pages: all of priority 1, the p5 jobs submitted first.
    expected = [f"queued-{i:05d}" for i in range(150)] + [f"g5-{i:05d}" for i in range(60)]
    assert [r["name"] for r in rows] == expected
    # The first jobs of each type have an expected start, on every page that shows them.
    assert all(r["expected_start"] for r in rows if r["position"] <= HORIZON)
    assert not any(r["expected_start"] for r in rows if r["position"] > HORIZON)


def test_a_queue_that_fits_one_page_has_no_next_token(cloud):
    load(cloud, 5)
    answer = page(cloud)
    assert answer["next_token"] is None and answer["waiting"] == 5
    assert answer["waiting_counted_at"] is None  # counted exactly, now


def test_bad_paging_parameters_are_refused_by_name(cloud):
    load(cloud, 3)
    for query, named in [
        ("?limit=0", "limit"),
        ("?limit=5000", "limit"),
        ("?limit=ten", "limit"),
        ("?next_token=not-a-token", "next_token"),
    ]:
        status, body = cloud.api("GET", f"/jobs{query}")
        assert status == 400, query
        assert named in body["message"], body


def test_a_submission_far_back_says_so_instead_of_counting_every_job_ahead(make_cloud):
    cloud = make_cloud({P5: 1})
    load(cloud, 2 * HORIZON)
    behind = submit(cloud, "behind", 1)
    assert behind["position"] is None
    assert behind["job"]["position_beyond"] == HORIZON
    assert behind["job"]["expected_start"] is None
    ahead = submit(cloud, "urgent", 5)  # higher priority: first in line
    assert ahead["position"] == 1 and ahead["job"]["position_beyond"] is None
    assert ahead["job"]["expected_start"]["at_latest"] is not None


def test_a_submission_reads_as_much_at_ten_thousand_jobs_as_at_two_hundred(make_cloud):
    cloud = make_cloud({P5: 1})

    def items_read_by_a_submission(name: str) -> int:
        before = copy.deepcopy(cloud.dynamodb_usage)
        submit(cloud, name, 1)
        return cloud.dynamodb_usage.since(before).items_read

    load(cloud, 2 * HORIZON)
    shallow = items_read_by_a_submission("at-two-hundred")
    load(cloud, 10_000 - 2 * HORIZON, prefix="more")
    deep = items_read_by_a_submission("at-ten-thousand")
    assert abs(deep - shallow) <= 4, (shallow, deep)  # 9,800 more jobs ahead: as many reads
