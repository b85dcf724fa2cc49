"""Training plans through the real handler and the SageMaker emulator: the queue reads each
plan, runs jobs on its reserved instances only while a reservation is open and long enough,
and stops and requeues a job whose reservation ends under it."""

import pytest
from tjq.local.calls import training_request
from tjq.local.emulated_plans import Reservation
from tjq.table import plan_lines, queue_table

from job_queue.scheduler.reservations import STOP_AHEAD_S, TERMINATION_WINDOW_S
from tests.conftest import P5
from tests.integration.helpers import job, states

HOUR = 3600.0
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"
CLOSES = TERMINATION_WINDOW_S + STOP_AHEAD_S  # before its end, a reservation stops counting


def plan_cloud(make_cloud, plans, on_demand=None, capacity_plans=None, **kwargs):
    """A queue whose p5 capacity is ``on_demand`` instances (if any) and the plans named in
    ``capacity_plans`` (default: every plan of ``plans``, options NAME=TYPE:N:START:END)."""
    names = capacity_plans or list(dict.fromkeys(option.partition("=")[0] for option in plans))
    entry = [] if on_demand is None else [on_demand]
    entry += [{"training_plan": ARN + name} for name in names]
    return make_cloud({P5: entry}, training_plans=plans, **kwargs)


def submit(cloud, name, max_runtime=HOUR, run_seconds=600, **kwargs):
    request = training_request(name, run_seconds=run_seconds, max_runtime=int(max_runtime))
    request["ResourceConfig"].update(kwargs)
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 201, body
    return body


def plans(cloud):
    return {p["name"]: p for p in cloud.api("GET", "/jobs")[1]["plans"]}


def reasons(cloud):
    return {row["name"]: row["waiting_reason"] for row in cloud.jobs() if row["position"]}


def on_plan(cloud, sagemaker_name):
    """The training plan SageMaker was asked to run the job on (None: on-demand)."""
    return cloud.sagemaker.jobs[sagemaker_name].request["ResourceConfig"].get("TrainingPlanArn")


def later(cloud, seconds):
    """Time passes; the one-minute sweep runs (plans have no events: the sweep notices)."""
    cloud.advance(seconds)
    cloud.sweep()


def test_a_plan_window_opening_and_closing(make_cloud):
    cloud = plan_cloud(make_cloud, [f"p5-plan={P5}:2:{HOUR:g}:{5 * HOUR:g}"])
    submit(cloud, "early")
    assert states(cloud) == {"early": "pending"}
    assert "training plan p5-plan has no reservation open until" in reasons(cloud)["early"]
    assert plans(cloud)["p5-plan"]["status"] == "Scheduled"

    later(cloud, HOUR)  # the reservation opens: the queue starts the job on it
    assert states(cloud) == {"early": "running"}
    assert on_plan(cloud, "early") == ARN + "p5-plan"
    row = plans(cloud)["p5-plan"]
    assert (row["status"], row["reserved"], row["in_use"]) == ("Active", 2, 1)
    assert (
        "training plan p5-plan (ml.p5.48xlarge, Active): 1 of 2 reserved in use"
        in (plan_lines([row])[0])
    )
    assert "1 x ml.p5.48xlarge on plan p5-plan" in queue_table(cloud.jobs())
    assert job(cloud, "early")["training_plan"] == ARN + "p5-plan"

    later(cloud, 4 * HOUR - CLOSES)  # the reservation no longer counts: nothing starts on it
    assert job(cloud, "early")["state"] == "completed"
    submit(cloud, "late")
    assert states(cloud) == {"late": "pending"}
    assert reasons(cloud)["late"] == "training plan p5-plan has no reservation left"
    later(cloud, CLOSES)
    assert plans(cloud)["p5-plan"]["status"] == "Expired"
    assert reasons(cloud)["late"] == "training plan p5-plan is Expired"


def test_a_job_whose_bound_outlasts_the_reservation_waits_and_says_so(make_cloud):
    cloud = plan_cloud(make_cloud, [f"p5-plan={P5}:1:0:{4 * HOUR:g}"])
    submit(cloud, "long", max_runtime=4 * HOUR)
    submit(cloud, "short", max_runtime=HOUR)
    # The long job would still run when SageMaker reclaims the instances: it waits, and the
    # short one behind it uses the plan.
    assert states(cloud) == {"long": "pending", "short": "running"}
    assert reasons(cloud)["long"].startswith(
        "its MaxRuntimeInSeconds (14400 s) outlasts training plan p5-plan's reservation"
    )
    assert on_plan(cloud, "short") == ARN + "p5-plan"
    assert "long" not in cloud.sagemaker.jobs  # never left in SageMaker's own Pending queue


def test_a_plan_cut_short_stops_and_requeues_its_job_as_a_preemption(make_cloud):
    cloud = plan_cloud(make_cloud, [f"p5-plan={P5}:1:0:{10 * HOUR:g}"], on_demand=1)
    submit(cloud, "on-plan", max_runtime=4 * HOUR, run_seconds=3 * HOUR)
    assert on_plan(cloud, "on-plan") == ARN + "p5-plan"
    # AWS shortens the reservation: SageMaker will reclaim its instances in 7 minutes.
    (plan,) = cloud.sagemaker.plans.values()
    reclaimed = cloud.clock() + 420
    start = plan.reservations[0].start
    plan.reservations[0] = Reservation(P5, 1, start, reclaimed + TERMINATION_WINDOW_S)
    later(cloud, 180)  # the sweep reads the plan again, and stops the job in time
    detail = job(cloud, "on-plan")
    assert detail["preempted_by"] == "reservation ending"
    assert detail["history"][-1]["action"] == "preempted"
    cloud.advance(120)  # its stop completes before SageMaker reclaims: it resumes on-demand
    assert cloud.clock() < reclaimed
    assert cloud.sagemaker.jobs["on-plan"].status == "Stopped"
    detail = job(cloud, "on-plan")
    assert detail["state"] == "running" and detail["preemptions"] == 1
    assert on_plan(cloud, detail["sagemaker_job_name"]) is None
    assert detail["attempts"][0]["outcome"] == "preempted"


def test_two_reservations_of_one_plan(make_cloud):
    options = [f"p5-plan={P5}:1:0:{2 * HOUR:g}", f"p5-plan={P5}:2:{3 * HOUR:g}:{8 * HOUR:g}"]
    cloud = plan_cloud(make_cloud, options)
    started = cloud.clock()
    submit(cloud, "a")
    submit(cloud, "b")
    assert states(cloud) == {"a": "running", "b": "pending"}  # the first reservation has one
    cloud.advance(600)
    assert states(cloud) == {"b": "running"}
    later(cloud, 2 * HOUR)  # between the reservations
    submit(cloud, "c")
    submit(cloud, "d")
    assert states(cloud) == {"c": "pending", "d": "pending"}
    later(cloud, started + 3 * HOUR - cloud.clock())  # the second reservation opens, with two
    assert states(cloud) == {"c": "running", "d": "running"}
    assert plans(cloud)["p5-plan"]["reserved"] == 2


def test_a_plan_beside_on_demand_capacity_of_the_same_type(make_cloud):
    cloud = plan_cloud(make_cloud, [f"p5-plan={P5}:2:0:{10 * HOUR:g}"], on_demand=1)
    for name in ("j1", "j2", "j3", "j4"):
        submit(cloud, name, KeepAlivePeriodInSeconds=600)
    assert states(cloud) == {"j1": "running", "j2": "running", "j3": "running", "j4": "pending"}
    # The plan's reserved instances go first; the on-demand one takes the rest.
    assert [on_plan(cloud, n) for n in ("j1", "j2", "j3")] == [ARN + "p5-plan"] * 2 + [None]
    # On a plan the reservation keeps the instances: no warm pool is asked for.
    resource = cloud.sagemaker.jobs["j1"].request["ResourceConfig"]
    assert "KeepAlivePeriodInSeconds" not in resource
    assert cloud.sagemaker.jobs["j3"].request["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 600
    cloud.advance(600)
    assert states(cloud)["j4"] == "running"


def test_a_plan_that_cannot_be_read_is_reported_and_the_queue_goes_on(make_cloud):
    cloud = plan_cloud(
        make_cloud, [f"p5-plan={P5}:1:0:{HOUR:g}"], on_demand=1, capacity_plans=["ghost"]
    )
    submit(cloud, "a")
    submit(cloud, "b")
    assert states(cloud) == {"a": "running", "b": "pending"}
    assert on_plan(cloud, "a") is None
    error = plans(cloud)["ghost"]["error"]
    assert error.startswith("could not be read: DescribeTrainingPlan: ResourceNotFound")
    # It waits for the on-demand instance a holds; the plan that could not be read says why
    # it is no help.
    assert reasons(cloud)["b"].startswith("its instances are in use by a (first come")
    assert "; training plan ghost: could not be read" in reasons(cloud)["b"]


def test_a_plan_of_another_type_than_its_entry_is_reported_and_never_used(make_cloud):
    cloud = plan_cloud(make_cloud, ["g5-plan=ml.g5.xlarge:2:0:86400"], on_demand=0)
    status, body = cloud.api("POST", "/add-job", training_request("a", max_runtime=3600))
    assert status == 400  # nothing of p5 could ever hold it
    assert "1 x ml.p5.48xlarge is more than this queue's capacity of 0" in body["message"]
    assert plans(cloud)["g5-plan"]["error"] == (
        "it reserves ml.g5.xlarge, not ml.p5.48xlarge (its CAPACITY entry)"
    )


@pytest.mark.parametrize("arn", [ARN + "p5-plan", "anything"])
def test_a_job_that_names_its_own_training_plan_is_refused(make_cloud, arn):
    cloud = plan_cloud(make_cloud, [f"p5-plan={P5}:2:0:{HOUR:g}"])
    request = training_request("mine")
    request["ResourceConfig"]["TrainingPlanArn"] = arn
    status, body = cloud.api("POST", "/add-job", request)
    assert status == 400
    assert body["message"].startswith("ResourceConfig.TrainingPlanArn: the queue chooses")
    assert cloud.jobs() == []


def test_a_teams_plan_with_shares_lends_its_idle_reserved_instances_and_reclaims_them(
    make_cloud,
):
    """The research team reserved two p5 for a week; the product team has one on demand and
    borrows what research leaves idle, until research needs it."""
    from job_queue.share_config import parse_shares

    shares = parse_shares(
        [
            {
                "name": "research",
                "capacity": {P5: {"training_plan": ARN + "research-week"}},
                "strategy": "LEND",
                "in_share_preemption": False,
            },
            {
                "name": "product",
                "capacity": {P5: 1},
                "strategy": "LEND_AND_BORROW",
                "borrow_limit": 100,
                "in_share_preemption": False,
            },
        ]
    )
    week = f"research-week={P5}:2:0:{7 * 24 * HOUR:g}"
    cloud = make_cloud({P5: 1}, shares=shares, training_plans=[week], run_seconds=3 * HOUR)
    cloud.sweep()  # the queue reads the plan
    for name in ("p-1", "p-2"):
        request = training_request(name, 1, max_runtime=int(2 * HOUR), share="product")
        assert cloud.api("POST", "/add-job", request)[0] == 201
    # p-1 on product's own instance; p-2 borrows one of research's idle reserved ones.
    assert states(cloud) == {"p-1": "running", "p-2": "running"}
    assert (on_plan(cloud, "p-1"), on_plan(cloud, "p-2")) == (None, ARN + "research-week")
    rows = {s["name"]: s for s in cloud.api("GET", "/shares")[1]["shares"]}
    reserved = rows["research"]["instance_types"][f"{P5}@research-week"]
    assert (reserved["limit"], reserved["in_use"], reserved["lent"]) == (2, 0, 1)

    for name in ("r-1", "r-2"):
        request = training_request(name, 1, max_runtime=int(2 * HOUR), share="research")
        assert cloud.api("POST", "/add-job", request)[0] == 201
    # r-1 on the idle reserved instance; r-2 reclaims the one product borrowed.
    assert job(cloud, "p-2")["state"] in ("preempting", "preempted")
    cloud.advance(120)
    assert {n: s for n, s in states(cloud).items() if n.startswith("r-")} == {
        "r-1": "running",
        "r-2": "running",
    }
    assert on_plan(cloud, "r-2") == ARN + "research-week"
    assert job(cloud, "p-2")["state"] == "preempted"


def test_shares_applied_at_run_time_may_name_only_plans_the_queue_may_describe(make_cloud):
    from job_queue.share_config import parse_shares, share_to_dict

    team = {"name": "team", "capacity": {P5: 1}, "strategy": "LEND", "in_share_preemption": False}
    cloud = make_cloud(
        {P5: 1}, shares=parse_shares([team]), training_plans=[f"known={P5}:1:0:86400"]
    )
    unknown = {**team, "capacity": {P5: [1, {"training_plan": ARN + "unknown"}]}}
    status, body = cloud.api("PUT", "/shares", [unknown])
    assert status == 400
    assert f"training plan {ARN}unknown is not in TrainingPlanArns" in body["message"]
    assert cloud.api("GET", "/shares")[1]["shares"][0]["capacity"] == {P5: 1}  # unchanged

    known = {**team, "capacity": {P5: [1, {"training_plan": ARN + "known"}]}}
    assert cloud.api("PUT", "/shares", [known])[0] == 200
    (shown,) = cloud.api("GET", "/shares")[1]["shares"]
    assert share_to_dict(parse_shares([known])[0])["capacity"] == shown["capacity"]
    cloud.sweep()  # the queue reads the plan the new shares name
    assert (
        cloud.api("GET", "/shares")[1]["shares"][0]["instance_types"][f"{P5}@known"]["limit"] == 1
    )
