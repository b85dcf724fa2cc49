"""Whether a job could ever run: one set of rules for the live queue and the simulator."""

import io
from dataclasses import replace

import pytest
from tjq.local.calls import ROLE_ARN, training_request
from tjq.simulate.workload import WorkloadError, parse_workload, request_for

from job_queue.admission import admit
from job_queue.errors import InvalidRequest
from job_queue.layout import Layout
from job_queue.request import validate_submission
from job_queue.scheduler import Share, Strategy

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"
SHARES = (
    Share("vision", {P5: 2}, Strategy.LEND_AND_BORROW, borrow_limit=50),
    Share("prod", {P5: 1}, Strategy.RESERVE),
)
ONE_QUEUE = Layout({P5: 2})
WITH_SHARES = Layout({P5: 3}, SHARES)


def submission(**kwargs):
    return validate_submission(training_request("job", **kwargs), frozenset({ROLE_ARN}))


REFUSALS = [
    (
        "an instance type without capacity",
        {"instance_type": G5},
        ONE_QUEUE,
        "ResourceConfig.InstanceType",
        "has no capacity in this queue (configured: ml.p5",
    ),
    (
        "more instances than the capacity",
        {"instance_count": 3},
        ONE_QUEUE,
        "ResourceConfig.InstanceCount",
        "3 x ml.p5.48xlarge is more than this queue's capacity of 2",
    ),
    (
        "a share named in a queue without shares",
        {"share": "vision"},
        ONE_QUEUE,
        "Tags.share",
        "this queue has no quota shares, so a job cannot name one ('vision')",
    ),
    (
        "no share in a queue with shares",
        {},
        WITH_SHARES,
        "Tags.share",
        "this queue has shares; tag the job with share = one of vision, prod",
    ),
    (
        "a share that does not exist",
        {"share": "nlp"},
        WITH_SHARES,
        "Tags.share",
        "'nlp' is not one of vision, prod",
    ),
    (
        "more than its share may ever hold",
        {"share": "prod", "instance_count": 2},
        WITH_SHARES,
        "ResourceConfig.InstanceCount",
        "share prod may hold at most 1 (limit 1, strategy RESERVE)",
    ),
]


@pytest.mark.parametrize(
    ("title", "job", "layout", "field", "problem"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_a_job_that_could_never_run_is_refused_naming_the_field(title, job, layout, field, problem):
    with pytest.raises(InvalidRequest) as refused:
        admit(submission(**job), layout)
    assert refused.value.field == field
    assert problem in refused.value.problem
    assert str(refused.value).startswith(field)


def test_a_job_that_fits_gets_its_share():
    assert admit(submission(), ONE_QUEUE).share is None
    assert admit(submission(share="vision", instance_count=3), WITH_SHARES).share == "vision"
    assert admit(submission(), Layout({P5: 3}, SHARES, default_share="prod")).share == "prod"


C5 = "ml.c5.18xlarge"
WITH_HELPERS = Layout({P5: 2}, uncapped=frozenset({C5}))


def _grouped(**groups):
    request = training_request("ray")
    request["ResourceConfig"] = {
        "InstanceGroups": [
            {"InstanceGroupName": name, "InstanceType": itype, "InstanceCount": count}
            for name, (itype, count) in groups.items()
        ],
        "VolumeSizeInGB": 30,
    }
    return validate_submission(request, frozenset({ROLE_ARN}))


def test_uncapped_helper_groups_are_carried_but_never_counted():
    admitted = admit(_grouped(gpu=(P5, 1), cpu=(C5, 200)), WITH_HELPERS)
    assert admitted.demand == {P5: 1}  # 200 helpers, far above any cap, do not matter
    assert admitted.helpers == {C5: 200}


def test_a_job_only_on_uncapped_types_is_admitted_counting_nothing():
    admitted = admit(_grouped(cpu=(C5, 2), more=(C5, 500)), WITH_HELPERS)
    assert (admitted.demand, admitted.helpers, admitted.share) == ({}, {C5: 502}, None)


def test_with_shares_a_job_only_on_uncapped_types_needs_no_share_but_one_it_names_exists():
    layout = Layout({P5: 3}, SHARES, uncapped=frozenset({C5}))
    assert admit(_grouped(cpu=(C5, 2)), layout).share is None
    named = _grouped(cpu=(C5, 2))
    with pytest.raises(InvalidRequest, match="share 'gone' does not exist"):
        admit(replace(named, share="gone"), layout)
    assert admit(replace(named, share="prod"), layout).share == "prod"


HEADER = "name,submit_s,duration_s,priority,instance_type,instance_count,max_runtime_s"
QUEUE_REFUSES = [
    (
        "a name neither SageMaker nor AWS Batch takes",
        "job.1,0,60,0,ml.p5.48xlarge,1,",
        "line 2, column name: 'job.1' is not a valid job name",
    ),
    (
        "a priority beyond the queue's range",
        "a,0,60,10000,ml.p5.48xlarge,1,",
        "line 2, column priority: must be between -9999 and 9999",
    ),
    (
        "a max runtime that is not whole seconds",
        "a,0,60,0,ml.p5.48xlarge,1,90.5",
        "line 2, column max_runtime_s: must be a positive integer",
    ),
    (
        "an instance type that is not one",
        "a,0,60,0,p5,1,",
        "line 2, column instance_type: 'p5' is not a SageMaker instance type",
    ),
]


@pytest.mark.parametrize(
    ("title", "row", "message"), QUEUE_REFUSES, ids=[q[0] for q in QUEUE_REFUSES]
)
def test_the_simulator_refuses_a_row_the_live_queue_would_refuse(title, row, message):
    with pytest.raises(WorkloadError) as refused:
        parse_workload(io.StringIO(f"{HEADER}\n{row}"), {P5: 2})
    assert message in str(refused.value)


def test_a_row_becomes_the_request_the_queue_accepts():
    (spec,) = parse_workload(
        io.StringIO(f"{HEADER}\ntrain-7,0,60,3,ml.p5.48xlarge,2,3600"), {P5: 2}
    )
    request = request_for(spec)
    admitted = validate_submission(request, frozenset({request["RoleArn"]}))
    assert (admitted.name, admitted.priority, dict(admitted.demand)) == ("train-7", 3, {P5: 2})
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 3600}
