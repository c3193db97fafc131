"""moto-backed AWS for the pipeline tests (no network, no real account)."""

import pytest
from aws_stand_ins import moto_aws


@pytest.fixture
def aws():
    with moto_aws():
        yield


@pytest.fixture
def s3(aws):
    """moto's S3 with the input bucket and the bucket ResultWriter writes to (the definition's CorpusBucket)."""
    import boto3
    from local_runner import RESULTS_BUCKET

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket="corpus")
    client.create_bucket(Bucket=RESULTS_BUCKET)
    return client


@pytest.fixture(scope="session")
def pipeline_handlers():
    import lambda_handlers

    return lambda_handlers.load("ScoreBatchFunction"), lambda_handlers.load("MergeReportFunction")
