"""AWS for tests, without network or account: moto, with the few things moto lacks filled in.

* DescribeMapRun for the Map Runs the local runner ran in this process (RUNNER_MAP_RUNS, tests/pipeline/local_runner.py)
  and for those a test records by hand (MAP_RUNS).
* moto's Step Functions item reader reads JSON Lines too (the pipeline's input format), not just JSON arrays.
"""

import contextlib
import json
import os
from unittest import mock

FAKE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}
MAP_RUNS: dict[str, dict] = {}  # what DescribeMapRun reports for Map Runs a test made up


def _runner_map_runs():
    from chrf_components_local.states import MapRuns

    return MapRuns()


RUNNER_MAP_RUNS = _runner_map_runs()  # the Map Runs of the local runner's executions in this process


def _reads_json_lines(original):
    """moto's JSON item reader, taught JSON Lines: an object that is not one JSON array is read line by line."""

    def _eval_body(self, env):
        resource_value = env.stack[-2]  # below the reader config, as moto's reader pops them
        try:
            parsed = json.loads(resource_value)
        except ValueError:
            parsed = None
        if not isinstance(parsed, list):
            env.stack[-2] = json.dumps([json.loads(line) for line in resource_value.split("\n") if line.strip()])
        return original(self, env)

    return _eval_body


@contextlib.contextmanager
def moto_aws(**config):
    """moto's AWS with fake credentials in the environment."""
    from moto import mock_aws
    from moto.stepfunctions.models import StepFunctionBackend
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_output_transformer.transformer_json import (  # noqa: E501
        ResourceOutputTransformerJson,
    )

    def describe_map_run(self, map_run_arn):
        return MAP_RUNS.get(map_run_arn) or RUNNER_MAP_RUNS.describe(map_run_arn)

    with mock.patch.dict(os.environ, FAKE_ENVIRONMENT), \
            mock.patch.object(StepFunctionBackend, "describe_map_run", describe_map_run), \
            mock.patch.object(ResourceOutputTransformerJson, "_eval_body",
                              _reads_json_lines(ResourceOutputTransformerJson._eval_body)), \
            mock_aws(config=config or None):
        yield


def moto_variant(definition):
    """The corpus pipeline's definition as moto's engine can run it.

    moto rejects ItemBatcher, the JSONL input type, EXPRESS child executions and ToleratedFailurePercentage, and
    writes ResultWriter manifests without result files. So: one-item batches built by the ItemSelector (the
    function sees the batch shape it sees on AWS), the JSON reader (taught JSON Lines above), standard children,
    results inline (the merge accepts the Map's output list as well).
    """
    import copy

    variant = copy.deepcopy(definition)
    state = variant["States"]["ScoreSegments"]
    state["ItemReader"]["ReaderConfig"] = {"InputType": "JSON", "MaxItems": 100000}
    del state["ItemBatcher"], state["ToleratedFailurePercentage"], state["ResultWriter"]
    state["ItemProcessor"]["ProcessorConfig"]["ExecutionType"] = "STANDARD"
    # One child at a time: moto runs children as threads of one process, and Powertools Metrics keeps one
    # metric set per process (as Lambda runs one invocation per process), so parallel children would interleave.
    state["MaxConcurrency"] = 1
    state["ItemSelector"] = {
        "BatchInput": {"settings.$": "$.settings"},
        "Items": [{"line.$": "$$.Map.Item.Index", "item.$": "$$.Map.Item.Value"}],
    }
    return variant


STACK_TEMPLATE = """{"Resources": {"Marker": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "marker"}}},
 "Parameters": {"InputPrefix": {"Type": "String", "Default": "inputs/"},
                "ReportPrefix": {"Type": "String", "Default": "reports/"}},
 "Outputs": {"CorpusBucketName": {"Value": "corpus"}, "CorpusPipelineArn": {"Value": "%s"}}}"""


@contextlib.contextmanager
def moto_pipeline(handlers, definition, stack_name="chrf-test", api_handler=None):
    """A deployed-looking stack in moto: the corpus bucket, the state machine (the moto variant) whose Lambda
    tasks reach the real pipeline handlers, the API function (when given) reaching the real API handler, and a
    CloudFormation stack whose outputs name them."""
    import io
    import zipfile

    import boto3
    import lambda_handlers
    from moto.awslambda.models import LambdaFunction

    by_name = dict(zip(("score-batch", "merge-report"), handlers))
    if api_handler is not None:
        by_name["chrf-components-api"] = api_handler

    def invoke_real_handler(function, event=None):
        import sys

        payload = json.loads(event) if isinstance(event, str) else event
        # The function's own output (logs, metrics) goes where Lambda sends it: not to the caller.
        with contextlib.redirect_stdout(sys.stderr):
            try:
                return json.dumps(by_name[function.function_name](payload, lambda_handlers.LambdaContext())), False, ""
            except Exception as error:
                return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}), True, ""

    with moto_aws(stepfunctions={"execute_state_machine": True}), \
            mock.patch.object(LambdaFunction, "_invoke_lambda", invoke_real_handler):
        role = boto3.client("iam").create_role(RoleName="pipeline", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("placeholder.py", "")
        arns = {
            name: boto3.client("lambda").create_function(
                FunctionName=name, Runtime="python3.13", Role=role, Handler="placeholder.handler",
                Code={"ZipFile": archive.getvalue()},
            )["FunctionArn"]
            for name in by_name
        }
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="corpus")
        text = json.dumps(moto_variant(definition))
        for name, value in {"ScoreBatchFunctionArn": arns["score-batch"], "MergeReportFunctionArn":
                            arns["merge-report"], "CorpusBucket": "corpus", "ResultsPrefix": "map-results"}.items():
            text = text.replace("${" + name + "}", value)
        machine = boto3.client("stepfunctions").create_state_machine(name="corpus", definition=text,
                                                                     roleArn=role)["stateMachineArn"]
        boto3.client("cloudformation").create_stack(StackName=stack_name, TemplateBody=STACK_TEMPLATE % machine)
        yield {"bucket": "corpus", "machine": machine, "stack": stack_name, "s3": s3,
               "function": arns.get("chrf-components-api")}
