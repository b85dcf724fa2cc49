"""Finding a queue by its name, as AWS Batch's ``TrainingQueue(queue_name)`` is given one.

A deployed queue's name is its CloudFormation stack's (the template's ``QUEUE_NAME``); its
API is the stack's ``ApiUrl`` output. With ``SMQ_API_URL`` set (``smq local-api`` prints it),
the queue behind that URL is used if its name matches: the API says its name
(``GET /jobs``'s ``queue``).
"""

from __future__ import annotations

import os
import re

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from tjq.api import QueueClient
from tjq.errors import NotConfigured

# A CloudFormation stack name, which is the queue's name.
QUEUE_NAME = re.compile(r"^[a-zA-Z][-a-zA-Z0-9]{0,127}$")


def check_queue_name(name: str) -> str:
    """``name`` if it can name a queue (a stack name); ValueError naming the rule if not."""
    if not QUEUE_NAME.match(name):
        raise ValueError(
            f"{name!r} is not a queue name: a queue is named by its stack, 1-128 letters, "
            "digits and hyphens, starting with a letter"
        )
    return name


def is_url(text: str) -> bool:
    return text.startswith(("https://", "http://"))


def find_queue(name: str, boto_session: boto3.Session, **client_options) -> QueueClient:
    """The API of the queue called ``name``: the one behind ``SMQ_API_URL`` if that is its
    name, else the ``ApiUrl`` of the CloudFormation stack ``name``. NotConfigured, saying
    where it looked, if neither is."""
    check_queue_name(name)
    url = os.environ.get("SMQ_API_URL")
    if url:
        client = QueueClient.from_environment(url, boto_session=boto_session, **client_options)
        actual = client.jobs(limit=1).get("queue")
        if actual == name:
            return client
        raise NotConfigured(
            f"no queue named {name!r}: SMQ_API_URL ({url}) is the queue {actual!r}. "
            f"Use TrainingQueue({actual!r}), or unset SMQ_API_URL to find the stack {name!r} "
            "in CloudFormation"
        )
    region = boto_session.region_name or "us-east-1"
    try:
        stacks = boto_session.client("cloudformation").describe_stacks(StackName=name)
    except ClientError as exc:
        raise NotConfigured(
            f"no queue named {name!r}: SMQ_API_URL is not set, and CloudFormation in {region} "
            f"has no stack {name!r} ({exc.response['Error'].get('Message', exc)})"
        ) from None
    except BotoCoreError as exc:
        raise NotConfigured(f"cannot look up the stack {name!r} in CloudFormation: {exc}") from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks["Stacks"][0].get("Outputs", [])}
    if "ApiUrl" not in outputs:
        raise NotConfigured(
            f"the stack {name!r} in {region} has no ApiUrl output: is it a training-job-queue "
            "stack, and has its deployment finished?"
        )
    return QueueClient.from_environment(
        outputs["ApiUrl"], boto_session=boto_session, **client_options
    )
