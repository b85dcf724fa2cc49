"""Managed warm pools as the emulated SageMaker keeps them (see :mod:`tjq.local.sagemaker`).

SageMaker's own rules, written out here as the emulator's model of the service (the queue
reads pools through the API and does not share this code):

* a job with ``KeepAlivePeriodInSeconds`` > 0 that completes, is stopped, or fails for its
  own reasons keeps its instances Available for that long from its end — if the job can
  have a pool (no InstanceGroups, no managed spot training) and the per-type warm-pool
  quota has room;
* a later job reuses the oldest Available pool whose job matches it on RoleArn, instance type
  and count, volume size and KMS key, VPC subnets and security groups, inter-container
  encryption and network isolation: the old job's pool is Reused, the new one's InUse;
* an Available pool that reaches its expiry, or whose keep-alive is updated to 0, is
  Terminated.
"""

from __future__ import annotations

from collections.abc import Iterable

KEEP_ALIVE = "KeepAlivePeriodInSeconds"
AVAILABLE, IN_USE, REUSED, TERMINATED = "Available", "InUse", "Reused", "Terminated"


def can_keep(request: dict) -> bool:
    resource = request.get("ResourceConfig") or {}
    return not resource.get("InstanceGroups") and not request.get("EnableManagedSpotTraining")


def keep(job, jobs: Iterable, quota: dict[str, int] | None) -> None:
    """At ``job``'s end: keep its instances as a pool, if it may (sets ``job.pool``)."""
    if job.pool is not None and job.pool != IN_USE:
        return
    kept = job.keep_alive and can_keep(job.request) and _room(job, jobs, quota)
    if not kept:
        job.pool = TERMINATED if job.pool == IN_USE else None
        return
    job.pool = AVAILABLE
    job.pool_expires_at = job.ended_at + job.keep_alive


def matching(pools: Iterable, request: dict, now: float):
    """The oldest of the Available ``pools`` (oldest first) that ``request`` can start on."""
    if not can_keep(request):
        return None
    return next(
        (job for job in pools if job.pool_expires_at > now and _match(job.request, request)),
        None,
    )


def status(job, now: float) -> dict:
    """``WarmPoolStatus`` of a job that has (or had) a pool."""
    retained = 0.0
    if job.ended_at is not None and job.pool != IN_USE:
        until = now if job.pool == AVAILABLE else min(job.pool_expires_at or now, now)
        until = min(until, job.reused_at) if job.reused_at is not None else until
        retained = max(0.0, until - job.ended_at)
    return {
        "Status": job.pool,
        "ResourceRetainedBillableTimeInSeconds": int(retained),
        **({"ReusedByJob": job.reused_by} if job.reused_by else {}),
    }


def _room(job, jobs: Iterable, quota: dict[str, int] | None) -> bool:
    if quota is None:
        return True
    jobs = list(jobs)
    for itype, count in job.demand.items():
        kept = sum(other.demand.get(itype, 0) for other in jobs if other.pool == AVAILABLE)
        if kept + count > quota.get(itype, 0):
            return False
    return True


def _match(earlier: dict, later: dict) -> bool:
    def resource(request: dict, key: str):
        return (request.get("ResourceConfig") or {}).get(key)

    def vpc(request: dict, key: str):
        return sorted((request.get("VpcConfig") or {}).get(key) or [])

    return (
        earlier.get("RoleArn") == later.get("RoleArn")
        and all(
            resource(earlier, key) == resource(later, key)
            for key in ("InstanceType", "InstanceCount", "VolumeSizeInGB", "VolumeKmsKeyId")
        )
        and all(vpc(earlier, key) == vpc(later, key) for key in ("Subnets", "SecurityGroupIds"))
        and all(
            bool(earlier.get(key)) == bool(later.get(key))
            for key in ("EnableInterContainerTrafficEncryption", "EnableNetworkIsolation")
        )
    )
