"""The SAM template: it lints, it transforms, and it says what no linter checks."""

import copy
import json
import pathlib
import tomllib

import boto3
import pytest
from cfnlint.api import ManualArgs, lint
from cfnlint.decode import decode_str
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

from job_queue import tags
from job_queue.config import ConfigError, Settings
from job_queue.routes import make_app
from job_queue.sagemaker import outside_pattern, state_change_pattern
from job_queue.scheduler import Policy
from job_queue.store.table import ATTRIBUTE_DEFINITIONS, KEY_SCHEMA, TTL_ATTRIBUTE

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATE_TEXT = (ROOT / "template.yaml").read_text()


@pytest.fixture(scope="module")
def template() -> dict:
    parsed, errors = decode_str(TEMPLATE_TEXT)
    assert not errors, errors
    return json.loads(json.dumps(parsed))


@pytest.fixture(scope="module")
def translated(template) -> dict:
    source = copy.deepcopy(template)
    # The SAM transform works offline once local code is given as an S3 location.
    source["Resources"]["QueueFunction"]["Properties"]["CodeUri"] = "s3://bucket/code.zip"
    translator = Translator(None, Parser(), boto_session=boto3.Session(region_name="us-east-1"))
    return translator.translate(source, parameter_values={}, get_managed_policy_map=dict)


def _lint(text: str) -> list[str]:
    matches = lint(text, config=ManualArgs(regions=["us-east-1"]))
    return [f"{m.rule.id} {m.message} ({m.linenumber})" for m in matches]


def test_template_passes_cfn_lint():
    assert _lint(TEMPLATE_TEXT) == []


def test_transformed_template_passes_cfn_lint(translated):
    assert _lint(json.dumps(translated)) == []


def _api(translated) -> dict:
    (api,) = [
        r for r in translated["Resources"].values() if r["Type"] == "AWS::ApiGateway::RestApi"
    ]
    return api["Properties"]


def test_api_is_private_and_only_reachable_through_the_vpc_endpoints(translated):
    api = _api(translated)
    assert api["Name"] == "training-job-queue"
    assert api["EndpointConfiguration"]["Types"] == ["PRIVATE"]
    assert api["EndpointConfiguration"]["VpcEndpointIds"] == {"Ref": "VpcEndpointIds"}
    statements = api["Body"]["x-amazon-apigateway-policy"]["Statement"]
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert deny["Condition"]["StringNotEquals"]["aws:SourceVpce"] == {"Ref": "VpcEndpointIds"}
    assert deny["Resource"] == "execute-api:/*"
    (allow,) = [s for s in statements if s["Effect"] == "Allow"]
    assert allow["Principal"] != "*"  # only this account's principals, with IAM permission
    stages = [r for r in translated["Resources"].values() if r["Type"] == "AWS::ApiGateway::Stage"]
    assert [s["Properties"]["StageName"] for s in stages] == ["prod"]


def test_every_route_requires_sigv4(translated):
    paths = _api(translated)["Body"]["paths"]
    routes = {(path, method) for path, ops in paths.items() for method in ops}
    assert routes == _handler_routes()
    for path, ops in paths.items():
        for method, op in ops.items():
            assert op["security"] == [{"AWS_IAM": []}], (path, method)
            # The caller's credentials are not used to invoke the function.
            assert "credentials" not in op["x-amazon-apigateway-integration"], (path, method)
    auth = _api(translated)["Body"]["securityDefinitions"]["AWS_IAM"]
    assert auth["x-amazon-apigateway-authtype"] == "awsSigv4"


def _handler_routes() -> set[tuple[str, str]]:
    """Every route the Lambda's API answers (the resolver keeps no public list of them):
    the deployed API must route each one to it, and no other."""
    app = make_app(None)
    routes = {(r.openapi_path, r.method.lower()) for r in app._static_routes + app._dynamic_routes}
    assert ("/jobs/{name}", "get") in routes and ("/add-job", "post") in routes
    return routes


def _event_rules(translated) -> list[dict]:
    rules = [r for r in translated["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    return [r["Properties"] for r in rules if "EventPattern" in r["Properties"]]


def test_state_change_rule_matches_only_this_queues_ended_jobs(translated):
    expected = state_change_pattern("STACK")
    expected["detail"]["Tags"][tags.QUEUE] = [{"Ref": "AWS::StackName"}]
    (rule,) = [r for r in _event_rules(translated) if r["EventPattern"] == expected]
    target = rule["Targets"][0]
    assert target["DeadLetterConfig"]["Arn"] == {"Fn::GetAtt": ["FailedEventsQueue", "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1


def test_outside_rule_matches_jobs_no_queue_started_on_the_capped_types(translated):
    expected = outside_pattern({"Ref": "CappedInstanceTypes"})
    (rule,) = [r for r in _event_rules(translated) if r["EventPattern"] == expected]
    assert rule["Targets"][0]["DeadLetterConfig"]["Arn"] == {
        "Fn::GetAtt": ["FailedEventsQueue", "Arn"]
    }


def test_queue_users_policy_denies_capped_types_outside_the_queue(template):
    policy = template["Resources"]["QueueUserPolicy"]
    assert policy["Type"] == "AWS::IAM::ManagedPolicy"
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    invoke = statements["CallTheQueue"]
    assert (invoke["Effect"], invoke["Action"]) == ("Allow", "execute-api:Invoke")
    assert "${QueueApi}/prod/*" in invoke["Resource"]["Fn::Sub"]
    deny = statements["CappedTypesOnlyThroughTheQueue"]
    assert (deny["Effect"], deny["Action"]) == ("Deny", "sagemaker:CreateTrainingJob")
    assert deny["Condition"] == {
        "ForAnyValue:StringEquals": {"sagemaker:InstanceTypes": {"Ref": "CappedInstanceTypes"}}
    }
    assert template["Outputs"]["QueueUserPolicy"]["Value"] == {"Ref": "QueueUserPolicy"}


def test_api_access_logs_name_the_caller(translated):
    (stage,) = [
        r["Properties"]
        for r in translated["Resources"].values()
        if r["Type"] == "AWS::ApiGateway::Stage"
    ]
    logging = stage["AccessLogSetting"]
    assert logging["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogs", "Arn"]}
    fields = json.loads(logging["Format"])
    assert fields["caller"] == "$context.identity.userArn"
    assert {"requestId", "path", "method", "status"} <= set(fields)
    assert stage["TracingEnabled"] is True


def test_outside_jobs_alarm_watches_the_queues_metric(template):
    alarm = template["Resources"]["OutsideJobsAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == (
        "TrainingJobQueue",
        "InstancesOutsideQueue",
    )
    assert alarm["Dimensions"] == [{"Name": "service", "Value": {"Ref": "AWS::StackName"}}]
    variables = template["Resources"]["QueueFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == alarm["Namespace"]
    assert variables["QUEUE_NAME"] == {"Ref": "AWS::StackName"}  # the metrics' service


def test_reconcile_sweep_runs_on_a_schedule(translated):
    rules = [r for r in translated["Resources"].values() if r["Type"] == "AWS::Events::Rule"]
    (schedule,) = [r for r in rules if "ScheduleExpression" in r["Properties"]]
    assert schedule["Properties"]["ScheduleExpression"] == "rate(1 minute)"


def _function_statements(translated) -> list[dict]:
    role = translated["Resources"]["QueueFunctionRole"]
    statements = [
        s for p in role["Properties"].get("Policies", []) for s in p["PolicyDocument"]["Statement"]
    ]
    # A statement under a condition (Fn::If: [condition, statement, AWS::NoValue]).
    return [s["Fn::If"][1] if "Fn::If" in s else s for s in statements]


def test_pass_role_only_for_listed_roles_and_only_to_sagemaker(translated):
    statements = _function_statements(translated)
    pass_role = [s for s in statements if "iam:PassRole" in json.dumps(s["Action"])]
    assert len(pass_role) == 1
    (statement,) = pass_role
    assert statement["Resource"] == {"Ref": "AllowedRoleArns"}
    assert "*" not in json.dumps(statement["Resource"])
    assert statement["Condition"] == {
        "StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}
    }


def test_no_wildcard_actions_and_no_sagemaker_full_access(translated):
    text = json.dumps(translated)
    assert "AmazonSageMakerFullAccess" not in text
    for statement in _function_statements(translated):
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        assert all(not a.endswith(":*") and a != "*" for a in actions), statement
    sagemaker = [s for s in _function_statements(translated) if "sagemaker:" in json.dumps(s)]
    assert sagemaker
    for statement in sagemaker:
        # Training jobs, or the training plans listed in TrainingPlanArns: nothing else.
        resource = json.dumps(statement["Resource"])
        assert "training-job/*" in resource or resource == '{"Ref": "TrainingPlanArns"}'


def test_training_plans_are_described_only_when_configured_and_only_those(template):
    statements = template["Resources"]["QueueFunction"]["Properties"]["Policies"][0]["Statement"]
    (plans,) = [
        s["Fn::If"] for s in statements if "Fn::If" in s and s["Fn::If"][0] == "HasTrainingPlans"
    ]
    _, statement, otherwise = plans
    assert statement["Action"] == "sagemaker:DescribeTrainingPlan"
    assert statement["Resource"] == {"Ref": "TrainingPlanArns"}
    assert otherwise == {"Ref": "AWS::NoValue"}
    assert template["Parameters"]["TrainingPlanArns"]["Default"] == ""


def test_warm_pools_are_ended_only_on_the_queues_own_jobs(translated):
    statements = _function_statements(translated)
    update = [s for s in statements if "sagemaker:UpdateTrainingJob" in json.dumps(s["Action"])]
    (statement,) = update
    assert statement["Action"] == "sagemaker:UpdateTrainingJob"
    assert statement["Condition"] == {
        "StringEquals": {f"aws:ResourceTag/{tags.QUEUE}": {"Ref": "AWS::StackName"}}
    }


def test_lambda_runtime(template):
    props = template["Resources"]["QueueFunction"]["Properties"]
    assert props["Runtime"] == "python3.12"
    assert props["Architectures"] == ["arm64"]
    assert props["Handler"] == "job_queue.handler.lambda_handler"
    # Overlapping invocations are safe: reserved concurrency caps them, never serialises.
    reserved = props["ReservedConcurrentExecutions"]["Fn::If"]
    assert reserved[1] == {"Ref": "ReservedConcurrency"}
    assert template["Parameters"]["ReservedConcurrency"]["Default"] > 1


def test_every_setting_is_a_parameter_whose_default_the_lambda_accepts_given_a_capacity(template):
    variables = template["Resources"]["QueueFunction"]["Properties"]["Environment"]["Variables"]
    parameters = template["Parameters"]
    settings = {
        "PREEMPTION": "Preemption",
        "BACKFILL": "Backfill",
        "MIN_RUN_SECONDS": "MinRunSeconds",
        "KEEP_ALIVE_SECONDS": "KeepAliveSeconds",
        "WARM_AFFINITY_SECONDS": "WarmAffinitySeconds",
        "FAIR_SHARE_HALF_LIFE_SECONDS": "FairShareHalfLifeSeconds",
        "FAIR_SHARE_LOOKAHEAD_SECONDS": "FairShareLookaheadSeconds",
        "FAIR_SHARE_WEIGHTS": "FairShareWeights",
        "SHARES": "Shares",
        "DEFAULT_SHARE": "DefaultShare",
        "FINISHED_RETENTION_DAYS": "FinishedRetentionDays",
        "MAX_PRIORITY": "MaxPriority",
    }
    lists = {
        "ADMIN_PRINCIPALS": "AdminPrincipals",
        "CAPPED_INSTANCE_TYPES": "CappedInstanceTypes",
        "ALLOWED_ROLE_ARNS": "AllowedRoleArns",
        "TRAINING_PLAN_ARNS": "TrainingPlanArns",
    }
    for variable, parameter in settings.items():
        assert variables[variable] == {"Ref": parameter}
    for variable, parameter in lists.items():
        assert variables[variable] == {"Fn::Join": [",", {"Ref": parameter}]}
    env = {variable: str(parameters[p]["Default"]) for variable, p in settings.items()}
    env.update({v: str(parameters[p].get("Default", "")) for v, p in lists.items()})
    # Capacity has no default: the deployer says what the queue holds.
    assert parameters["Capacity"]["Default"] == ""
    env.update(TABLE_NAME="queue", ALLOWED_ROLE_ARNS="arn:aws:iam::123456789012:role/Train")
    with pytest.raises(ConfigError, match="CAPACITY is not set"):
        Settings.from_environment({**env, "CAPACITY": ""})
    defaults = Settings.from_environment({**env, "CAPACITY": '{"ml.p5.48xlarge": 2}'})
    assert defaults.shares == () and defaults.policy == Policy()
    assert defaults.keep_alive_seconds == 0
    assert defaults.admin_principals == () and defaults.max_priority == 9999
    # The default capped types cover the default capacity.
    assert defaults.capped_instance_types == frozenset(defaults.capacity)


def test_table_matches_what_the_store_uses(template):
    table = template["Resources"]["QueueTable"]["Properties"]
    assert table["KeySchema"] == KEY_SCHEMA
    assert table["AttributeDefinitions"] == ATTRIBUTE_DEFINITIONS
    assert table["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True


def test_alarm_on_lambda_errors(template):
    alarms = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
    ]
    assert any(a["MetricName"] == "Errors" and a["Namespace"] == "AWS/Lambda" for a in alarms)


def test_outputs_the_api_url(template):
    assert "execute-api" in json.dumps(template["Outputs"]["ApiUrl"]["Value"])


def test_samconfig_deploys_without_prompts_after_guided():
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    deploy = config["default"]["deploy"]["parameters"]
    assert "CAPABILITY_IAM" in deploy["capabilities"]
    assert config["default"]["global"]["parameters"]["stack_name"]


def test_lambda_requirements_are_pinned_exactly_within_the_projects_range():
    from packaging.requirements import Requirement

    lines = (ROOT / "job_queue" / "requirements.txt").read_text().splitlines()
    pins = [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]
    assert pins and all(
        len(pin.specifier) == 1 and next(iter(pin.specifier)).operator == "==" for pin in pins
    ), "every Lambda dependency is pinned with =="
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for wanted in map(Requirement, project):
        pinned = next((p for p in pins if p.name == wanted.name), None)
        if wanted.name == "boto3":
            assert pinned is None  # the runtime's own
            continue
        assert pinned is not None, f"{wanted.name} is not pinned for the Lambda"
        version = next(iter(pinned.specifier)).version
        assert wanted.specifier.contains(version), f"{pinned} is outside {wanted}"
