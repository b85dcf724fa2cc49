"""The tags the queue reads and writes, and the one way to add tags to a request.

A user sets these tags on a job (the SDK's ``tags=``, or ``QueueTrainingJobSession``):

* ``priority`` — an integer, higher runs first (0 without one);
* ``share`` — the job's quota share, when the queue has shares;
* ``checkpoint`` — how it saves its progress: ``on-stop`` (when SageMaker stops it) or an
  interval in seconds; the queue then preempts the job that would lose least first;
* ``max-preemptions`` — how often it may be preempted and requeued (a whole number; one
  preemption more fails it), overriding the queue's ``MaxPreemptions``;
* ``depends-on`` — the queue jobs it waits for, and how: ``afterok:job-a,job-b`` (kinds
  ``after``, ``afterok``, ``afternotok``; names apart by commas or spaces). The queue keeps
  it and leaves it out of the SageMaker job's tags (a comma is not valid in one);
* ``fair-share-id`` — whom the job's use is charged to when fair share is on (a project's
  name); without it, the caller's identity (a role session counts as its role).

The queue adds three to every SageMaker job it starts, so that a state-change event finds its
way back to the queued job (and the EventBridge rule matches only this queue's jobs):
``training-job-queue:queue``, ``training-job-queue:job`` and ``training-job-queue:attempt``.

Tags are CreateTrainingJob's list of ``{"Key": ..., "Value": ...}``; a key given twice counts
by its last value, as SageMaker keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PRIORITY = "priority"
SHARE = "share"
CHECKPOINT = "checkpoint"
FAIR_SHARE_ID = "fair-share-id"
MAX_PREEMPTIONS = "max-preemptions"
MAX_TOTAL_RUNTIME = "max-total-runtime"
DEPENDS_ON = "depends-on"
QUEUE = "training-job-queue:queue"
JOB = "training-job-queue:job"
ATTEMPT = "training-job-queue:attempt"


def value(tags: Iterable[Mapping] | None, key: str) -> object | None:
    """The value of the last tag named ``key``, or None."""
    found = None
    for tag in tags or ():
        if tag.get("Key") == key:
            found = tag.get("Value")
    return found


def max_preemptions(tags: Iterable[Mapping] | None) -> int | None:
    """The ``max-preemptions`` tag as a number (None: not set). ValueError for anything but a
    whole number from 0."""
    found = value(tags, MAX_PREEMPTIONS)
    if found is None:
        return None
    text = str(found).strip()
    if not text.isdigit():
        raise ValueError(f"be a whole number from 0, got {found!r}")
    return int(text)


def max_total_runtime(tags: Iterable[Mapping] | None) -> int | None:
    """The ``max-total-runtime`` tag in seconds (None: not set). ValueError for anything but
    a whole number above 0."""
    found = value(tags, MAX_TOTAL_RUNTIME)
    if found is None:
        return None
    text = str(found).strip()
    if not text.isdigit() or int(text) == 0:
        raise ValueError(f"be a whole number of seconds above 0, got {found!r}")
    return int(text)


def with_tags(
    tags: Iterable[Mapping] | None, added: Mapping[str, str], *, replace: bool
) -> list[dict]:
    """``tags`` with the tags in ``added``, appended in their order.

    ``replace=True`` sets them (a tag of the same key is removed first): an explicit choice,
    such as ``smq submit --priority`` or the queue's own tags. ``replace=False`` adds only
    those the tags lack: a default, such as ``QueueTrainingJobSession(priority=...)``.
    """
    tags = [dict(tag) for tag in tags or ()]
    present = {tag.get("Key") for tag in tags}
    if replace:
        tags = [tag for tag in tags if tag.get("Key") not in added]
    new = {k: v for k, v in added.items() if replace or k not in present}
    return tags + [{"Key": k, "Value": v} for k, v in new.items()]


def for_sagemaker(tags: Iterable[Mapping] | None) -> list[dict]:
    """The request's tags as SageMaker gets them: without those only the queue reads and
    SageMaker would refuse (``depends-on``)."""
    return [dict(tag) for tag in tags or () if tag.get("Key") != DEPENDS_ON]


def queue_tags(queue_name: str, job_name: str, attempt: int) -> dict[str, str]:
    """The tags the queue puts on the SageMaker job of a job's ``attempt``-th start."""
    return {QUEUE: queue_name, JOB: job_name, ATTEMPT: str(attempt)}


def queued_job(tags: Mapping[str, str], queue_name: str) -> str | None:
    """The queued job a SageMaker job was started for, if ``queue_name`` started it
    (``tags`` as a state-change event carries them: a dict)."""
    if tags.get(QUEUE) != queue_name:
        return None
    return tags.get(JOB) or None
