"""moto-backed AWS for the pipeline tests (no network, no real account)."""

import pytest


@pytest.fixture
def aws(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def s3(aws):
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    client.create_bucket(Bucket="corpus")
    return client


@pytest.fixture(scope="session")
def pipeline_handlers():
    from chrf_components_cli import local_lambda

    return local_lambda.load_handler("ScoreBatchFunction"), local_lambda.load_handler("MergeReportFunction")
