"""`smq simulate` with training plans, hand-computed: reservations opening and closing, a bound
that outlasts one, a job stopped as its reservation ends, and plans beside on-demand capacity."""

import io

import pytest
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.metrics import report
from tjq.simulate.plans import sim_plans
from tjq.simulate.workload import parse_workload

from job_queue.scheduler.reservations import STOP_AHEAD_S, TERMINATION_WINDOW_S

P5 = "ml.p5.48xlarge"
HEADER = "name,submit_s,duration_s,priority,instance_type,instance_count,share,max_runtime_s"
CLOSES = TERMINATION_WINDOW_S + STOP_AHEAD_S  # a reservation stops counting this early


def run(rows: str, plans, on_demand=0, **settings) -> dict:
    capacity = {P5: on_demand}
    plans = sim_plans(plans)
    jobs = parse_workload(io.StringIO(f"{HEADER}\n{rows}"), capacity, plans=plans)
    result = simulate(jobs, SimSettings(capacity, plans=plans, **settings))
    return {job["name"]: job for job in report(result)["jobs"]}


def test_jobs_wait_for_a_reservation_to_open():
    jobs = run("a,0,600,0,ml.p5.48xlarge,1,,1000", [f"{P5}=1@3600-86400"])
    assert (jobs["a"]["first_start_s"], jobs["a"]["end_s"]) == (3600, 4200)


def test_a_job_whose_bound_outlasts_the_reservation_waits_for_the_next_one():
    rows = "long,0,3000,5,ml.p5.48xlarge,1,,6000\nshort,0,600,0,ml.p5.48xlarge,1,,1000"
    jobs = run(rows, [f"{P5}=1@0-7200", f"{P5}=1@10000-30000"])
    # The higher-priority job's bound ends past 7200 - 35 min: it may not start on the
    # first reservation, and holds nobody back from it.
    assert jobs["short"]["first_start_s"] == 0
    assert jobs["long"]["first_start_s"] == 10000


def test_a_job_still_running_as_its_reservation_ends_is_stopped_and_resumes_later():
    # Its bound fits, but provisioning pushes its end into the termination window.
    rows = "late,0,4000,0,ml.p5.48xlarge,1,,4000"
    jobs = run(rows, [f"{P5}=1@0-7200", f"{P5}=1@9000-30000"], start_latency=1500)
    assert jobs["late"]["preemptions"] == 1
    assert jobs["late"]["first_start_s"] == 0
    assert jobs["late"]["end_s"] == 9000 + 1500 + 4000  # all over again: no checkpoints
    assert 7200 - CLOSES < 9000


def test_a_plan_beside_on_demand_capacity_of_the_same_type():
    rows = "\n".join(f"j{i},0,600,0,ml.p5.48xlarge,1,,1000" for i in range(4))
    jobs = run(rows, [f"{P5}=2@0-86400"], on_demand=1)
    assert [jobs[f"j{i}"]["first_start_s"] for i in range(4)] == [0, 0, 0, 600]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["ml.p5.48xlarge=2@100-50"], "needs COUNT >= 1 and START_S < END_S"),
        (["ml.p5.48xlarge=2"], "expected TYPE=COUNT@START_S-END_S"),
        ([f"{P5}=1@0-7200", f"{P5}=1@3600-9000"], "two reservations of ml.p5.48xlarge overlap"),
    ],
)
def test_bad_plans_say_what_is_wrong(options, message):
    with pytest.raises(ValueError, match=message):
        sim_plans(options)
