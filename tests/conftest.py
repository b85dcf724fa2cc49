import os

import pytest

os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "training-job-queue")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "TrainingJobQueue")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
    os.environ.setdefault(variable, "testing")

from tjq.local.cloud import LocalCloud  # noqa: E402

P5 = "ml.p5.48xlarge"
G5 = "ml.g5.xlarge"


@pytest.fixture(autouse=True)
def _environment_as_it_was():
    """Commands run in-process (``main(["local-api", ...])``) set variables such as
    POWERTOOLS_METRICS_DISABLED for their process; a later test in it must not inherit them."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


@pytest.fixture
def make_cloud():
    """LocalCloud factory; each cloud is torn down after the test."""
    clouds = []

    def make(capacity=None, **kwargs) -> LocalCloud:
        cloud = LocalCloud(capacity=capacity or {P5: 2}, **kwargs).__enter__()
        clouds.append(cloud)
        return cloud

    yield make
    for cloud in reversed(clouds):
        cloud.__exit__(None, None, None)


@pytest.fixture
def cloud(make_cloud) -> LocalCloud:
    """Two ml.p5.48xlarge; jobs run 10 minutes; a stop takes a minute."""
    return make_cloud()
