"""`smq`'s argument types: each turns a command-line word into a value, or refuses it with
a message argparse prints (exit status 2)."""

from __future__ import annotations

import argparse


def capacity(text: str) -> tuple[str, int | str]:
    from job_queue.share_config import INSTANCE_TYPE

    itype, _, count = text.partition("=")
    if not INSTANCE_TYPE.match(itype):
        raise argparse.ArgumentTypeError(f"{itype!r} is not a SageMaker instance type")
    if count == "unlimited":
        return itype, count  # an uncapped type: its instances are never counted
    if not count.isdigit():
        raise argparse.ArgumentTypeError(
            f"expected TYPE=N or TYPE=unlimited, such as ml.p5.48xlarge=2, got {text!r}"
        )
    return itype, int(count)


def arn_pattern(text: str) -> str:
    from job_queue.access import PatternError, check_patterns

    try:
        return check_patterns([text], "--admin")[0]
    except PatternError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--admin: ")) from None


# Where `smq local-api` keeps jobs' checkpoints: the SDK's default bucket there.
LOCAL_CHECKPOINTS = "s3://sagemaker-local/checkpoints/"


def checkpoint_uri(text: str) -> str:
    from job_queue.checkpoints import check_base_uri

    try:
        return check_base_uri(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def training_plan(text: str) -> str:
    from tjq.local.emulated_plans import plans_from_options

    try:
        plans_from_options([text], 0.0, "us-east-1", "123456789012")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def sim_plan(text: str) -> str:
    from tjq.simulate.plans import parse_plan

    try:
        parse_plan(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def priority_ceiling(text: str) -> int:
    from job_queue.config import ConfigError, parse_max_priority

    try:
        return parse_max_priority(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("MAX_PRIORITY ")) from None


def whole_seconds(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected whole seconds >= 0, got {text!r}")
    return int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text}")
    return value


def queue_name(text: str) -> str:
    from tjq.queue_lookup import check_queue_name

    try:
        return check_queue_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def new_file(text: str) -> str:
    """A file to write: its folder must exist (refused before any work is done)."""
    import os

    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text}: no folder {folder} to write it in")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    return text


def port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free one)."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {text!r}")
    return int(text)
