"""Validation of a CreateTrainingJob request, exactly as the SageMaker Python SDK builds it."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from job_queue.errors import BodyTooLarge, InvalidRequest, RoleNotAllowed
from job_queue.models import Demand

MAX_BODY_BYTES = 256 * 1024
PRIORITY_TAG = "priority"
SHARE_TAG = "share"
MIN_PRIORITY, MAX_PRIORITY = -9999, 9999
JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
REQUIRED_FIELDS = (
    "TrainingJobName",
    "RoleArn",
    "AlgorithmSpecification",
    "OutputDataConfig",
    "StoppingCondition",
)


@dataclass(frozen=True)
class Submission:
    """A validated request: what the queue needs to know, and the request to send later."""

    name: str
    priority: int
    demand: Demand
    request: Mapping
    request_hash: str
    share: str | None = None  # the ``share`` tag, if any


def parse_json(body: str | bytes | None) -> object:
    """The JSON value of an API body, or InvalidRequest / BodyTooLarge."""
    raw = body.encode() if isinstance(body, str) else (body or b"")
    if len(raw) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise InvalidRequest(f"body is not valid JSON: {exc}") from exc


def parse_body(body: str | bytes | None) -> dict:
    """The JSON object in an API body, or InvalidRequest / BodyTooLarge."""
    value = parse_json(body)
    if not isinstance(value, dict):
        raise InvalidRequest("body must be a JSON object (a CreateTrainingJob request)")
    return value


def validate_submission(
    request: dict, capacity: Mapping[str, int], allowed_roles: frozenset[str]
) -> Submission:
    """Check a CreateTrainingJob request against the queue's rules and configuration."""
    for name in REQUIRED_FIELDS:
        if name not in request:
            raise InvalidRequest(f"{name} is required")
    for name in ("AlgorithmSpecification", "OutputDataConfig", "StoppingCondition"):
        if not isinstance(request[name], dict):
            raise InvalidRequest(f"{name} must be an object")
    max_runtime = request["StoppingCondition"].get("MaxRuntimeInSeconds")
    if max_runtime is not None and (
        isinstance(max_runtime, bool) or not isinstance(max_runtime, int) or max_runtime < 1
    ):
        raise InvalidRequest("StoppingCondition.MaxRuntimeInSeconds must be a positive integer")
    if "ResourceConfig" not in request:
        raise InvalidRequest("ResourceConfig is required")
    job_name = request["TrainingJobName"]
    if not isinstance(job_name, str) or not JOB_NAME_PATTERN.match(job_name):
        raise InvalidRequest(
            f"TrainingJobName {job_name!r} is not a valid SageMaker job name: 1-63 letters, "
            "digits and hyphens, starting and ending with a letter or digit"
        )
    role = request["RoleArn"]
    if not isinstance(role, str) or not role.startswith("arn:"):
        raise InvalidRequest("RoleArn must be an IAM role ARN")
    if role not in allowed_roles:
        raise RoleNotAllowed(f"RoleArn {role} is not one this queue may pass to SageMaker")
    demand = instance_demand(request["ResourceConfig"])
    for itype, count in demand.items():
        if itype not in capacity:
            configured = ", ".join(sorted(capacity)) or "none"
            raise InvalidRequest(
                f"ResourceConfig: instance type {itype} has no capacity in this queue "
                f"(configured: {configured})"
            )
        if count > capacity[itype]:
            raise InvalidRequest(
                f"ResourceConfig: the job needs {count} x {itype} but the queue's capacity "
                f"is {capacity[itype]}; it could never start"
            )
    return Submission(
        name=job_name,
        priority=priority_of(request.get("Tags")),
        share=share_of(request.get("Tags")),
        demand=demand,
        request=request,
        request_hash=hashlib.sha256(
            json.dumps(request, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest(),
    )


def instance_demand(resource_config: object) -> dict[str, int]:
    """Instances per type that a job holds: InstanceCount of InstanceType, or all groups."""
    if not isinstance(resource_config, dict):
        raise InvalidRequest("ResourceConfig must be an object")
    if resource_config.get("KeepAlivePeriodInSeconds"):
        raise InvalidRequest(
            "ResourceConfig.KeepAlivePeriodInSeconds: warm pools keep instances after a job "
            "ends, outside the queue's capacity; submit without keep_alive_period_in_seconds"
        )
    groups = resource_config.get("InstanceGroups")
    if groups is not None:
        if not isinstance(groups, list) or not groups:
            raise InvalidRequest("ResourceConfig.InstanceGroups must be a non-empty list")
        demand: dict[str, int] = {}
        for i, group in enumerate(groups):
            where = f"ResourceConfig.InstanceGroups[{i}]"
            if not isinstance(group, dict):
                raise InvalidRequest(f"{where} must be an object")
            itype, count = _type_and_count(group, where)
            demand[itype] = demand.get(itype, 0) + count
        return demand
    itype, count = _type_and_count(resource_config, "ResourceConfig")
    return {itype: count}


def priority_of(tags: object) -> int:
    """The integer in the ``priority`` tag; 0 without one."""
    if tags is None:
        return 0
    if not isinstance(tags, list) or not all(
        isinstance(t, dict) and isinstance(t.get("Key"), str) for t in tags
    ):
        raise InvalidRequest("Tags must be a list of {Key, Value} objects")
    values = [t.get("Value") for t in tags if t["Key"] == PRIORITY_TAG]
    if not values:
        return 0
    return parse_priority(values[-1], field="Tags.priority")


def share_of(tags: object) -> str | None:
    """The ``share`` tag's value, if there is one (``priority_of`` has checked the tags)."""
    values = [t.get("Value") for t in tags or () if t["Key"] == SHARE_TAG]
    if not values:
        return None
    if not isinstance(values[-1], str) or not values[-1]:
        raise InvalidRequest(f"Tags.share must be a share's name, got {values[-1]!r}")
    return values[-1]


def parse_priority(value: object, field: str = "priority") -> int:
    """An integer priority from an int or a string of one, within the allowed range."""
    if isinstance(value, bool):
        value = None
    try:
        number = int(value) if isinstance(value, int | str) else None
    except ValueError:
        number = None
    if number is None:
        raise InvalidRequest(f"{field} must be an integer, got {value!r}")
    if not MIN_PRIORITY <= number <= MAX_PRIORITY:
        raise InvalidRequest(f"{field} must be between {MIN_PRIORITY} and {MAX_PRIORITY}")
    return number


def _type_and_count(config: dict, where: str) -> tuple[str, int]:
    itype = config.get("InstanceType")
    count = config.get("InstanceCount")
    if not isinstance(itype, str) or not itype.startswith("ml."):
        raise InvalidRequest(f"{where}.InstanceType is required (e.g. ml.p5.48xlarge)")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidRequest(f"{where}.InstanceCount must be a positive integer")
    return itype, count
