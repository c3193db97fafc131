"""The state machine: its definition as deployed and the template's least-privilege wiring. Executions of the
definition itself run on the local runner (test_local_runner.py, test_pipeline_functions.py, test_local_pipeline.py).
"""

import json
import re

import chrf_core
from support import ROOT

from chrf_components_local import template as sam_template

DEFINITION_PATH = "statemachine/corpus_pipeline.asl.json"
DEFINITION = json.loads((ROOT / DEFINITION_PATH).read_text(encoding="utf-8"))
TEMPLATE = sam_template.load_template(ROOT / "template.yaml")
MAP = DEFINITION["States"]["ScoreSegments"]
LAMBDA_RETRY_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


def test_the_execution_input_is_checked_before_the_map_reads_anything():
    """Issue 65: a missing output or word_order 9 was found by the merge, after the whole Map had run."""
    states = DEFINITION["States"]
    check = states["CheckInput"]
    assert DEFINITION["StartAt"] == "CheckInput" and check["Next"] == "InputChecked"
    assert check["Parameters"] == {"FunctionName": "${MergeReportFunctionArn}", "Payload": {"check.$": "$"}}
    assert (check["ResultSelector"], check["ResultPath"]) == ({"result.$": "$.Payload"}, "$.checked")
    assert states["InputChecked"] == {"Type": "Choice", "Default": "ScoreSegments", "Choices": [
        {"Variable": "$.checked.result.error", "IsPresent": True, "Next": "InvalidExecutionInput"}]}
    assert states["InvalidExecutionInput"] == {"Type": "Fail", "ErrorPath": "$.checked.result.error",
                                               "CausePath": "$.checked.result.message"}


def test_invalid_input_fails_with_the_contracts_message_as_its_cause_not_a_lambda_error():
    """Issue 65: causes arrived as ~1.5 KB of doubly escaped JSON with a stack trace. The functions answer invalid
    input as data, and a Choice fails the execution with its error and message."""
    states = DEFINITION["States"]
    assert states["MergeReport"]["Next"] == "ReportWritten"
    assert states["ReportWritten"] == {"Type": "Choice", "Default": "Done", "Choices": [
        {"Variable": "$.error", "IsPresent": True, "Next": "InvalidLine"}]}
    assert states["InvalidLine"] == {"Type": "Fail", "ErrorPath": "$.error", "CausePath": "$.message"}
    assert states["Done"] == {"Type": "Succeed"}


def test_distributed_map_reads_jsonl_from_s3_and_batches_within_the_contract_limits():
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
    tasks = [child["ScoreBatch"], DEFINITION["States"]["CheckInput"], DEFINITION["States"]["MergeReport"]]
    for task in tasks:
        assert task["Resource"] == "arn:aws:states:::lambda:invoke"
        assert set(task["Retry"][0]["ErrorEquals"]) == LAMBDA_RETRY_ERRORS
        assert "InvalidInputError" not in task["Retry"][0]["ErrorEquals"]
    assert child["ScoreBatch"]["Catch"] == [{"ErrorEquals": ["InvalidInputError"], "ResultPath": "$",
                                             "Next": "KeepInvalidInput"}]
    for state in (DEFINITION["States"]["CheckInput"], MAP, DEFINITION["States"]["MergeReport"]):
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
