"""Fair share through the handler, the table and the SageMaker emulation: each submitter's
jobs wait in a line of their own, a pass takes the next job from whoever used least lately,
usage is charged as attempts end, and turning fair share off or on loses no job."""

from dataclasses import replace

import pytest
from botocore.exceptions import ClientError
from tjq.local.calls import local_user, training_request

from job_queue.scheduler import Policy, Share, Strategy
from job_queue.scheduler.fair_share import FairShare
from job_queue.store import DynamoJobStore
from job_queue.store.accounts import ACCOUNT_PK
from job_queue.store.table import de, ser

ALICE, BOB = local_user("alice"), local_user("bob")
HOUR = 3600.0
FAIR = FairShare(half_life_s=HOUR)


def submit(cloud, name, caller, fair_share_id=None):
    request = training_request(name, 1)
    if fair_share_id:
        request["Tags"].append({"Key": "fair-share-id", "Value": fair_share_id})
    status, body = cloud.api("POST", "/add-job", request, caller=caller)
    assert status == 201, body
    return body


def started_at(cloud) -> dict[str, float]:
    """When each job's first attempt started (SageMaker's creation time), by job name."""
    return {
        job.tags["training-job-queue:job"]: job.created_at
        for job in sorted(cloud.sagemaker.jobs.values(), key=lambda j: -j.created_at)
    }


def run_all(cloud) -> None:
    while (due := cloud.sagemaker.next_change_at()) is not None:
        cloud.advance(due - cloud.clock())


def accounts(cloud) -> dict[str, dict]:
    items = cloud.dynamodb.query(
        TableName=cloud.settings.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues=ser({":pk": ACCOUNT_PK}),
        ConsistentRead=True,
    )["Items"]
    return {item["sk"]: item for item in map(de, items)}


def turn(cloud, fair: FairShare | None) -> None:
    """Redeploy with fair share on (``fair``) or off: the same table, new settings."""
    cloud.settings = replace(cloud.settings, policy=Policy(fair_share=fair))
    store = DynamoJobStore(cloud.dynamodb, cloud.settings.table_name, fair_share=fair)
    cloud.deps = replace(cloud.deps, settings=cloud.settings, store=store)


@pytest.mark.parametrize(
    ("fair", "bob_starts_at"),
    [(None, 3 * HOUR), (FAIR, HOUR)],
    ids=["first come, first served: bob waits for the whole sweep", "fair share: bob is next"],
)
def test_a_sweep_no_longer_holds_back_the_next_submitter(make_cloud, fair, bob_starts_at):
    cloud = make_cloud(run_seconds=HOUR, policy=Policy(fair_share=fair))
    start = cloud.clock()
    for i in range(6):
        submit(cloud, f"sweep-{i}", ALICE)
    submit(cloud, "bobs-job", BOB)
    run_all(cloud)
    starts = started_at(cloud)
    assert starts["bobs-job"] - start == bob_starts_at
    assert len(starts) == 7  # every job ran


def test_each_submitter_waits_in_a_line_that_its_account_counts(make_cloud):
    cloud = make_cloud(run_seconds=HOUR, policy=Policy(fair_share=FAIR))
    for i in range(4):
        submit(cloud, f"sweep-{i}", ALICE)
    submit(cloud, "tagged", ALICE, fair_share_id="project-x")
    submit(cloud, "bobs-job", BOB)
    counted = {who: item["waiting:WAITING#ml.p5.48xlarge"] for who, item in accounts(cloud).items()}
    # Two of alice's sweep started; a fair-share-id tag charges the project, not its caller.
    assert counted == {ALICE: 2, "project-x": 1, BOB: 1}
    waiting = [row["name"] for row in cloud.jobs() if row["state"] == "pending"]
    assert waiting == ["sweep-2", "sweep-3", "tagged", "bobs-job"]  # GET /jobs reads the lines


def test_usage_is_charged_to_the_submitter_when_an_attempt_ends(make_cloud):
    cloud = make_cloud(run_seconds=HOUR, policy=Policy(fair_share=FAIR))
    submit(cloud, "one", ALICE)
    assert not any(k.startswith("usage:") for k in accounts(cloud).get(ALICE, {}))
    run_all(cloud)
    used = [v for k, v in accounts(cloud)[ALICE].items() if k.startswith("usage:3600:")]
    # An hour on one instance, decayed with a half-life of an hour (then scaled to its
    # window's start): between half an hour and an hour of use.
    assert len(used) == 1 and 0.5 * HOUR < FAIR.held(1, HOUR) <= used[0]
    assert accounts(cloud)[ALICE]["waiting:WAITING#ml.p5.48xlarge"] == 0


def test_turning_fair_share_off_and_on_loses_no_job_and_keeps_each_submitters_order(
    make_cloud,
):
    cloud = make_cloud(capacity={"ml.p5.48xlarge": 1}, run_seconds=HOUR)
    for i in range(3):
        submit(cloud, f"early-{i}", ALICE)  # queued first come, first served
    turn(cloud, FAIR)
    for i in range(3):
        submit(cloud, f"alice-{i}", ALICE)
    submit(cloud, "bobs-job", BOB)
    cloud.advance(HOUR)  # early-0 ends; of the rest, bob's job is next: alice used an hour
    assert started_at(cloud).keys() == {"early-0", "bobs-job"}
    turn(cloud, None)
    waiting = [row["name"] for row in cloud.jobs() if row["state"] == "pending"]
    assert waiting == ["early-1", "early-2", "alice-0", "alice-1", "alice-2"]
    run_all(cloud)
    starts = started_at(cloud)
    assert sorted(starts, key=starts.get) == [
        "early-0",
        "bobs-job",
        "early-1",
        "early-2",
        "alice-0",
        "alice-1",
        "alice-2",
    ]
    assert {cloud.api("GET", f"/jobs/{name}")[1]["job"]["state"] for name in starts} == {
        "completed"
    }


def test_usage_shows_each_submitters_use_and_standing_and_who_is_next_and_why(make_cloud):
    weights = (("project-x", 2.0),)
    fair = FairShare(half_life_s=HOUR, weights=weights)
    cloud = make_cloud(
        capacity={"ml.p5.48xlarge": 1}, run_seconds=HOUR, policy=Policy(fair_share=fair)
    )
    submit(cloud, "first", ALICE)
    submit(cloud, "second", ALICE)
    submit(cloud, "tagged", ALICE, fair_share_id="project-x")
    cloud.advance(HOUR / 2)
    status, body = cloud.api("GET", "/usage", caller=BOB)  # anyone may look
    assert status == 200, body
    rows = {row["submitter"]: row for row in body["submitters"]}
    assert rows[ALICE]["holds_instances"] == 1 and rows[ALICE]["waiting"] == 1
    assert rows[ALICE]["usage_instance_hours"] == round(FAIR.held(1, HOUR / 2) / HOUR, 3)
    assert rows["project-x"] == {
        "submitter": "project-x",
        "usage_instance_hours": 0.0,
        "weight": 2.0,
        "standing": 0.0,
        "holds_instances": 0,
        "waiting": 1,
    }
    assert body["next"]["submitter"] == "project-x"
    assert body["next"]["why"] == (
        "fair share: project-x is next among jobs of the same priority (and share), having "
        f"used 0 instance-h (weight 2); {ALICE} {rows[ALICE]['usage_instance_hours']:g} "
        "instance-h (usage halves every 1 h)"
    )
    listed = cloud.api("GET", "/jobs")[1]
    assert listed["fair_share_next"] == body["next"]  # smq status shows it
    cloud.advance(HOUR / 2)
    assert started_at(cloud).keys() == {"first", "tagged"}  # as GET /usage said


def test_usage_says_when_fair_share_is_off(cloud):
    status, body = cloud.api("GET", "/usage")
    assert status == 200 and body["fair_share"] is None and "fair share is off" in body["note"]


ADMIN = local_user("admin")


@pytest.mark.parametrize(
    ("weights", "next_job"),
    [(None, "alice-2"), ({BOB: 10}, "bob-2")],
    ids=["alice has used less lately", "bob weighs 10: his use counts a tenth"],
)
def test_an_admin_changes_the_weights_at_run_time_and_the_next_job_follows_them(
    make_cloud, weights, next_job
):
    cloud = make_cloud(
        capacity={"ml.p5.48xlarge": 1},
        run_seconds=HOUR,
        policy=Policy(fair_share=FAIR),
        admins=(ADMIN,),
    )
    for name, who in (("alice-1", ALICE), ("bob-1", BOB), ("alice-2", ALICE), ("bob-2", BOB)):
        submit(cloud, name, who)
    cloud.advance(1.5 * HOUR)  # alice-1 ran the first hour; bob-1 runs the second
    if weights:
        status, body = cloud.api("PUT", "/usage/weights", weights, caller=ADMIN)
        assert status == 200, body
        assert body["fair_share"]["weights"] == weights and body["changed"]["by"] == ADMIN
    cloud.advance(HOUR / 2)
    starts = started_at(cloud)
    assert sorted(starts, key=starts.get) == ["alice-1", "bob-1", next_job]


@pytest.mark.parametrize(
    ("body", "caller", "status", "message"),
    [
        ({ALICE: 2}, ALICE, 403, "only an admin (AdminPrincipals) may change the fair-share"),
        ({ALICE: 0}, ADMIN, 400, f"weights: the weight of {ALICE} must be more than 0"),
        ({"not an id": 1}, ADMIN, 400, "'not an id' is neither an IAM ARN pattern"),
        ([1, 2], ADMIN, 400, "the weights must be a JSON object"),
    ],
)
def test_bad_weights_are_refused_naming_the_problem_and_change_nothing(
    make_cloud, body, caller, status, message
):
    cloud = make_cloud(policy=Policy(fair_share=FAIR), admins=(ADMIN,))
    answer_status, answer = cloud.api("PUT", "/usage/weights", body, caller=caller)
    assert answer_status == status and message in answer["message"]
    assert cloud.api("GET", "/usage")[1]["changed"] is None


def test_weights_are_refused_while_fair_share_is_off(make_cloud):
    cloud = make_cloud(admins=(ADMIN,))
    status, answer = cloud.api("PUT", "/usage/weights", {ALICE: 2}, caller=ADMIN)
    assert status == 400 and "fair share is off" in answer["message"]


def test_places_in_line_and_expected_starts_follow_the_fair_share_order(make_cloud):
    cloud = make_cloud(
        capacity={"ml.p5.48xlarge": 1}, run_seconds=HOUR, policy=Policy(fair_share=FAIR)
    )
    for i in range(4):
        submit(cloud, f"sweep-{i}", ALICE)
    answer = submit(cloud, "bobs-job", BOB)
    assert answer["position"] == 1  # next, though four of alice's jobs came first
    places = {name: job(cloud, name)["position"] for name in ("sweep-1", "sweep-2", "bobs-job")}
    assert places == {"bobs-job": 1, "sweep-1": 2, "sweep-2": 3}
    bob, sweep = job(cloud, "bobs-job"), job(cloud, "sweep-1")
    assert bob["expected_start"]["at_latest"] < sweep["expected_start"]["at_latest"]


def job(cloud, name):
    status, body = cloud.api("GET", f"/jobs/{name}")
    assert status == 200, body
    return body["job"]


class ConflictOnce:
    """A DynamoDB client whose next ``times`` transactions meet another writer's on the same
    item, as DynamoDB answers concurrent transactions (moto runs them one at a time)."""

    def __init__(self, client, times: int) -> None:
        self._client, self.times = client, times

    def transact_write_items(self, **params):
        if self.times:
            self.times -= 1
            reasons = [{"Code": "None"}] * (len(params["TransactItems"]) - 1)
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "conflict"},
                    "CancellationReasons": [*reasons, {"Code": "TransactionConflict"}],
                },
                "TransactWriteItems",
            )
        return self._client.transact_write_items(**params)

    def __getattr__(self, name):
        return getattr(self._client, name)


def test_a_submission_that_meets_another_write_to_its_account_is_queued_all_the_same(
    make_cloud,
):
    cloud = make_cloud(policy=Policy(fair_share=FAIR), capacity={"ml.p5.48xlarge": 1})
    submit(cloud, "running", ALICE)
    contended = ConflictOnce(cloud.dynamodb, times=2)
    store = DynamoJobStore(contended, cloud.settings.table_name, fair_share=FAIR)
    cloud.deps = replace(cloud.deps, store=store)
    answer = submit(cloud, "second", ALICE)  # 201: not taken for a name already used
    assert answer["job"]["state"] == "pending" and contended.times == 0
    assert accounts(cloud)[ALICE]["waiting:WAITING#ml.p5.48xlarge"] == 1


def test_with_quota_shares_fair_share_orders_each_shares_jobs(make_cloud):
    teams = (
        Share("vision", {"ml.p5.48xlarge": 1}, Strategy.RESERVE),
        Share("nlp", {"ml.p5.48xlarge": 1}, Strategy.RESERVE),
    )
    cloud = make_cloud(shares=teams, run_seconds=HOUR, policy=Policy(fair_share=FAIR))

    def submit_to(name, caller, share):
        request = training_request(name, 1, share=share)
        status, body = cloud.api("POST", "/add-job", request, caller=caller)
        assert status == 201, body

    for i in range(3):
        submit_to(f"vision-alice-{i}", ALICE, "vision")
    submit_to("vision-bob", BOB, "vision")
    submit_to("nlp-alice", ALICE, "nlp")  # alone in its share: it starts at once
    cloud.advance(HOUR)
    starts = started_at(cloud)
    assert set(sorted(starts, key=starts.get)[:2]) == {"vision-alice-0", "nlp-alice"}
    assert "vision-bob" in starts and "vision-alice-1" not in starts
