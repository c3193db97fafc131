"""The system across a network boundary: a deployed stack when AWS_SAM_STACK_NAME is set, else local stand-ins.

Against a deployed stack (as aws-samples projects do) the tests read the stack's outputs and call the real API
(SigV4-signed), the real function and the real pipeline with the credentials of the standard AWS chain. Without
it they start their own stand-ins: `serve --iam` on loopback (which checks every signature with botocore, as
API Gateway's IAM authorization would) and moto for Lambda, S3, Step Functions and CloudFormation, with moto's
Lambda invocation reaching the real handlers. (test_distributions.py crosses another boundary: the package as
`pip install` delivers it, installed from `make dist`'s files into fresh environments.)
"""

import json
import os
import threading

import pytest
from support import ROOT

STACK = os.environ.get("AWS_SAM_STACK_NAME")
DEFINITION = json.loads((ROOT / "statemachine" / "corpus_pipeline.asl.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def deployed():
    """{"url", "function", "stack"} of the system under test."""
    if STACK:
        import boto3

        described = boto3.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
        outputs = {item["OutputKey"]: item["OutputValue"] for item in described["Outputs"]}
        yield {"url": outputs["ExecuteUrl"], "function": outputs["FunctionArn"], "stack": STACK, "local": False}
        return
    import aws_stand_ins
    import lambda_handlers

    from chrf_components_local.server import make_server

    template = ROOT / "template.yaml"
    handlers = [lambda_handlers.load(name) for name in ("ScoreBatchFunction", "MergeReportFunction")]
    api = lambda_handlers.load("ChrfComponentsFunction")
    with aws_stand_ins.moto_pipeline(handlers, DEFINITION, "chrf-integration", api_handler=api) as stand_in:
        server = make_server("127.0.0.1", 0, template, workers=2, iam=True, region="us-east-1")
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/tools/chrf-components/versions/1.0.0/execute"
        try:
            yield {"url": url, "function": stand_in["function"], "stack": stand_in["stack"], "local": True}
        finally:
            server.shutdown()
            server.server_close()
