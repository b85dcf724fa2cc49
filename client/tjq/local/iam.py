"""The emulated training role, and the IAM policy simulator the SageMaker SDK asks about it.

SDK v3 checks a training role before it creates a job: it reads the role's trust policy
and calls ``iam:SimulatePrincipalPolicy`` for the actions a training role needs. moto
stores roles and policies but does not simulate them, so the local API answers that one
IAM operation itself, from the role's policies in moto, and passes every other on.
"""

from __future__ import annotations

import fnmatch
import json
from urllib.parse import parse_qs, unquote
from xml.sax.saxutils import escape

# What SageMaker needs to assume the role, and what a training job does with it.
TRUST_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "sagemaker.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
TRAINING_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["sagemaker:*", "s3:*", "logs:*", "cloudwatch:*", "ecr:*", "ec2:*"],
            "Resource": "*",
        }
    ],
}


def create_training_roles(iam, role_arns) -> None:
    """Create each role of ``role_arns`` in (emulated) IAM as a usable training role."""
    existing = {role["Arn"] for role in iam.list_roles()["Roles"]}
    for arn in role_arns:
        if arn in existing or ":role/" not in arn or "*" in arn:
            continue
        path_and_name = arn.split(":role/", 1)[1]
        name = path_and_name.rsplit("/", 1)[-1]
        path = "/" + path_and_name[: -len(name)] if "/" in path_and_name else "/"
        iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(TRUST_POLICY))
        iam.put_role_policy(
            RoleName=name, PolicyName="training", PolicyDocument=json.dumps(TRAINING_POLICY)
        )


def is_simulation(body: bytes) -> bool:
    """Whether an IAM query-protocol request is SimulatePrincipalPolicy."""
    return parse_qs(body.decode()).get("Action") == ["SimulatePrincipalPolicy"]


def unknown_role(iam, body: bytes) -> tuple[int, str] | None:
    """The answer to GetRole on a role the emulated account lacks (None for any other
    request): as for SimulatePrincipalPolicy on it, "cannot tell"."""
    form = parse_qs(body.decode())
    if form.get("Action") != ["GetRole"]:
        return None
    name = form.get("RoleName", [""])[0]
    try:
        iam.get_role(RoleName=name)
        return None
    except iam.exceptions.NoSuchEntityException:
        return _not_known(name)


def _not_known(role: str) -> tuple[int, str]:
    """AccessDenied, which SDK v3's role check takes as "cannot tell" and goes on, so that
    the queue's own refusal, naming the roles it allows and the flag, is what the user
    sees."""
    return 403, _error(
        "AccessDenied", f"role {role} is not one smq local-api knows (see --allowed-role)"
    )


def simulate_principal_policy(iam, body: bytes) -> tuple[int, str]:
    """Answer SimulatePrincipalPolicy (query protocol in, XML out) for a role in ``iam``."""
    form = parse_qs(body.decode())
    source = form.get("PolicySourceArn", [""])[0]
    actions = _members(form, "ActionNames")
    resources = _members(form, "ResourceArns") or ["*"]
    if ":role/" not in source:
        return 400, _error("InvalidInput", f"PolicySourceArn {source} is not a role")
    name = source.rsplit("/", 1)[-1]
    try:
        statements = _statements(iam, name)
    except iam.exceptions.NoSuchEntityException:
        return _not_known(name)
    results = "".join(
        _result(action, resource, decision(statements, action, resource))
        for action in actions
        for resource in resources
    )
    return 200, (
        '<SimulatePrincipalPolicyResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">'
        "<SimulatePrincipalPolicyResult><IsTruncated>false</IsTruncated>"
        f"<EvaluationResults>{results}</EvaluationResults></SimulatePrincipalPolicyResult>"
        "<ResponseMetadata><RequestId>local</RequestId></ResponseMetadata>"
        "</SimulatePrincipalPolicyResponse>"
    )


def decision(statements: list[dict], action: str, resource: str) -> str:
    """IAM's verdict for one action on one resource: an explicit deny wins over an allow,
    and nothing allowed is an implicit deny."""
    matching = [s for s in statements if _matches(s, "Action", action, case=False)]
    matching = [s for s in matching if _matches(s, "Resource", resource, case=True)]
    if any(s.get("Effect") == "Deny" for s in matching):
        return "explicitDeny"
    if any(s.get("Effect") == "Allow" for s in matching):
        return "allowed"
    return "implicitDeny"


def _statements(iam, role: str) -> list[dict]:
    documents = [
        iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
        for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]
    ]
    for attached in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]:
        arn = attached["PolicyArn"]
        version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        documents.append(
            iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
        )
    statements = []
    for document in documents:
        if isinstance(document, str):
            document = json.loads(unquote(document))
        found = document.get("Statement", [])
        statements.extend([found] if isinstance(found, dict) else found)
    return statements


def _matches(statement: dict, key: str, value: str, case: bool) -> bool:
    patterns = statement.get(key, [])
    patterns = [patterns] if isinstance(patterns, str) else patterns
    if not case:
        value, patterns = value.lower(), [p.lower() for p in patterns]
    return any(fnmatch.fnmatchcase(value, pattern) for pattern in patterns)


def _members(form: dict, name: str) -> list[str]:
    found = []
    index = 1
    while f"{name}.member.{index}" in form:
        found.append(form[f"{name}.member.{index}"][0])
        index += 1
    return found


def _result(action: str, resource: str, verdict: str) -> str:
    return (
        f"<member><EvalActionName>{escape(action)}</EvalActionName>"
        f"<EvalResourceName>{escape(resource)}</EvalResourceName>"
        f"<EvalDecision>{verdict}</EvalDecision></member>"
    )


def _error(code: str, message: str) -> str:
    return (
        '<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error>'
        f"<Type>Sender</Type><Code>{code}</Code><Message>{escape(message)}</Message>"
        "</Error><RequestId>local</RequestId></ErrorResponse>"
    )
