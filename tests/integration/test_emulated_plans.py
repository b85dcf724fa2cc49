"""The SageMaker emulator's training plans: DescribeTrainingPlan, and jobs that run on a plan
only inside a reservation with room, as SageMaker runs them."""

import json

import boto3
import pytest
from tjq.cli import main
from tjq.local.calls import training_request
from tjq.local.cloud import LocalCloud
from tjq.local.emulated_plans import plans_from_options

P5 = "ml.p5.48xlarge"
HOUR = 3600.0


@pytest.fixture
def account():
    """An account with 1 on-demand p5 and a plan of 2 x p5 from hour 1 to hour 5, then
    again from hour 10 to hour 12."""
    plans = [f"p5-plan={P5}:2:{HOUR:g}:{5 * HOUR:g}", f"p5-plan={P5}:2:{10 * HOUR:g}:{12 * HOUR:g}"]
    with LocalCloud(capacity={P5: 1}, training_plans=plans, run_seconds=HOUR) as cloud:
        client = boto3.client("sagemaker", region_name="us-east-1")
        cloud.sagemaker.install(client)
        cloud.client = client
        yield cloud


def _plan_arn(cloud):
    (plan,) = cloud.sagemaker.plans.values()
    return plan.arn


def _create(cloud, name, on_plan=True, run_seconds=None):
    request = training_request(name, run_seconds=run_seconds)
    if on_plan:
        request["ResourceConfig"]["TrainingPlanArn"] = _plan_arn(cloud)
    return cloud.client.create_training_job(**request)


def _status(cloud, name):
    found = cloud.client.describe_training_job(TrainingJobName=name)
    return found["TrainingJobStatus"], found["SecondaryStatus"]


def test_a_plan_is_scheduled_then_active_then_scheduled_between_reservations_then_expired(account):
    def plan():
        return account.client.describe_training_plan(TrainingPlanName="p5-plan")

    assert (plan()["Status"], plan()["AvailableInstanceCount"]) == ("Scheduled", 0)
    assert plan()["TotalInstanceCount"] == 4
    assert [r["Status"] for r in plan()["ReservedCapacitySummaries"]] == ["Scheduled"] * 2
    account.advance(HOUR)
    assert (plan()["Status"], plan()["AvailableInstanceCount"]) == ("Active", 2)
    account.advance(5 * HOUR)
    assert plan()["Status"] == "Scheduled"  # between its two reservations
    account.advance(7 * HOUR)
    assert plan()["Status"] == "Expired"


def test_a_plan_job_waits_pending_holding_nothing_until_its_reservation_opens(account):
    _create(account, "on-plan")
    assert _status(account, "on-plan") == ("InProgress", "Pending")
    # The pending job holds nothing: the on-demand p5 is still free.
    _create(account, "on-demand", on_plan=False, run_seconds=60)
    account.advance(HOUR)
    assert _status(account, "on-plan") == ("InProgress", "Starting")
    account.advance(HOUR - 1)
    assert _status(account, "on-plan")[0] == "InProgress"  # its hour counts from its start
    account.advance(1)
    assert _status(account, "on-plan")[0] == "Completed"


def test_a_full_plan_queues_the_next_job_until_one_of_its_jobs_ends(account):
    account.advance(HOUR)
    for name in ("a", "b", "c"):
        _create(account, name)
    assert [_status(account, n)[1] for n in "abc"] == ["Starting", "Starting", "Pending"]
    described = account.client.describe_training_plan(TrainingPlanName="p5-plan")
    assert (described["InUseInstanceCount"], described["AvailableInstanceCount"]) == (2, 0)
    account.advance(HOUR)
    assert _status(account, "c") == ("InProgress", "Starting")


def test_a_job_still_running_when_its_reservation_starts_terminating_fails(account):
    account.advance(4 * HOUR)
    _create(account, "too-long", run_seconds=2 * HOUR)
    account.advance(HOUR)  # the reservation ends at hour 5; termination starts at 4.5 h
    found = account.client.describe_training_job(TrainingJobName="too-long")
    assert found["TrainingJobStatus"] == "Failed"
    assert found["FailureReason"].startswith("InsufficientCapacityError")
    assert found["TrainingEndTime"].timestamp() == pytest.approx(
        account.sagemaker.jobs["too-long"].created_at + 0.5 * HOUR
    )


def test_a_plan_job_that_never_gets_capacity_fails_after_two_days(make_cloud):
    cloud = make_cloud({P5: 1}, training_plans=[f"later={P5}:1:{3 * 86400:g}:{4 * 86400:g}"])
    request = training_request("waits")
    (plan,) = cloud.sagemaker.plans.values()
    request["ResourceConfig"]["TrainingPlanArn"] = plan.arn
    assert cloud.sagemaker.respond("CreateTrainingJob", json.dumps(request).encode())[0] == 200
    cloud.advance(2 * 86400)
    job = cloud.sagemaker.jobs["waits"]
    assert job.status == "Failed" and "within its maximum pending time" in job.failure_reason


def test_plan_capacity_is_outside_the_on_demand_limit(account):
    account.advance(HOUR)
    _create(account, "on-demand", on_plan=False)
    _create(account, "plan-1")
    _create(account, "plan-2")
    assert [_status(account, n)[1] for n in ("on-demand", "plan-1", "plan-2")] == ["Starting"] * 3


@pytest.mark.parametrize(
    ("plan_arn", "message"),
    [
        ("arn:aws:sagemaker:us-east-1:123456789012:training-plan/nope", "does not exist"),
        (None, "reserves ml.p5.48xlarge, not ml.g5.xlarge"),
    ],
)
def test_a_job_on_an_unknown_plan_or_another_type_is_refused(account, plan_arn, message):
    request = training_request("bad", instance_type="ml.g5.xlarge")
    request["ResourceConfig"]["TrainingPlanArn"] = plan_arn or _plan_arn(account)
    with pytest.raises(account.client.exceptions.ClientError) as refused:
        account.client.create_training_job(**request)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    "option", ["p5-plan", "p5-plan=ml.p5.48xlarge:two:0:60", "p=ml.p5.48xlarge:1:60:60", "=x:1:0:1"]
)
def test_a_malformed_training_plan_option_is_refused(capsys, option):
    with pytest.raises(ValueError):
        plans_from_options([option], 0.0, "us-east-1", "123456789012")
    with pytest.raises(SystemExit) as exited:
        main(["local-api", "--training-plan", option])
    assert exited.value.code == 2
    assert "NAME=TYPE:COUNT:START:END" in capsys.readouterr().err or "START < END" in option
