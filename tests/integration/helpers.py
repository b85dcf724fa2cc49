"""Small helpers shared by the end-to-end tests."""

from tjq.local.calls import training_request
from tjq.local.cloud import LocalCloud

from job_queue.models import Job, JobState


def submit(cloud: LocalCloud, name: str, priority: int | None = None, **kwargs) -> dict:
    status, body = cloud.api("POST", "/add-job", training_request(name, priority, **kwargs))
    assert status == 201, body
    return body


def states(cloud: LocalCloud) -> dict[str, str]:
    return {row["name"]: row["state"] for row in cloud.jobs()}


def job(cloud: LocalCloud, name: str) -> dict:
    status, body = cloud.api("GET", f"/jobs/{name}")
    assert status == 200, body
    return body["job"]


def running(cloud: LocalCloud) -> set[str]:
    return {name for name, state in states(cloud).items() if state == "running"}


def load(
    cloud: LocalCloud,
    count: int,
    priority: int = 1,
    prefix: str = "queued",
    itype: str = "ml.p5.48xlarge",
    share: str | None = None,
) -> None:
    """``count`` waiting jobs straight into the table, as as many submissions would leave
    them (a deep queue in a second, not one invocation per job)."""
    seq = cloud.deps.store.next_seq()
    cloud.deps.store.bulk_load(
        [
            Job(
                name=f"{prefix}-{i:05d}",
                priority=priority,
                seq=seq + 1 + i,
                demand={itype: 1},
                state=JobState.PENDING,
                submitted_at=cloud.clock(),
                request=training_request(
                    f"{prefix}-{i:05d}", priority, instance_type=itype, share=share
                ),
                share=share,
            )
            for i in range(count)
        ]
    )  # later submissions come after them
