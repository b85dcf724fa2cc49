"""Run the queue on one machine: moto for DynamoDB, a realistic SageMaker of our own, and the
real Lambda handler, on a simulated clock. See :class:`LocalCloud`."""

from tjq.local.clock import SimClock
from tjq.local.cloud import LocalCloud
from tjq.local.sagemaker import LocalSageMaker

__all__ = ["LocalCloud", "LocalSageMaker", "SimClock"]
