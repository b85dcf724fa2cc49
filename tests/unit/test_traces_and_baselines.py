"""Trace importers (a documented, deterministic mapping) and the benchmark's baselines."""

import io
from collections import Counter

from tjq.simulate import traces
from tjq.simulate.baselines import blog_decision, fifo, unprioritised
from tjq.simulate.engine import SimSettings, simulate
from tjq.simulate.workload import parse_workload

from job_queue.models import JobState
from job_queue.scheduler import ActiveJob, Policy, Snapshot, WaitingJob

P5 = "ml.p5.48xlarge"


def test_philly_rows_become_p5_jobs(tmp_path):
    path = tmp_path / "philly.csv"
    path.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-02 00:00:10,100.0,1,100.0,a\n"
        "2017-10-02 00:00:00,50.0,16,800.0,b\n"
        "2017-10-02 00:01:00,70.0,0,0.0,c\n"
        "2017-10-05 00:00:00,70.0,8,560.0,c\n"
    )
    jobs = traces.philly(path, start="2017-10-02 00:00:00", days=1)
    assert [
        (j.name, j.submit_s, j.duration_s, j.instance_type, j.instance_count) for j in jobs
    ] == [
        ("philly-3", 0.0, 50.0, P5, 2),  # 16 GPUs: two 8-GPU instances; sorted by time
        ("philly-2", 10.0, 100.0, P5, 1),
    ]  # the 0-GPU job is dropped; the one three days later is outside the window
    assert jobs == traces.philly(path, start="2017-10-02 00:00:00", days=1)  # deterministic


def test_seeded_priorities_are_10_30_60(tmp_path):
    path = tmp_path / "itp.csv"
    rows = "\n".join(f"job{i},{i},100,1" for i in range(3000))
    path.write_text("job_id,submission_time,duration,num_gpu\n" + rows + "\n")
    shares = Counter(job.priority for job in traces.itp(path))
    assert abs(shares[2] / 3000 - 0.10) < 0.02
    assert abs(shares[1] / 3000 - 0.30) < 0.03
    assert abs(shares[0] / 3000 - 0.60) < 0.03
    assert Counter(j.priority for j in traces.itp(path, seed=8)) != shares


def test_chronus_priority_is_its_best_effort_flag(tmp_path):
    path = tmp_path / "chronus.csv"
    header = (
        "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
        "expect_time_list,expect_value_list,best_effort,job_type\n"
    )
    path.write_text(header + "0,u,1,100,1,m,60,1,1,1,0,strict\n1,u,4,90,1,m,30,1,1,1,1,be\n")
    jobs = traces.chronus(path)
    assert [(j.submit_s, j.priority, j.instance_count) for j in jobs] == [(0, 0, 1), (10, 1, 1)]


def test_capacity_puts_offered_load_at_or_above_100_percent():
    jobs = parse_workload(
        io.StringIO(
            "name,submit_s,duration_s,priority,instance_type,instance_count\n"
            "a,0,1000,0,ml.p5.48xlarge,1\nb,100,1000,0,ml.p5.48xlarge,2\nc,200,500,0,ml.p5.48xlarge,1\n"
        ),
        {P5: 100},
    )
    capacity = traces.capacity_for(jobs)
    assert capacity == 17  # 3500 instance-seconds over a 200-second window
    assert traces.offered_load(jobs, capacity) >= 1.0


def _waiting(name, priority, seq):
    return WaitingJob(name, priority, seq, {P5: 1})


def _running(name, priority, started, state=JobState.RUNNING):
    return ActiveJob(name, priority, 0, {P5: 1}, state, started)


def test_blog_starts_the_top_pending_jobs_in_free_slots():
    waiting = [_waiting("a", 1, 1), _waiting("b", 0, 2), _waiting("c", 0, 3)]
    plan = blog_decision(Snapshot(0.0, {P5: 2}), iter(waiting), Policy())
    assert [j.name for j in plan.starts] == ["a", "b"] and not plan.preemptions


def test_blog_preempts_pairwise_and_counts_stopping_jobs_as_coming_slots():
    active = [
        _running("low-old", 0, 1.0),
        _running("low-new", 0, 5.0),
        _running("stopping", 0, 0.0, JobState.PREEMPTING),
    ]
    waiting = [_waiting("u1", 5, 1), _waiting("u2", 5, 2), _waiting("u3", 0, 3)]
    plan = blog_decision(Snapshot(10.0, {P5: 3}, active), iter(waiting), Policy())
    # It looks at 3 pending jobs; one stop is under way, so u1 takes that slot and u2 is
    # tested against the lowest-priority, most recently created running job.
    assert [p.victim.name for p in plan.preemptions] == ["low-new"]


def test_fifo_ignores_priorities_and_never_preempts():
    jobs = parse_workload(
        io.StringIO(
            "name,submit_s,duration_s,priority,instance_type,instance_count\n"
            "first,0,100,0,ml.p5.48xlarge,1\nurgent,10,100,9,ml.p5.48xlarge,1\n"
            "second,5,100,0,ml.p5.48xlarge,1\n"
        ),
        {P5: 1},
    )
    result = simulate(unprioritised(jobs), SimSettings({P5: 1}), decide=fifo)
    assert [d.job for d in result.decisions] == ["first", "second", "urgent"]
