"""`smq simulate` with warm pools, hand-computed: pools kept, reused, released and expired, and
what a baseline that does not count them runs into."""

import io

import pytest
from tjq.simulate.baselines import blog_decision
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import report
from tjq.simulate.workload import WorkloadError, parse_workload

P5 = "ml.p5.48xlarge"
HEADER = "name,submit_s,duration_s,priority,instance_type,instance_count,keep_alive_s,warm_key"
COLD, WARM = 100.0, 10.0


def run(rows: str, capacity=1, decide=None, **settings) -> dict:
    jobs = parse_workload(io.StringIO(f"{HEADER}\n{rows}"), {P5: capacity})
    options = {"start_latency": COLD, "warm_start_latency": WARM, **settings}
    answer = report(simulate(jobs, SimSettings({P5: capacity}, **options), decide=decide))
    answer["by_name"] = {job["name"]: job for job in answer["jobs"]}
    return answer


def test_a_matching_job_starts_on_the_pool_and_makes_progress_after_the_warm_latency():
    # a: starts at 0, works 100 after a cold start: ends at 200 and leaves a pool until 500.
    # b: submitted at 150, waits for a, starts on its pool at 200, ends at 200 + 10 + 100.
    answer = run("a,0,100,1,ml.p5.48xlarge,1,300,team\nb,150,100,1,ml.p5.48xlarge,1,300,team")
    b = answer["by_name"]["b"]
    assert (b["first_start_s"], b["end_s"], b["warm_starts"]) == (200, 310, 1)
    metrics = answer["metrics"]
    assert (metrics["warm_starts"], metrics["cold_starts"]) == (1, 1)
    assert metrics["provisioning_instance_s"] == COLD + WARM
    # b's own pool is held from 310 until it expires at 610; a's was reused at once.
    assert metrics["warm_pool_instance_s"] == 300
    assert metrics["progress_s_by_priority"]["1"] == {"mean": 80, "p95": 98, "max": 100}


def test_a_job_that_does_not_match_gets_the_pool_released_for_it_at_once():
    answer = run("a,0,100,1,ml.p5.48xlarge,1,300,team\nb,250,100,1,ml.p5.48xlarge,1,0,other")
    b = answer["by_name"]["b"]
    assert (b["first_start_s"], b["warm_starts"]) == (250, 0)
    metrics = answer["metrics"]
    assert metrics["released_pools"] == 1
    assert metrics["warm_pool_instance_s"] == 250 - 200  # idle from a's end to b's arrival


def test_a_pool_expires_after_its_keep_alive_and_a_later_match_starts_cold():
    answer = run("a,0,100,1,ml.p5.48xlarge,1,60,team\nb,400,100,1,ml.p5.48xlarge,1,0,team")
    assert answer["by_name"]["b"]["warm_starts"] == 0
    assert answer["metrics"]["warm_pool_instance_s"] == 60


def test_the_default_keep_alive_applies_to_rows_that_set_none():
    rows = "a,0,100,1,ml.p5.48xlarge,1,,team\nb,150,100,1,ml.p5.48xlarge,1,,team"
    assert run(rows)["metrics"].get("warm_starts", 0) == 0
    assert run(rows, keep_alive_s=300)["by_name"]["b"]["warm_starts"] == 1
    explicit_zero = "a,0,100,1,ml.p5.48xlarge,1,0,team\nb,150,100,1,ml.p5.48xlarge,1,,team"
    assert run(explicit_zero, keep_alive_s=300)["by_name"]["b"]["warm_starts"] == 0


def test_a_row_without_a_key_matches_only_its_own_resumed_attempts():
    # low is preempted by urgent at 50; low's stop leaves a pool urgent does not match (it is
    # released for urgent); low resumes at urgent's end on a cold start (urgent's pool is
    # urgent's configuration, not low's).
    rows = "low,0,500,0,ml.p5.48xlarge,1,300,\nurgent,50,100,9,ml.p5.48xlarge,1,300,"
    answer = run(rows, stop_latency=0)
    assert answer["by_name"]["low"]["warm_starts"] == 0
    assert answer["metrics"]["released_pools"] == 2


def test_the_blogs_algorithm_does_not_count_pools_and_gets_starts_refused():
    # a leaves a pool at 200; the blog sees no running job and starts b, which matches
    # nothing: SageMaker refuses it, retried every minute, until the pool expires at 500.
    rows = (
        "a,0,100,1,ml.p5.48xlarge,1,300,team\n"
        "b,250,100,1,ml.p5.48xlarge,1,0,other\n"
        "c,300,10,1,ml.p5.48xlarge,1,0,other"
    )
    blog = run(rows, decide=blog_decision)
    assert blog["metrics"]["refused_starts"] == 6  # at 250 and 300, then 310 ... 490
    assert blog["by_name"]["b"]["first_start_s"] == 550
    queue = run(rows)
    assert queue["metrics"]["refused_starts"] == 0
    assert queue["by_name"]["b"]["first_start_s"] == 250


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a,0,1,0,ml.p5.48xlarge,1,1.5,", "line 2, column keep_alive_s: must be a whole number"),
        ("a,0,1,0,ml.p5.48xlarge,1,-5,", "line 2, column keep_alive_s: -5 is negative"),
    ],
)
def test_a_bad_keep_alive_names_the_line_and_column(row, message):
    with pytest.raises(WorkloadError, match=message):
        parse_workload(io.StringIO(f"{HEADER}\n{row}"), {P5: 1})
