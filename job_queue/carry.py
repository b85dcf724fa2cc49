"""Carrying a parent's results to the job that depends on it: the model a completed parent
left (its ``ModelArtifacts.S3ModelArtifacts``), named in the child's request before it
exists, and filled in when the child starts.

A user writes ``inputs={"model": train.output("model")}`` (or puts the reference in a
hyperparameter): the reference is ``s3://_queue-output_/<job>/model`` — an S3 URI, so the
SDKs pass it on untouched, with a bucket name S3 cannot have, so it can never be a real
one. The queue checks at submission that every reference names a parent the job waits for
with ``afterok`` (only a completed job leaves a model), and resolves the references when it
starts the job.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping

from job_queue.errors import InvalidRequest
from job_queue.scheduler.dependencies import Dependency, Kind

PREFIX = "s3://_queue-output_/"
OUTPUTS = ("model",)  # what a parent's output may name
_REFERENCE = re.compile(re.escape(PREFIX) + r"([a-zA-Z0-9][a-zA-Z0-9_-]{0,127})/([a-z]+)")


def output_uri(job: str, what: str = "model") -> str:
    """The reference to ``job``'s output ``what``, resolved when a job that uses it starts."""
    if what not in OUTPUTS:
        raise ValueError(f"a job's output is one of {', '.join(OUTPUTS)}, got {what!r}")
    return f"{PREFIX}{job}/{what}"


def references(request: Mapping) -> Iterator[tuple[str, str, str]]:
    """Every reference in the request: (field, parent, output)."""
    for field, text in _fields(request):
        for match in _REFERENCE.finditer(text):
            yield field, match.group(1), match.group(2)
    for field, text in _fields(request):
        if PREFIX in _REFERENCE.sub("", text):
            yield field, "", text  # a reference of no known shape


def check(request: Mapping, dependency: Dependency | None) -> None:
    """Every reference names an output of a parent the job waits for with ``afterok``;
    InvalidRequest naming the field otherwise."""
    for field, parent, what in references(request):
        if not parent or what not in OUTPUTS:
            raise InvalidRequest.of(
                field, f"{what!r} is not a job's output: use {PREFIX}<job>/model (job.output())"
            )
        if dependency is None or parent not in dependency.parents:
            raise InvalidRequest.of(field, f"uses {parent}'s {what}, and does not depend on it")
        if dependency.kind is not Kind.AFTEROK:
            raise InvalidRequest.of(
                field,
                f"uses {parent}'s {what}: only an afterok dependency is sure to have one "
                f"(it is {dependency.kind})",
            )


def resolve(request: Mapping, models: Mapping[str, str]) -> dict:
    """The request with each reference replaced by the parent's model (``models``: parent ->
    its S3ModelArtifacts)."""
    resolved = copy.deepcopy(dict(request))

    def filled(text: str) -> str:
        return _REFERENCE.sub(lambda m: models[m.group(1)], text)

    for channel in resolved.get("InputDataConfig") or ():
        source = (channel.get("DataSource") or {}).get("S3DataSource") or {}
        if isinstance(source.get("S3Uri"), str):
            source["S3Uri"] = filled(source["S3Uri"])
    hyper = resolved.get("HyperParameters") or {}
    for key, value in hyper.items():
        if isinstance(value, str):
            hyper[key] = filled(value)
    return resolved


def parents_used(request: Mapping) -> list[str]:
    """The parents whose outputs the request uses, in order of first use."""
    return list(dict.fromkeys(parent for _, parent, _ in references(request) if parent))


def _fields(request: Mapping) -> Iterator[tuple[str, str]]:
    for i, channel in enumerate(request.get("InputDataConfig") or ()):
        source = ((channel or {}).get("DataSource") or {}).get("S3DataSource") or {}
        if isinstance(source.get("S3Uri"), str):
            yield f"InputDataConfig[{i}].DataSource.S3DataSource.S3Uri", source["S3Uri"]
    for key, value in (request.get("HyperParameters") or {}).items():
        if isinstance(value, str):
            yield f"HyperParameters.{key}", value
