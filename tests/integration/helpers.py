"""Small helpers shared by the end-to-end tests."""

from tjq.local.cloud import LocalCloud, training_request


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
