"""The local API's IAM: the emulated training role, and the policy simulator SDK v3 asks
before it creates a job (moto has none)."""

import json

import boto3
import pytest
from tjq.local.calls import ROLE_ARN
from tjq.local.iam import decision

ALLOW_S3 = {"Effect": "Allow", "Action": "s3:*", "Resource": "*"}
DENY_DELETE = {"Effect": "Deny", "Action": ["s3:Delete*"], "Resource": "arn:aws:s3:::prod/*"}


@pytest.mark.parametrize(
    ("action", "resource", "verdict"),
    [
        ("s3:PutObject", "*", "allowed"),
        ("S3:putobject", "*", "allowed"),  # actions match without regard to case
        ("s3:DeleteObject", "arn:aws:s3:::prod/key", "explicitDeny"),  # a deny wins
        ("s3:DeleteObject", "arn:aws:s3:::dev/key", "allowed"),
        ("ec2:DescribeVpcs", "*", "implicitDeny"),  # nothing allows it
    ],
)
def test_policy_decisions(action, resource, verdict):
    assert decision([ALLOW_S3, DENY_DELETE], action, resource) == verdict


def test_the_sdks_role_check_is_answered_from_the_roles_policies(local_env):
    iam = boto3.client("iam")
    role = iam.get_role(RoleName=ROLE_ARN.rsplit("/", 1)[1])["Role"]
    assert "sagemaker.amazonaws.com" in json.dumps(role["AssumeRolePolicyDocument"])
    checked = iam.simulate_principal_policy(
        PolicySourceArn=ROLE_ARN, ActionNames=["ecr:GetAuthorizationToken", "iam:CreateUser"]
    )["EvaluationResults"]
    assert [(r["EvalActionName"], r["EvalDecision"]) for r in checked] == [
        ("ecr:GetAuthorizationToken", "allowed"),
        ("iam:CreateUser", "implicitDeny"),
    ]
    # A role the local API does not know: "cannot tell" (AccessDenied), so that the SDK goes
    # on and the queue's refusal, naming the roles it allows, is what the user sees.
    for check in (
        lambda: iam.simulate_principal_policy(
            PolicySourceArn="arn:aws:iam::123456789012:role/Missing", ActionNames=["s3:*"]
        ),
        lambda: iam.get_role(RoleName="Missing"),
    ):
        with pytest.raises(iam.exceptions.ClientError, match=r"AccessDenied.*--allowed-role"):
            check()
    # The rest of IAM is moto's.
    assert iam.list_roles()["Roles"]
