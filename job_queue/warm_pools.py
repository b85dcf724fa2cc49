"""SageMaker managed warm pools, as the queue reads them from a CreateTrainingJob request.

A job whose ``ResourceConfig.KeepAlivePeriodInSeconds`` is above 0 leaves its instances in a
warm pool when it completes, is stopped after its cluster started, or fails with an
algorithm or client error — if the account's warm-pool quota allows (SageMaker says; the
queue reads ``WarmPoolStatus``). A later job starts on the pool only if these all match:
RoleArn; ResourceConfig's InstanceType, InstanceCount, VolumeSizeInGB and VolumeKmsKeyId;
VpcConfig's Subnets and SecurityGroupIds; EnableInterContainerTrafficEncryption;
EnableNetworkIsolation. No warm pools with InstanceGroups or managed spot training.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from job_queue.errors import InvalidRequest

KEEP_ALIVE = "KeepAlivePeriodInSeconds"
_FIELD = f"ResourceConfig.{KEEP_ALIVE}"


def can_keep(request: Mapping) -> bool:
    """Whether SageMaker can keep a pool for this job at all."""
    resource = request.get("ResourceConfig") or {}
    return not resource.get("InstanceGroups") and not request.get("EnableManagedSpotTraining")


def keep_alive(request: Mapping) -> int:
    """Seconds the job's instances stay in a pool after it ends (0: no pool)."""
    return int((request.get("ResourceConfig") or {}).get(KEEP_ALIVE) or 0)


def check_keep_alive(request: Mapping) -> None:
    """InvalidRequest (naming the field) for a keep-alive SageMaker would refuse."""
    resource = request.get("ResourceConfig") or {}
    if KEEP_ALIVE not in resource:
        return
    value = resource[KEEP_ALIVE]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequest.must(_FIELD, f"be a whole number of seconds, 0 or more, got {value!r}")
    if value and resource.get("InstanceGroups"):
        raise InvalidRequest.of(_FIELD, "SageMaker keeps no warm pools with InstanceGroups")
    if value and request.get("EnableManagedSpotTraining"):
        raise InvalidRequest.of(
            _FIELD, "SageMaker keeps no warm pools with EnableManagedSpotTraining"
        )


def with_default_keep_alive(request: Mapping, seconds: int) -> Mapping:
    """``request`` with the queue's default keep-alive, if it sets none and can have one."""
    resource = request.get("ResourceConfig") or {}
    if not seconds or KEEP_ALIVE in resource or not can_keep(request):
        return request
    return {**request, "ResourceConfig": {**resource, KEEP_ALIVE: seconds}}


def warm_key(request: Mapping) -> str | None:
    """The configuration a pool is matched on, as a short digest (None: it can use none)."""
    if not can_keep(request):
        return None
    resource = request.get("ResourceConfig") or {}
    vpc = request.get("VpcConfig") or {}
    matched = {
        "role": request.get("RoleArn"),
        "type": resource.get("InstanceType"),
        "count": resource.get("InstanceCount"),
        "volume": resource.get("VolumeSizeInGB"),
        "kms": resource.get("VolumeKmsKeyId"),
        "subnets": sorted(vpc.get("Subnets") or []),
        "security_groups": sorted(vpc.get("SecurityGroupIds") or []),
        "encryption": bool(request.get("EnableInterContainerTrafficEncryption")),
        "isolation": bool(request.get("EnableNetworkIsolation")),
    }
    text = json.dumps(matched, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
