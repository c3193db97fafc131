"""moto-backed AWS for the pipeline tests (no network, no real account)."""

import pytest
from aws_stand_ins import moto_aws


@pytest.fixture
def aws():
    with moto_aws():
        yield


@pytest.fixture
def s3(aws):
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket="corpus")
    return client


@pytest.fixture(scope="session")
def pipeline_handlers():
    import lambda_handlers

    return lambda_handlers.load("ScoreBatchFunction"), lambda_handlers.load("MergeReportFunction")
