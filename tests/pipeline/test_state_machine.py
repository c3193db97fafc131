"""The state machine: its definition as deployed, the template's least-privilege wiring, and an execution in moto.

moto's Step Functions engine runs definitions, but rejects ItemBatcher, the JSONL input type, EXPRESS child
executions and ToleratedFailurePercentage, writes ResultWriter manifests without result files, and runs no
Lambda code without Docker. The execution test therefore runs a variant (one-item batches built by ItemSelector,
a JSON item file, results inline), with moto's Lambda invocation patched to call our real handlers; everything
else (Lambda tasks, the child Catch, MergeReport, the Fail state's ErrorPath/CausePath, S3) is exercised as is.
"""

import json
import re
import time

import aws_stand_ins
import chrf_core
import pytest
from distributed_map import DEFINITION_PATH
from support import ROOT

from chrf_components_local import template as sam_template

DEFINITION = json.loads((ROOT / DEFINITION_PATH).read_text(encoding="utf-8"))
TEMPLATE = sam_template.load_template(ROOT / "template.yaml")
MAP = DEFINITION["States"]["ScoreSegments"]
LAMBDA_RETRY_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


def test_distributed_map_reads_jsonl_from_s3_and_batches_within_the_contract_limits():
    assert DEFINITION["StartAt"] == "ScoreSegments"
    assert MAP["Type"] == "Map" and MAP["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    assert MAP["ItemReader"]["Resource"] == "arn:aws:states:::s3:getObject"
    assert MAP["ItemReader"]["ReaderConfig"] == {"InputType": "JSONL"}
    assert MAP["ItemReader"]["Parameters"] == {"Bucket.$": "$.input.bucket", "Key.$": "$.input.key"}
    assert MAP["ItemBatcher"]["MaxItemsPerBatch"] == chrf_core.MAX_SEGMENTS
    assert MAP["ItemBatcher"]["MaxInputBytesPerBatch"] == chrf_core.MAX_TEXT_BYTES
    assert MAP["ItemBatcher"]["BatchInput"] == {"settings.$": "$.settings"}
    assert MAP["ItemSelector"] == {"line.$": "$$.Map.Item.Index", "item.$": "$$.Map.Item.Value"}
    assert MAP["ResultWriter"]["Resource"] == "arn:aws:states:::s3:putObject"
    assert MAP["ToleratedFailurePercentage"] == 0 and MAP["ResultPath"] == "$.map_result"


def test_every_task_retries_lambda_faults_and_every_failure_ends_in_the_fail_state():
    child = MAP["ItemProcessor"]["States"]
    tasks = [child["ScoreBatch"], DEFINITION["States"]["MergeReport"]]
    for task in tasks:
        assert task["Resource"] == "arn:aws:states:::lambda:invoke"
        assert set(task["Retry"][0]["ErrorEquals"]) == LAMBDA_RETRY_ERRORS
        assert "InvalidInputError" not in task["Retry"][0]["ErrorEquals"]
    assert child["ScoreBatch"]["Catch"] == [{"ErrorEquals": ["InvalidInputError"], "ResultPath": "$",
                                             "Next": "KeepInvalidInput"}]
    for state in (MAP, DEFINITION["States"]["MergeReport"]):
        assert state["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Failed"}]
    assert DEFINITION["States"]["Failed"] == {"Type": "Fail", "ErrorPath": "$.error.Error",
                                              "CausePath": "$.error.Cause"}


def test_template_substitutes_every_placeholder_of_the_definition():
    machine = TEMPLATE["Resources"]["CorpusPipeline"]["Properties"]
    placeholders = set(re.findall(r"\$\{(\w+)\}", json.dumps(DEFINITION)))
    assert placeholders == set(machine["DefinitionSubstitutions"])
    assert machine["DefinitionUri"] == DEFINITION_PATH


def test_state_machine_policies_are_least_privilege():
    resources = TEMPLATE["Resources"]
    policies = resources["CorpusPipeline"]["Properties"]["Policies"]
    invoked = {p["LambdaInvokePolicy"]["FunctionName"]["Ref"] for p in policies if "LambdaInvokePolicy" in p}
    assert invoked == {"ScoreBatchFunction", "MergeReportFunction"}
    statements = [s for p in policies if "Statement" in p for s in p["Statement"]]
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        assert all(not action.endswith("*") for action in actions)
        if any(action.startswith("s3:") for action in actions):
            resource = statement["Resource"]["Fn::Sub"]
            assert (resource.startswith("${CorpusBucket.Arn}/") and resource.endswith("/*")) or "Prefix}*" in resource
        if any(action.startswith("states:") for action in actions):
            assert "${AWS::StackName}-corpus-pipeline" in statement["Resource"]["Fn::Sub"]
    merge_statements = resources["MergeReportFunction"]["Properties"]["Policies"][0]["Statement"]
    assert {s["Action"] for s in merge_statements} == {"s3:GetObject", "s3:PutObject", "states:DescribeMapRun"}
    describe = next(s for s in merge_statements if s["Action"] == "states:DescribeMapRun")
    assert ":mapRun:${AWS::StackName}-corpus-pipeline/*" in describe["Resource"]["Fn::Sub"]
    assert "Policies" not in resources["ScoreBatchFunction"]["Properties"]  # no AWS access at all


@pytest.fixture
def moto_pipeline(pipeline_handlers):
    """Run executions of the state machine (moto's variant) whose Lambda tasks reach the real handlers."""
    import boto3

    with aws_stand_ins.moto_pipeline(pipeline_handlers, DEFINITION) as deployed:
        stepfunctions, s3 = boto3.client("stepfunctions"), deployed["s3"]

        def execute(items, settings):
            body = "\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n"
            s3.put_object(Bucket="corpus", Key="inputs/test.jsonl", Body=body.encode("utf-8"))
            execution_input = {"input": {"bucket": "corpus", "key": "inputs/test.jsonl"}, "settings": settings,
                               "output": {"bucket": "corpus", "key": "reports/test.json"}}
            arn = stepfunctions.start_execution(stateMachineArn=deployed["machine"],
                                                input=json.dumps(execution_input))["executionArn"]
            for _ in range(600):
                described = stepfunctions.describe_execution(executionArn=arn)
                if described["status"] != "RUNNING":
                    return described, s3
                time.sleep(0.05)
            raise AssertionError("execution did not finish")

        yield execute


def test_execution_in_moto_writes_the_exact_report(moto_pipeline):
    pairs = [("the cat sat on the mat", "the cat sat on a mat"), ("Grüße, Welt!", "Grüß die Welt!"),
             ("你好世界", "你好，世界"), ("שלום עולם", "שלום לעולם")]
    described, s3 = moto_pipeline([{"hypothesis": h, "reference": r} for h, r in pairs], {"word_order": 2})
    assert described["status"] == "SUCCEEDED", described.get("cause")
    report = json.loads(s3.get_object(Bucket="corpus", Key="reports/test.json")["Body"].read())
    request = {"hypotheses": [h for h, _ in pairs], "references": [r for _, r in pairs], "word_order": 2}
    assert report == chrf_core.score(request)
    assert json.loads(described["output"])["score"] == report["score"]


def test_execution_in_moto_fails_with_invalid_input_error_naming_the_line_and_writes_nothing(moto_pipeline):
    items = [{"hypothesis": "a b", "reference": "a c"}, {"hypothesis": "x", "reference": 7}]
    described, s3 = moto_pipeline(items, {})
    assert described["status"] == "FAILED"
    assert described["error"] == "InvalidInputError"
    cause = json.loads(json.loads(described["cause"])["errorMessage"])
    assert cause == {"code": "invalid_input", "field": "references",
                     "message": "line 2 (reference): must be a string", "line": 2}
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")
