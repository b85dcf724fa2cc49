"""The shape of a CreateTrainingJob request, exactly as the SageMaker Python SDK builds it.

Whether the job can ever run here (capacity, quota shares) is :mod:`job_queue.admission`'s
question; this module checks only what the request itself says.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from job_queue import carry, tags, warm_pools
from job_queue.errors import BodyTooLarge, InvalidRequest, RoleNotAllowed
from job_queue.fair_share_config import FAIR_SHARE_ID
from job_queue.models import MAX_PRIORITY, MIN_PRIORITY, Checkpointing, Demand
from job_queue.scheduler.dependencies import Dependency

MAX_BODY_BYTES = 256 * 1024
# A queued job's name: a SageMaker job name, or an AWS Batch job name (which may have
# underscores and up to 128 characters; the queue derives the SageMaker name from it).
JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$")
REQUIRED_FIELDS = (
    "TrainingJobName",
    "RoleArn",
    "AlgorithmSpecification",
    "OutputDataConfig",
    "StoppingCondition",
)


@dataclass(frozen=True)
class Submission:
    """A request of a valid shape: what the queue needs to know (its tags parsed once,
    here), and the request to send."""

    name: str
    priority: int
    demand: Demand
    request: Mapping
    request_hash: str
    share: str | None = None  # the ``share`` tag, if any
    checkpoint: Checkpointing | None = None  # the ``checkpoint`` tag, if any
    fair_share_id: str | None = None  # the ``fair-share-id`` tag, if any
    groups: bool = False  # the demand comes from ResourceConfig.InstanceGroups
    dependency: Dependency | None = None  # the ``depends-on`` tag, if any

    @property
    def instance_fields(self) -> tuple[str, str]:
        """The request fields that say which instances, and how many, the job needs."""
        if self.groups:
            return ("ResourceConfig.InstanceGroups", "ResourceConfig.InstanceGroups")
        return ("ResourceConfig.InstanceType", "ResourceConfig.InstanceCount")


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


def validate_submission(request: dict, allowed_roles: frozenset[str]) -> Submission:
    """Check a CreateTrainingJob request's shape and role; InvalidRequest names the field."""
    for name in REQUIRED_FIELDS:
        if name not in request:
            raise InvalidRequest(f"{name} is required", name)
    for name in ("AlgorithmSpecification", "OutputDataConfig", "StoppingCondition"):
        if not isinstance(request[name], dict):
            raise InvalidRequest.must(name, "be an object")
    max_runtime = request["StoppingCondition"].get("MaxRuntimeInSeconds")
    if max_runtime is not None and (
        isinstance(max_runtime, bool) or not isinstance(max_runtime, int) or max_runtime < 1
    ):
        raise InvalidRequest.must("StoppingCondition.MaxRuntimeInSeconds", "be a positive integer")
    if "ResourceConfig" not in request:
        raise InvalidRequest("ResourceConfig is required", "ResourceConfig")
    job_name = request["TrainingJobName"]
    if not isinstance(job_name, str) or not JOB_NAME_PATTERN.match(job_name):
        raise InvalidRequest.of(
            "TrainingJobName",
            f"{job_name!r} is not a valid job name: a SageMaker job name (1-63 letters, "
            "digits and hyphens) or an AWS Batch one (1-128 letters, digits, hyphens and "
            "underscores), starting with a letter or digit",
        )
    role = request["RoleArn"]
    if not isinstance(role, str) or not role.startswith("arn:"):
        raise InvalidRequest.must("RoleArn", "be an IAM role ARN")
    if role not in allowed_roles:
        raise RoleNotAllowed(
            f"RoleArn {role} is not one this queue may pass to SageMaker; it allows "
            f"{', '.join(sorted(allowed_roles)) or 'none'} (the AllowedRoleArns setting; "
            "`smq local-api --allowed-role ARN` on your machine)"
        )
    demand = instance_demand(request["ResourceConfig"])
    if "TrainingPlanArn" in request["ResourceConfig"]:
        raise InvalidRequest.of(
            "ResourceConfig.TrainingPlanArn",
            "the queue chooses the training plan a job runs on; leave it out (the queue's "
            "capacity names the plans)",
        )
    warm_pools.check_keep_alive(request)
    priority = priority_of(request.get("Tags"))
    for name, parse in (
        (tags.MAX_PREEMPTIONS, tags.max_preemptions),
        (tags.MAX_TOTAL_RUNTIME, tags.max_total_runtime),
    ):
        try:
            parse(request.get("Tags"))
        except ValueError as exc:
            raise InvalidRequest.must(f"Tags.{name}", str(exc)) from None
    dependency = dependency_of(request.get("Tags"), job_name)
    carry.check(request, dependency)  # a parent's output it uses is one it waits for
    return Submission(
        name=job_name,
        priority=priority,
        share=share_of(request.get("Tags")),
        checkpoint=checkpoint_of(request),
        fair_share_id=fair_share_id_of(request.get("Tags")),
        demand=demand,
        request=request,
        request_hash=hashlib.sha256(
            json.dumps(request, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest(),
        groups=request["ResourceConfig"].get("InstanceGroups") is not None,
        dependency=dependency,
    )


def instance_demand(resource_config: object) -> dict[str, int]:
    """Instances per type that a job holds: InstanceCount of InstanceType, or all groups."""
    if not isinstance(resource_config, dict):
        raise InvalidRequest.must("ResourceConfig", "be an object")
    groups = resource_config.get("InstanceGroups")
    if groups is not None:
        if not isinstance(groups, list) or not groups:
            raise InvalidRequest.must("ResourceConfig.InstanceGroups", "be a non-empty list")
        demand: dict[str, int] = {}
        for i, group in enumerate(groups):
            where = f"ResourceConfig.InstanceGroups[{i}]"
            if not isinstance(group, dict):
                raise InvalidRequest.must(where, "be an object")
            itype, count = _type_and_count(group, where)
            demand[itype] = demand.get(itype, 0) + count
        return demand
    itype, count = _type_and_count(resource_config, "ResourceConfig")
    return {itype: count}


def priority_of(request_tags: object) -> int:
    """The integer in the ``priority`` tag; 0 without one."""
    if request_tags is None:
        return 0
    if not isinstance(request_tags, list) or not all(
        isinstance(t, dict) and isinstance(t.get("Key"), str) for t in request_tags
    ):
        raise InvalidRequest.must("Tags", "be a list of {Key, Value} objects")
    value = tags.value(request_tags, tags.PRIORITY)
    if value is None:
        return 0
    return parse_priority(value, field=f"Tags.{tags.PRIORITY}")


def share_of(request_tags: object) -> str | None:
    """The ``share`` tag's value, if there is one (``priority_of`` has checked the tags)."""
    if not any(t["Key"] == tags.SHARE for t in request_tags or ()):
        return None
    value = tags.value(request_tags, tags.SHARE)
    if not isinstance(value, str) or not value:
        raise InvalidRequest.must(f"Tags.{tags.SHARE}", f"be a share's name, got {value!r}")
    return value


def fair_share_id_of(request_tags: object) -> str | None:
    """The ``fair-share-id`` tag's value, if there is one: a project's name."""
    if not any(t["Key"] == tags.FAIR_SHARE_ID for t in request_tags or ()):
        return None
    value = tags.value(request_tags, tags.FAIR_SHARE_ID)
    if not isinstance(value, str) or not FAIR_SHARE_ID.match(value):
        raise InvalidRequest.must(
            f"Tags.{tags.FAIR_SHARE_ID}",
            "be letters, digits and _.:/=+@-, up to 128, starting with a letter or digit, "
            f"got {value!r}",
        )
    return value


def dependency_of(request_tags: object, job_name: str) -> Dependency | None:
    """The ``depends-on`` tag: the queue jobs this one waits for, and how (``priority_of``
    has checked the tags). Whether the parents exist is the queue's to check."""
    field = f"Tags.{tags.DEPENDS_ON}"
    if not any(t["Key"] == tags.DEPENDS_ON for t in request_tags or ()):
        return None
    try:
        dependency = Dependency.parse(tags.value(request_tags, tags.DEPENDS_ON))
    except ValueError as exc:
        raise InvalidRequest.must(field, str(exc)) from None
    bad = [name for name in dependency.parents if not JOB_NAME_PATTERN.match(name)]
    if bad:
        raise InvalidRequest.must(field, f"name queue jobs, got {bad[0]!r}")
    if job_name in dependency.parents:
        raise InvalidRequest.must(field, f"name other jobs than {job_name} itself")
    return dependency


def checkpoint_of(request: Mapping) -> Checkpointing | None:
    """The ``checkpoint`` tag (``on-stop`` or seconds), if any, and a CheckpointConfig of
    the right shape (``priority_of`` has checked the tags)."""
    config = request.get("CheckpointConfig")
    if config is not None and not (
        isinstance(config, dict) and str(config.get("S3Uri", "")).startswith("s3://")
    ):
        raise InvalidRequest.must("CheckpointConfig.S3Uri", "be an s3:// URI")
    if not any(t["Key"] == tags.CHECKPOINT for t in request.get("Tags") or ()):
        return None
    try:
        return Checkpointing.parse(tags.value(request.get("Tags"), tags.CHECKPOINT))
    except ValueError as exc:
        raise InvalidRequest.must(
            f"Tags.{tags.CHECKPOINT}", str(exc).removeprefix("must ")
        ) from None


def parse_priority(value: object, field: str = "priority") -> int:
    """An integer priority from an int or a string of one, within the allowed range."""
    if isinstance(value, bool):
        value = None
    try:
        number = int(value) if isinstance(value, int | str) else None
    except ValueError:
        number = None
    if number is None:
        raise InvalidRequest.must(field, f"be an integer, got {value!r}")
    if not MIN_PRIORITY <= number <= MAX_PRIORITY:
        raise InvalidRequest.must(field, f"be between {MIN_PRIORITY} and {MAX_PRIORITY}")
    return number


def _type_and_count(config: dict, where: str) -> tuple[str, int]:
    itype = config.get("InstanceType")
    count = config.get("InstanceCount")
    if itype is None:
        raise InvalidRequest(
            f"{where}.InstanceType is required (e.g. ml.p5.48xlarge)",
            f"{where}.InstanceType",
            "is required (e.g. ml.p5.48xlarge)",
        )
    if not isinstance(itype, str) or not itype.startswith("ml."):
        raise InvalidRequest.of(
            f"{where}.InstanceType", f"{itype!r} is not a SageMaker instance type (ml.*)"
        )
    if isinstance(count, bool) or not isinstance(count, int):
        raise InvalidRequest.must(f"{where}.InstanceCount", "be a positive integer")
    if count < 1:
        raise InvalidRequest.of(
            f"{where}.InstanceCount", f"{count} is not a positive number of instances"
        )
    return itype, count
