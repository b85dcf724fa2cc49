"""Warm pools through the real handler and the emulated SageMaker: kept, counted, reused,
released for waiting work, expired, ended outside the queue — and never over the cap."""

import random
import threading

from tjq.local.calls import training_request
from tjq.queue_log import event_line, read_events

from job_queue.scheduler import Share, Strategy
from tests.conftest import P5
from tests.integration.helpers import job, states
from tests.integration.test_concurrency import CAPACITY, _workload


def warm(name, priority=1, keep_alive=120, volume=30, run_seconds=300, **kwargs) -> dict:
    """A request whose instances stay ``keep_alive`` seconds in a pool; jobs of the same
    ``volume`` (VolumeSizeInGB, one of the matched fields) can start on each other's pools."""
    request = training_request(name, priority, run_seconds=run_seconds, **kwargs)
    request["ResourceConfig"]["VolumeSizeInGB"] = volume
    if keep_alive is not None:
        request["ResourceConfig"]["KeepAlivePeriodInSeconds"] = keep_alive
    return request


def add(cloud, request) -> dict:
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 201, body
    return body["job"]


def pools(cloud) -> list[dict]:
    status, body = cloud.api("GET", "/jobs")
    assert status == 200
    return body["pools"]


def test_a_finished_job_leaves_a_pool_and_the_next_matching_job_starts_on_it(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("first"))
    cloud.advance(300)
    (pool,) = pools(cloud)
    assert (pool["job"], pool["instance_count"], pool["expires_in_seconds"]) == ("first", 1, 120)
    assert cloud.sagemaker.in_use() == {P5: 1}, "the pool holds the instance"

    assert add(cloud, warm("second"))["state"] == "running"
    assert pools(cloud) == []
    (attempt,) = job(cloud, "second")["attempts"]
    assert (attempt["start"], attempt["warm_pool_of"]) == ("warm", "first")
    assert cloud.sagemaker.jobs["first"].pool == "Reused"
    assert cloud.sagemaker.jobs["second"].warm_from == "first"


def test_a_pool_counts_against_the_capacity_until_it_expires(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("first", keep_alive=120))
    cloud.advance(300)
    add(cloud, warm("other-config", volume=50, keep_alive=None))
    # The pool is released for it at once rather than blocking it...
    assert states(cloud) == {"other-config": "running"}
    assert cloud.sagemaker.jobs["first"].pool == "Terminated"
    # ... and nothing ever ran over the account's limit.
    assert cloud.sagemaker.peak_in_use == {P5: 1}
    assert job(cloud, "other-config")["start_failures"] == 0


def test_an_expired_pool_is_forgotten_and_its_instances_are_free(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("first", keep_alive=60))
    cloud.advance(300 + 61)
    cloud.sweep()
    assert pools(cloud) == []
    assert add(cloud, warm("later"))["state"] == "running"
    assert job(cloud, "later")["attempts"][0]["start"] == "cold"


def test_no_pool_when_the_warm_pool_quota_is_zero(make_cloud):
    cloud = make_cloud({P5: 1}, warm_pool_quota={P5: 0})
    add(cloud, warm("first"))
    cloud.advance(300)
    assert pools(cloud) == []
    assert cloud.sagemaker.in_use() == {P5: 0}
    assert add(cloud, warm("second"))["state"] == "running"
    assert job(cloud, "second")["attempts"][0]["start"] == "cold"


def test_the_queue_default_keep_alive_applies_to_jobs_that_set_none(make_cloud):
    cloud = make_cloud({P5: 1}, keep_alive_seconds=90)
    add(cloud, warm("untold", keep_alive=None))
    assert job(cloud, "untold")["keep_alive_seconds"] == 90
    sent = cloud.sagemaker.jobs["untold"].request["ResourceConfig"]
    assert sent["KeepAlivePeriodInSeconds"] == 90
    add(cloud, warm("told-no", keep_alive=0))
    assert job(cloud, "told-no")["keep_alive_seconds"] == 0


def test_pools_are_released_before_any_running_job_is_preempted(make_cloud):
    cloud = make_cloud({P5: 2})
    add(cloud, warm("low", priority=0, run_seconds=3600, keep_alive=None))
    add(cloud, warm("done", priority=1, run_seconds=100))
    cloud.advance(100)  # done leaves a pool beside the running low-priority job
    assert [p["job"] for p in pools(cloud)] == ["done"]
    add(cloud, warm("urgent", priority=9, volume=50, keep_alive=None))
    assert states(cloud) == {"low": "running", "urgent": "running"}
    assert pools(cloud) == []
    assert job(cloud, "low")["preemptions"] == 0


def test_a_preempted_jobs_pool_goes_to_a_matching_preemptor(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("low", priority=0, run_seconds=3600))
    add(cloud, warm("urgent", priority=9))
    assert states(cloud)["low"] == "preempting"
    cloud.advance(60)  # the stop ends; SageMaker keeps low's instances
    assert states(cloud) == {"urgent": "running", "low": "preempted"}
    (attempt,) = job(cloud, "urgent")["attempts"]
    assert (attempt["start"], attempt["warm_pool_of"]) == ("warm", "low")


def test_a_preempted_jobs_pool_is_released_for_a_preemptor_that_does_not_match(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("low", priority=0, run_seconds=3600))
    add(cloud, warm("urgent", priority=9, volume=50))
    cloud.advance(60)
    assert states(cloud) == {"urgent": "running", "low": "preempted"}
    assert job(cloud, "urgent")["attempts"][0]["start"] == "cold"
    assert cloud.sagemaker.jobs["low"].pool == "Terminated"
    assert cloud.sagemaker.peak_in_use == {P5: 1}


def test_a_released_pool_is_a_queue_event_and_a_line_in_its_jobs_history(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("done", priority=1, run_seconds=100))
    cloud.advance(100)  # done leaves a pool
    add(cloud, warm("other", priority=1, volume=50, keep_alive=None))
    assert states(cloud)["other"] in ("starting", "running")
    (line,) = [h for h in job(cloud, "done")["history"] if h["action"] == "pool-released"]
    assert (line["released_for"], line["by"]) == ("other", None)
    (event,) = [
        e
        for e in read_events(cloud.logs, cloud.settings.queue_name, job="done")
        if e.get("released_for")
    ]
    assert (event["sagemaker_job_name"], event["released_for"]) == ("done", "other")
    assert event_line(event).endswith(
        "done warm pool released: released for other, which it does not match"
    )


def test_the_sweep_forgets_a_pool_that_ended_outside_the_queue(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("first", keep_alive=3600))
    cloud.advance(300)
    cloud.sagemaker.update_training_job(
        {"TrainingJobName": "first", "ResourceConfig": {"KeepAlivePeriodInSeconds": 0}}
    )
    assert len(pools(cloud)) == 1, "nothing tells the queue: no event announces a pool's end"
    cloud.sweep()
    assert pools(cloud) == []


def test_a_start_on_a_pool_sagemaker_did_not_use_gives_the_pool_back(make_cloud):
    cloud = make_cloud({P5: 2})
    add(cloud, warm("first", run_seconds=100))
    cloud.advance(100)
    # The configuration matches for the queue, but SageMaker's pool is gone before the start.
    cloud.sagemaker.jobs["first"].pool_expires_at = cloud.clock()
    add(cloud, warm("second"))
    assert job(cloud, "second")["attempts"][0]["start"] == "cold"
    cloud.sweep()
    assert pools(cloud) == []


def test_a_cancelled_job_leaves_a_pool_the_next_job_uses(make_cloud):
    cloud = make_cloud({P5: 1})
    add(cloud, warm("dropped", run_seconds=3600))
    cloud.api("DELETE", "/jobs/dropped")
    cloud.advance(60)
    assert [p["job"] for p in pools(cloud)] == ["dropped"]
    add(cloud, warm("next"))
    assert job(cloud, "next")["attempts"][0]["warm_pool_of"] == "dropped"


def test_pools_with_shares_count_for_the_share_of_the_job_that_left_them(make_cloud):
    shares = (
        Share("vision", {P5: 1}, Strategy.LEND_AND_BORROW),
        Share("nlp", {P5: 1}, Strategy.LEND),
    )
    cloud = make_cloud({}, shares=shares)
    add(cloud, warm("v1", share="vision", run_seconds=3600, keep_alive=None))
    add(cloud, warm("v2", share="vision", run_seconds=100))  # borrows nlp's idle instance
    cloud.advance(100)
    _, body = cloud.api("GET", "/shares")
    vision = next(s for s in body["shares"] if s["name"] == "vision")
    assert vision["instance_types"][P5]["in_use"] == 2, "v2's pool is vision's: still borrowed"
    # nlp's own job gets its instance back from the idle pool, with nobody preempted.
    add(cloud, warm("n1", share="nlp", volume=50, keep_alive=None))
    assert states(cloud) == {"v1": "running", "n1": "running"}
    assert pools(cloud) == []
    assert cloud.sagemaker.peak_in_use == {P5: 2}


def test_a_share_that_cannot_grow_leaves_another_shares_pool_alone(make_cloud):
    shares = (
        Share("vision", {P5: 1}, Strategy.LEND_AND_BORROW),
        Share("nlp", {P5: 1}, Strategy.LEND),
    )
    cloud = make_cloud({}, shares=shares)
    add(cloud, warm("v1", share="vision", run_seconds=100))
    add(cloud, warm("n1", share="nlp", run_seconds=3600))
    cloud.advance(100)
    # nlp is at its limit and does not borrow: releasing vision's pool would not let n2 in.
    add(cloud, warm("n2", share="nlp", volume=50, keep_alive=None))
    assert states(cloud) == {"n1": "running", "n2": "pending"}
    assert [p["job"] for p in pools(cloud)] == ["v1"]


def test_overlapping_invocations_never_hold_more_than_the_cap_with_pools(make_cloud):
    cloud = make_cloud(CAPACITY, stop_seconds=60)
    rng = random.Random(11)
    batches = _workload(seed=11)
    for batch in batches:
        for request in batch:
            if rng.random() < 0.6:
                request["ResourceConfig"]["KeepAlivePeriodInSeconds"] = rng.choice([60, 300])
                request["ResourceConfig"]["VolumeSizeInGB"] = rng.choice([30, 50])
    errors: list[BaseException] = []
    submitting = threading.Event()
    submitting.set()

    def user(batch: list[dict]) -> None:
        try:
            for request in batch:
                status, body = cloud.api("POST", "/add-job", request)
                assert status == 201, body
        except BaseException as exc:
            errors.append(exc)

    def eventbridge() -> None:
        try:
            while submitting.is_set():
                cloud.advance(20)
                cloud.sweep()
        except BaseException as exc:
            errors.append(exc)

    users = [threading.Thread(target=user, args=(batch,)) for batch in batches]
    events = threading.Thread(target=eventbridge)
    events.start()
    for thread in users:
        thread.start()
    for thread in users:
        thread.join()
    submitting.clear()
    events.join()
    assert errors == []
    for _ in range(300):
        if not cloud.jobs():
            break
        cloud.advance(60)
    assert cloud.jobs() == [], "jobs stuck in the queue"
    names = [r["TrainingJobName"] for batch in batches for r in batch]
    final = [job(cloud, name) for name in names]
    assert {f["state"] for f in final} == {"completed"}
    # Pools held instances during the run (whether a later job happened to match one while
    # it was idle depends on how the threads interleave).
    assert any(j.pool is not None for j in cloud.sagemaker.jobs.values()), "pools were kept"
    for itype, cap in CAPACITY.items():
        assert cloud.sagemaker.peak_in_use.get(itype, 0) <= cap
    assert all(f["start_failures"] == 0 for f in final), "the account never refused a start"
