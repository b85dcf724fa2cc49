"""training-job-queue: a priority queue with preemption in front of SageMaker training jobs.

The Lambda entry point is ``job_queue.handler.lambda_handler``. The layers, innermost first:
``scheduler`` (pure decisions), ``store`` (DynamoDB), ``sagemaker`` (the gateway),
``service`` (use cases), ``routes`` and ``handler`` (wiring).
"""
