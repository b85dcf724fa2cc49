"""Every point where the Lambda can die: the calls the queue's code makes to DynamoDB,
SageMaker and EventBridge, found in its source, and which of them a running call is.

A *site* is a function of the queue's code that (directly or through its private helpers)
calls AWS: a public method of the store or the SageMaker gateway, ``queue_events.publish``,
or a private helper another object is handed (the waiting queue's page reader). A *crash
point* is a site, the operation it calls, and whether the invocation dies just before the
call or just after it (the call done, its answer lost). The universe is read from the source,
so a new write is a new point the suite must cover.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import FrameType

import botocore.session
from botocore import xform_name

import job_queue

PACKAGE = Path(job_queue.__file__).parent
# The receivers the queue's code calls AWS through (the clients it was given).
_CLIENTS = ("_db", "_client", "client")
SERVICES = ("dynamodb", "sagemaker", "events")


@dataclass(frozen=True, order=True)
class Site:
    """A function of the queue that calls AWS, and one operation it calls."""

    function: str  # module:qualname, e.g. "store.dynamodb:DynamoJobStore.claim"
    operation: str  # the client method, e.g. "transact_write_items"

    def __str__(self) -> str:
        return f"{self.function} → {self.operation}"


@dataclass(frozen=True, order=True)
class CrashPoint:
    site: Site
    when: str  # "before" | "after"

    def __str__(self) -> str:
        return f"{self.when} {self.site}"


@cache
def operations() -> frozenset[str]:
    """The client methods of the three services (snake case, as boto3 names them)."""
    session = botocore.session.get_session()
    names = set()
    for service in SERVICES:
        model = session.get_service_model(service)
        names.update(xform_name(op) for op in model.operation_names)
    return frozenset(names)


@dataclass
class _Function:
    key: str  # module:qualname
    private: bool
    direct: set[str]  # operations it calls itself
    callees: set[str]  # names of private functions it calls
    escapes: set[str]  # names of private functions it hands to others (not calls)
    start: tuple[str, int]  # (file, first line) as its code object reports them


def _functions() -> list[_Function]:
    found = []
    ops = operations()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")
        tree = ast.parse(path.read_text(), str(path))
        for qualname, node in _defs(tree):
            direct, callees, escapes = set(), set(), set()
            called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
            for sub in ast.walk(node):
                if not isinstance(sub, ast.Attribute):
                    continue
                receiver = sub.value
                name = receiver.attr if isinstance(receiver, ast.Attribute) else None
                name = receiver.id if isinstance(receiver, ast.Name) else name
                if sub.attr in ops and name in _CLIENTS:
                    direct.add(sub.attr)
                elif sub.attr.startswith("_") and not sub.attr.startswith("__"):
                    (callees if id(sub) in called else escapes).add(sub.attr)
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            private = any(part.startswith("_") for part in qualname.split("."))
            found.append(
                _Function(
                    f"{module}:{qualname}",
                    private,
                    direct,
                    callees,
                    escapes,
                    (str(path), first),
                )
            )
    return found


def _defs(tree: ast.Module, prefix: str = ""):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, node
        elif isinstance(node, ast.ClassDef):
            yield from _defs(node, prefix + node.name + ".")  # type: ignore[arg-type]


def _used_names() -> set[str]:
    """The names the queue's code refers to, other than the operations it calls on a client."""
    used = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.Attribute):
                receiver = node.value
                name = receiver.attr if isinstance(receiver, ast.Attribute) else None
                name = receiver.id if isinstance(receiver, ast.Name) else name
                if name not in _CLIENTS:
                    used.add(node.attr)
    return used


@dataclass(frozen=True)
class Universe:
    """The sites the source has, and how to tell which one a running call belongs to."""

    sites: frozenset[Site]
    by_code: dict[tuple[str, int], str]  # (file, first line) -> function key

    @property
    def points(self) -> frozenset[CrashPoint]:
        return frozenset(CrashPoint(s, w) for s in self.sites for w in ("before", "after"))

    def site_of(self, operation: str, frame: FrameType | None) -> Site:
        """The site of a call to ``operation`` being made now: the innermost site function
        on the stack from ``frame`` outwards."""
        while frame is not None:
            code = frame.f_code
            key = self.by_code.get((code.co_filename, code.co_firstlineno))
            if key is not None:
                return Site(key, operation)
            frame = frame.f_back
        return Site("(outside the queue's code)", operation)


@cache
def universe() -> Universe:
    """Every crash site of the queue's code that the handler can reach."""
    functions = _functions()
    by_name: dict[str, list[_Function]] = {}
    for function in functions:
        by_name.setdefault(function.key.rsplit(".", 1)[-1].split(":")[-1], []).append(function)

    @cache
    def reached(key: str) -> frozenset[str]:
        function = next(f for f in functions if f.key == key)
        ops = set(function.direct)
        for name in function.callees:
            for callee in by_name.get(name, []):
                if callee.private and callee.key != key:
                    ops |= reached(callee.key)
        return frozenset(ops)

    escaped = {name for f in functions for name in f.escapes}
    used = _used_names()
    sites, by_code = set(), {}
    for function in functions:
        name = function.key.rsplit(".", 1)[-1].split(":")[-1]
        is_site = not function.private or name in escaped
        ops = reached(function.key)
        # Only what the queue itself calls (a method used by tests or tools alone is not).
        if not (is_site and ops and name in used):
            continue
        by_code[function.start] = function.key
        sites.update(Site(function.key, op) for op in ops)
    return Universe(frozenset(sites), by_code)


def current_site(operation: str) -> Site:
    """The site of the AWS call being made by the caller of the caller."""
    return universe().site_of(operation, sys._getframe(2))
