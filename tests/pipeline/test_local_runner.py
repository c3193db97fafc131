"""The local runner (chrf_components_local.states) follows AWS's documented rules, each test naming the page it
follows, and the definition drives the run: an edited copy of statemachine/corpus_pipeline.asl.json batches, retries
or is refused as edited."""

import copy
import json
import random

import chrf_core
import local_runner
import pytest

from chrf_components_local import asl, definitions, states
from chrf_components_local import execution as execution_module
from chrf_components_local.asl import LAMBDA_INVOKE, S3_GET_OBJECT, S3_PUT_OBJECT, StatesError
from chrf_components_local.states import LambdaAnswer

DOCS = "https://docs.aws.amazon.com/step-functions/latest/dg/"


def put_lines(s3, lines, key="items.jsonl"):
    s3.put_object(Bucket="corpus", Key=key, Body=("\n".join(lines) + "\n").encode("utf-8"))


def map_definition(child=None, **fields):
    """A Distributed Map over s3://corpus/items.jsonl whose child workflow echoes its input (a Pass state)."""
    state = {"Type": "Map",
             "ItemReader": {"Resource": S3_GET_OBJECT, "ReaderConfig": {"InputType": "JSONL"},
                            "Parameters": {"Bucket.$": "$.bucket", "Key.$": "$.key"}},
             "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "EXPRESS"},
                               "StartAt": "Child", "States": child or {"Child": {"Type": "Pass", "End": True}}},
             "End": True, **fields}
    return {"StartAt": "Items", "States": {"Items": state}}


def run(s3, definition, execution_input=None, invoke=None, **services):
    invoke = invoke or (lambda function, payload: LambdaAnswer(payload, None, "request"))
    machine = local_runner.machine(s3, invoke, definition, **services)
    return machine.execute(execution_input if execution_input is not None else {"bucket": "corpus",
                                                                                  "key": "items.jsonl"})


def output(execution):
    assert execution.status == "SUCCEEDED", execution
    return json.loads(execution.output)


def compact_size(value):
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# ---- ItemBatcher ---------------------------------------------------------------------------------------------------


def test_item_batcher_puts_batch_input_and_items_in_one_envelope_within_both_limits(s3):
    """ItemBatcher (Map), DOCS + input-output-itembatcher.html: each child execution gets {"BatchInput": ...,
    "Items": [...]}, at most MaxItemsPerBatch items and MaxInputBytesPerBatch bytes; Step Functions reduces the items
    of a batch to stay within the byte limit. The runner counts the child's whole input (BatchInput included) as
    compact UTF-8 JSON, and fills each batch as far as both limits allow."""
    rng = random.Random(5)
    items = [{"text": "".join(rng.choice("aé中😀 ") for _ in range(rng.randint(0, 40)))} for _ in range(80)]
    put_lines(s3, [json.dumps(item, ensure_ascii=False) for item in items])
    definition = map_definition(ItemBatcher={"MaxItemsPerBatch": 7, "MaxInputBytesPerBatch": 400,
                                             "BatchInput": {"settings.$": "$.settings"}})
    batches = output(run(s3, definition, {"bucket": "corpus", "key": "items.jsonl", "settings": {"beta": 3}}))
    assert [item for batch in batches for item in batch["Items"]] == items
    for number, batch in enumerate(batches):
        assert list(batch) == ["BatchInput", "Items"] and batch["BatchInput"] == {"settings": {"beta": 3}}
        assert len(batch["Items"]) <= 7 and compact_size(batch) <= 400
        if number + 1 < len(batches):  # the next item did not fit: the batch was full by one limit
            fuller = {**batch, "Items": [*batch["Items"], batches[number + 1]["Items"][0]]}
            assert len(fuller["Items"]) > 7 or compact_size(fuller) > 400
    assert len(batches) > 80 // 7 + 1  # the byte limit cut some batches short


def test_an_item_larger_than_any_batch_fails_the_map_run_with_a_states_error(s3):
    """DOCS + input-output-itembatcher.html gives no batch that exceeds MaxInputBytesPerBatch; an item too large for
    any batch fails the Map with States.ItemReaderFailed naming it (the runner's choice of error: AWS does not name
    one), and no child runs."""
    put_lines(s3, ['{"text": "short"}', json.dumps({"text": "x" * 500})])
    calls = []
    child = {"Child": {"Type": "Task", "Resource": LAMBDA_INVOKE, "End": True,
                       "Parameters": {"FunctionName": "f", "Payload.$": "$"}}}
    execution = run(s3, map_definition(child, ItemBatcher={"MaxInputBytesPerBatch": 300}),
                    invoke=lambda function, payload: calls.append(payload) or LambdaAnswer(b"{}", None, "r"))
    assert (execution.status, execution.error) == ("FAILED", "States.ItemReaderFailed")
    assert execution.cause.startswith("line 2: a batch of this item alone takes ") and calls == []  # 1-based lines


# ---- ItemReader and ItemSelector -----------------------------------------------------------------------------------


def test_the_jsonl_item_reader_reads_one_item_per_line_and_stops_at_max_items(s3):
    """ItemReader (Map), DOCS + input-output-itemreader.html: InputType JSONL reads one JSON value per line (any
    JSON value, in order); MaxItems limits how many are read."""
    put_lines(s3, ['{"a": 1}', "[2, 3]", '"four"', "5", "null", '{"a": 6}'])
    assert output(run(s3, map_definition())) == [{"a": 1}, [2, 3], "four", 5, None, {"a": 6}]
    limited = map_definition()
    limited["States"]["Items"]["ItemReader"]["ReaderConfig"]["MaxItems"] = 3
    assert output(run(s3, limited)) == [{"a": 1}, [2, 3], "four"]


def test_a_line_that_is_not_json_fails_the_map_run_naming_the_line(s3):
    """DOCS + input-output-itemreader.html: the reader fails the Map Run (States.ItemReaderFailed) on content it
    cannot read; the runner names the line."""
    put_lines(s3, ['{"a": 1}', "{not json", '{"a": 3}'])
    execution = run(s3, map_definition())
    assert (execution.error, execution.cause) == ("States.ItemReaderFailed", "line 2: not one JSON value in UTF-8")


def test_the_item_selector_reads_the_items_index_and_value_and_the_states_input(s3):
    """ItemSelector (Map), DOCS + input-output-itemselector.html: $$.Map.Item.Index (0-based) and
    $$.Map.Item.Value, and paths into the Map state's input."""
    put_lines(s3, ['"x"', '"y"'])
    definition = map_definition(ItemSelector={"line.$": "$$.Map.Item.Index", "item.$": "$$.Map.Item.Value",
                                              "run.$": "$.run", "fixed": "f"})
    assert output(run(s3, definition, {"bucket": "corpus", "key": "items.jsonl", "run": 7})) == [
        {"line": 0, "item": "x", "run": 7, "fixed": "f"}, {"line": 1, "item": "y", "run": 7, "fixed": "f"}]


# ---- Task (lambda:invoke), Retry, Catch ----------------------------------------------------------------------------


def task(**fields):
    return {"Type": "Task", "Resource": LAMBDA_INVOKE, "Parameters": {"FunctionName": "fn", "Payload.$": "$"},
            **fields}


def flaky(failures, error="Lambda.ServiceException"):
    """A LambdaInvoke that raises ``error`` ``failures`` times, then echoes its payload; ``calls`` counts."""

    def invoke(function, payload):
        invoke.calls += 1
        if invoke.calls <= failures:
            raise StatesError(error, "Rate exceeded")
        return LambdaAnswer(payload, None, "request")

    invoke.calls = 0
    return invoke


def test_lambda_invoke_returns_the_payload_with_the_invoke_response_and_output_path_selects_it(s3):
    """Invoke Lambda with Step Functions, DOCS + connect-lambda.html: the optimized integration's result holds the
    function's Payload (parsed JSON), StatusCode and ExecutedVersion; OutputPath $.Payload keeps the payload."""
    whole = output(run(s3, {"StartAt": "T", "States": {"T": task(End=True)}}, {"n": 1}))
    assert whole["Payload"] == {"n": 1} and whole["StatusCode"] == 200 and whole["ExecutedVersion"] == "$LATEST"
    selected = {"StartAt": "T", "States": {"T": task(End=True, OutputPath="$.Payload")}}
    assert output(run(s3, selected, {"n": 1})) == {"n": 1}


def test_a_function_error_is_the_error_named_by_its_error_type_with_the_payload_as_cause(s3):
    """DOCS + connect-lambda.html and concepts-error-handling.html: a function that raises fails the task with its
    errorType as the error name and the error payload as the cause; without an errorType, Lambda.Unknown."""
    payload = b'{"errorMessage": "bad", "errorType": "InvalidInputError", "requestId": "r", "stackTrace": []}'
    definition = {"StartAt": "T", "States": {"T": task(End=True)}}
    execution = run(s3, definition, {}, invoke=lambda f, p: LambdaAnswer(payload, "Unhandled", "r"))
    assert (execution.error, execution.cause) == ("InvalidInputError", payload.decode())
    execution = run(s3, definition, {}, invoke=lambda f, p: LambdaAnswer(b'{"errorMessage": "x"}', "Unhandled", "r"))
    assert execution.error == "Lambda.Unknown"


@pytest.mark.parametrize(("retrier", "failures", "expected_sleeps", "status"), [
    ({"IntervalSeconds": 1, "MaxAttempts": 4, "BackoffRate": 2}, 4, [1, 2, 4, 8], "SUCCEEDED"),
    ({"IntervalSeconds": 1, "MaxAttempts": 4, "BackoffRate": 2}, 5, [1, 2, 4, 8], "FAILED"),
    ({"IntervalSeconds": 2, "MaxAttempts": 3, "BackoffRate": 3, "MaxDelaySeconds": 10}, 3, [2, 6, 10], "SUCCEEDED"),
    ({"IntervalSeconds": 1, "MaxAttempts": 4, "BackoffRate": 2, "JitterStrategy": "FULL"}, 4, [0.25, 0.5, 1, 2],
     "SUCCEEDED"),
    ({"MaxAttempts": 0}, 1, [], "FAILED"),
    ({}, 3, [1, 2, 4], "SUCCEEDED"),  # AWS's defaults: IntervalSeconds 1, MaxAttempts 3, BackoffRate 2.0
])
def test_retry_waits_interval_times_backoff_rate_to_the_power_of_the_retries_up_to_max_attempts(
        s3, retrier, failures, expected_sleeps, status):
    """Handling errors in Step Functions workflows, DOCS + concepts-error-handling.html: IntervalSeconds before
    the first retry, multiplied by BackoffRate for each further one, capped by MaxDelaySeconds; MaxAttempts retries
    at most (0: never); JitterStrategy FULL randomises each delay between 0 and the computed one (here a fixed
    draw of 0.25)."""
    sleeps = []
    definition = {"StartAt": "T", "States": {"T": task(End=True, Retry=[
        {"ErrorEquals": ["Lambda.ServiceException"], **retrier}])}}
    invoke = flaky(failures)
    execution = run(s3, definition, {}, invoke=invoke, sleep=sleeps.append, jitter=lambda: 0.25)
    assert execution.status == status and sleeps == expected_sleeps
    assert invoke.calls == min(failures, retrier.get("MaxAttempts", 3)) + 1


def test_only_the_first_retrier_that_matches_counts_and_other_errors_are_not_retried(s3):
    """DOCS + concepts-error-handling.html: retriers are tried in order; the first whose ErrorEquals matches
    decides; an error no retrier names fails at once."""
    definition = {"StartAt": "T", "States": {"T": task(End=True, Retry=[
        {"ErrorEquals": ["Other"], "MaxAttempts": 5}, {"ErrorEquals": ["States.ALL"], "MaxAttempts": 1}])}}
    invoke = flaky(2)
    assert run(s3, definition, {}, invoke=invoke).status == "FAILED" and invoke.calls == 2
    named_only = {"StartAt": "T", "States": {"T": task(End=True, Retry=[{"ErrorEquals": ["Other"]}])}}
    invoke = flaky(1)
    assert run(s3, named_only, {}, invoke=invoke).error == "Lambda.ServiceException" and invoke.calls == 1


def test_catch_puts_error_and_cause_at_its_result_path_in_the_states_input_and_goes_to_next(s3):
    """DOCS + concepts-error-handling.html (Catch, and error output with ResultPath): the error output
    {"Error", "Cause"} replaces the input with ResultPath "$" (the default), or is added at another path."""
    for path, expected in (("$", {"Error": "Boom", "Cause": "Rate exceeded"}),
                           ("$.error", {"keep": 1, "error": {"Error": "Boom", "Cause": "Rate exceeded"}})):
        catcher = {"ErrorEquals": ["Boom"], "Next": "After", **({"ResultPath": path} if path != "$" else {})}
        definition = {"StartAt": "T", "States": {"T": task(Next="Never", Catch=[catcher]),
                                                 "Never": {"Type": "Fail", "Error": "Unreached"},
                                                 "After": {"Type": "Pass", "End": True}}}
        assert output(run(s3, definition, {"keep": 1}, invoke=flaky(1, "Boom"))) == expected


def test_states_all_catches_task_errors_but_not_the_terminal_runtime_and_data_limit_errors(s3):
    """DOCS + concepts-error-handling.html: States.ALL matches every error name except States.Runtime (a path that
    is not in the input) and States.DataLimitExceeded (over the 256 KiB quota, DOCS + service-quotas.html)."""
    catch_all = [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}]
    caught = {"Caught": {"Type": "Pass", "Result": "caught", "End": True}}
    missing_path = {"StartAt": "T", "States": {"T": {**task(Next="Caught", Catch=catch_all), "Parameters": {
        "FunctionName": "fn", "Payload.$": "$.missing"}}, **caught}}
    execution = run(s3, missing_path, {})
    assert execution.error == "States.Runtime" and "$.missing" in execution.cause
    too_big = {"StartAt": "T", "States": {"T": task(Next="Caught", Catch=catch_all), **caught}}
    huge = LambdaAnswer(json.dumps("x" * 300_000).encode(), None, "r")
    assert run(s3, too_big, {}, invoke=lambda f, p: huge).error == "States.DataLimitExceeded"
    assert output(run(s3, too_big, {}, invoke=flaky(1))) == "caught"


def test_a_result_path_that_cannot_be_applied_is_result_path_match_failure_which_states_all_catches(s3):
    """DOCS + concepts-error-handling.html: States.ResultPathMatchFailure, "a state's ResultPath field cannot be
    applied to the input the state received", is an error a catcher of States.ALL catches (on 72c9660 the runner
    raised the terminal States.Runtime, which none catches)."""
    catch_all = [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}]
    definition = {"StartAt": "T", "States": {"T": task(Next="Caught", ResultPath="$.a.b"),
                                             "Caught": {"Type": "Pass", "Result": "caught", "End": True}}}
    execution = run(s3, definition, {"a": 5})
    assert (execution.error, execution.status) == ("States.ResultPathMatchFailure", "FAILED")
    definition["States"]["T"]["Catch"] = catch_all
    assert output(run(s3, definition, {"a": 5})) == "caught"


@pytest.mark.parametrize(("field", "value", "message"), [
    ("Retry", [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["Boom"]}],
     "Retry[0].ErrorEquals States.ALL before the last one (AWS requires it last)"),
    ("Catch", [{"ErrorEquals": ["States.ALL"], "Next": "End"}, {"ErrorEquals": ["Boom"], "Next": "End"}],
     "Catch[0].ErrorEquals States.ALL before the last one (AWS requires it last)"),
    ("Retry", [{"ErrorEquals": ["Boom"], "MaxAttempts": 100000000}],
     "MaxAttempts 100000000 (AWS requires an integer from 0 to 99999999)"),
    ("Retry", [{"ErrorEquals": ["Boom"], "IntervalSeconds": 10**400}],
     None),
    ("Retry", [{"ErrorEquals": ["Boom"], "MaxDelaySeconds": 31622401}],
     "MaxDelaySeconds 31622401 (AWS requires an integer from 1 to 31622400)"),
])
def test_retriers_and_catchers_are_held_to_awss_documented_rules_when_the_definition_is_read(s3, field, value,
                                                                                             message):
    """DOCS + concepts-error-handling.html: States.ALL "must appear alone in the array and must appear in the last
    retrier/catcher"; IntervalSeconds and MaxAttempts at most 99999999, MaxDelaySeconds below 31622401 (on 72c9660
    each was accepted, and 1e20 or 10**400 seconds ended in an OverflowError traceback at run time)."""
    definition = {"StartAt": "T", "States": {"T": task(End=True, **{field: value}),
                                             "End": {"Type": "Succeed"}}}
    with pytest.raises(asl.NotImplementedByRunner) as refused:
        local_runner.machine(s3, lambda *call: None, definition)
    assert str(refused.value).startswith("state T: ")
    if message:
        assert str(refused.value).endswith(message)


def test_a_huge_backoff_rate_waits_at_most_a_years_delay_instead_of_overflowing():
    retrier = {"ErrorEquals": ["Boom"], "IntervalSeconds": 1, "BackoffRate": 1e308}
    assert states.retry_delay(retrier_of(retrier), 5, lambda: 1.0) == asl.MAX_DELAY_LIMIT
    assert states.retry_delay(retrier_of({**retrier, "MaxDelaySeconds": 7}), 5, lambda: 1.0) == 7


def retrier_of(retrier):
    """A Retry entry as the runner reads it from a definition."""
    definition = {"StartAt": "T", "States": {"T": task(End=True, Retry=[retrier])}}
    return asl.parse_machine(definition).states["T"].retriers[0]


# ---- Pass, Choice, Fail --------------------------------------------------------------------------------------------


def test_pass_choice_and_fail_follow_their_pages(s3):
    """Pass (DOCS + state-pass.html: Parameters, ResultPath), Choice (state-choice.html: the first rule that matches,
    else Default, else States.NoChoiceMatched) and Fail (state-fail.html: ErrorPath and CausePath)."""
    definition = {"StartAt": "Shape", "States": {
        "Shape": {"Type": "Pass", "Parameters": {"n.$": "$.n", "kind": "number"}, "ResultPath": "$.shaped",
                  "Next": "Decide"},
        "Decide": {"Type": "Choice", "Choices": [
            {"And": [{"Variable": "$.shaped.n", "IsNumeric": True}, {"Variable": "$.shaped.n",
                                                                      "NumericGreaterThan": 10}], "Next": "Big"},
            {"Variable": "$.shaped.kind", "StringEquals": "text", "Next": "Big"}], "Default": "Small"},
        "Big": {"Type": "Succeed"},
        "Small": {"Type": "Fail", "ErrorPath": "$.shaped.kind", "CausePath": "$.why"}}}
    assert output(run(s3, definition, {"n": 11})) == {"n": 11, "shaped": {"n": 11, "kind": "number"}}
    small = run(s3, definition, {"n": 3, "why": "too small"})
    assert (small.status, small.error, small.cause) == ("FAILED", "number", "too small")
    no_default = copy.deepcopy(definition)
    del no_default["States"]["Decide"]["Default"]
    assert run(s3, no_default, {"n": 3}).error == "States.NoChoiceMatched"


def test_the_definition_is_parsed_once_and_running_it_parses_nothing(s3, monkeypatch):
    """Issue 56: the definition becomes state types (asl.py) when the machine is made; an execution reads their
    attributes, so no path or payload template is parsed while it runs (the runner parsed paths at every lookup)."""
    definition = {"StartAt": "Shape", "States": {
        "Shape": {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "ResultPath": "$.shaped", "Next": "Decide"},
        "Decide": {"Type": "Choice", "Choices": [{"Variable": "$.shaped.n", "NumericGreaterThan": 10,
                                                  "Next": "Big"}], "Default": "Small"},
        "Big": {"Type": "Succeed", "OutputPath": "$.shaped"},
        "Small": {"Type": "Fail", "ErrorPath": "$.why", "Cause": "small"}}}
    machine = local_runner.machine(s3, lambda *call: None, definition)
    assert [type(state).__name__ for state in machine.machine.states.values()] == ["Pass", "Choice", "Succeed",
                                                                                   "Fail"]

    def parsing(*arguments):
        raise AssertionError("parsed while running")

    monkeypatch.setattr(asl.Path, "__init__", parsing)
    monkeypatch.setattr(asl.Template, "__init__", parsing)
    assert output(machine.execute({"n": 11})) == {"n": 11}
    small = machine.execute({"n": 3, "why": "Tiny"})
    assert (small.status, small.error, small.cause) == ("FAILED", "Tiny", "small")


DATA = {"n": 3, "x": 2.5, "flag": True, "s": "abc", "t": "abd", "none": None, "list": [1], "same": 3}


@pytest.mark.parametrize(("rule", "holds"), [
    ({"Variable": "$.n", "NumericEquals": 3}, True), ({"Variable": "$.n", "NumericLessThan": 3}, False),
    ({"Variable": "$.x", "NumericGreaterThanEquals": 2.5}, True),
    ({"Variable": "$.n", "NumericLessThanEquals": 2}, False),
    ({"Variable": "$.flag", "NumericEquals": 1}, False),  # a boolean is no number
    ({"Variable": "$.n", "NumericEqualsPath": "$.same"}, True),
    ({"Variable": "$.n", "NumericLessThanPath": "$.x"}, False),
    ({"Variable": "$.s", "StringLessThan": "abd"}, True), ({"Variable": "$.s", "StringLessThanPath": "$.t"}, True),
    ({"Variable": "$.s", "StringGreaterThanEquals": "abc"}, True), ({"Variable": "$.n", "StringEquals": "3"}, False),
    ({"Variable": "$.flag", "BooleanEquals": True}, True),
    ({"Variable": "$.flag", "BooleanEqualsPath": "$.flag"}, True),
    ({"Variable": "$.none", "IsNull": True}, True), ({"Variable": "$.n", "IsString": False}, True),
    ({"Variable": "$.flag", "IsNumeric": True}, False), ({"Variable": "$.flag", "IsBoolean": True}, True),
    ({"Variable": "$.missing", "IsPresent": False}, True), ({"Variable": "$.list", "IsPresent": True}, True),
    ({"Not": {"Variable": "$.n", "NumericEquals": 3}}, False),
    ({"Or": [{"Variable": "$.n", "NumericEquals": 4}, {"Variable": "$.s", "StringEquals": "abc"}]}, True),
    ({"And": [{"Variable": "$.n", "NumericEquals": 3}, {"Not": {"Variable": "$.flag", "BooleanEquals": True}}]},
     False),
])
def test_every_choice_operator_reads_as_aws_documents_it(s3, rule, holds):
    """state-choice.html, read once when the definition is (issue 56: the runner no longer reads each rule again
    at every Choice): a type mismatch is false, not an error; IsPresent tests the path; And, Or and Not nest."""
    definition = {"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [{**rule, "Next": "Yes"}],
                                                  "Default": "No"},
                                            "Yes": {"Type": "Pass", "Result": "yes", "End": True},
                                            "No": {"Type": "Pass", "Result": "no", "End": True}}}
    assert output(run(s3, definition, DATA)) == ("yes" if holds else "no")


# ---- Tolerated failures and ResultWriter ---------------------------------------------------------------------------


FAIL_ODD = {"Check": {"Type": "Choice", "Choices": [{"Variable": "$.odd", "BooleanEquals": True, "Next": "Fail"}],
                      "Default": "Done"},
            "Fail": {"Type": "Fail", "Error": "Odd", "Cause": "an odd item"}, "Done": {"Type": "Pass", "End": True}}


@pytest.mark.parametrize(("fields", "status"), [
    ({}, "FAILED"), ({"ToleratedFailureCount": 3}, "SUCCEEDED"), ({"ToleratedFailureCount": 2}, "FAILED"),
    ({"ToleratedFailurePercentage": 30}, "SUCCEEDED"), ({"ToleratedFailurePercentage": 29}, "FAILED"),
    ({"ToleratedFailureCount": 5, "ToleratedFailurePercentage": 10}, "FAILED"),
])
def test_the_map_run_fails_when_failed_items_exceed_the_tolerated_count_or_percentage(s3, fields, status):
    """Setting failure thresholds for Distributed Map states, DOCS + maprun-fail-threshold.html: by default any
    failed item fails the Map Run; ToleratedFailureCount and ToleratedFailurePercentage tolerate up to that many
    (each exceeded threshold fails it) with States.ExceedToleratedFailureThreshold. 3 of 10 items fail here."""
    put_lines(s3, [json.dumps({"odd": index in (1, 3, 5)}) for index in range(10)])
    definition = map_definition(copy.deepcopy(FAIL_ODD), **fields)
    definition["States"]["Items"]["ItemProcessor"]["StartAt"] = "Check"
    execution = run(s3, definition)
    assert execution.status == status
    if status == "FAILED":
        assert execution.error == "States.ExceedToleratedFailureThreshold"


def test_result_writer_writes_the_manifest_and_the_result_files_as_aws_does(s3):
    """ResultWriter (Map), DOCS + input-output-resultwriter.html: under Prefix/<Map Run id>/, a manifest.json
    (DestinationBucket, MapRunArn, ResultFiles with FAILED, PENDING and SUCCEEDED lists of {Key, Size}) and
    SUCCEEDED_0.json / FAILED_0.json, each a JSON array of child execution records (ExecutionArn, Name, Input and
    Output as JSON text, Status, Error and Cause when failed, dates, StateMachineArn); the Map's output names the
    manifest ({MapRunArn, ResultWriterDetails: {Bucket, Key}})."""
    put_lines(s3, [json.dumps({"odd": index % 2 == 1, "n": index}) for index in range(6)])
    definition = map_definition(copy.deepcopy(FAIL_ODD), ToleratedFailureCount=3, ResultWriter={
        "Resource": S3_PUT_OBJECT, "Parameters": {"Bucket": local_runner.RESULTS_BUCKET, "Prefix": "results"}})
    definition["States"]["Items"]["ItemProcessor"]["StartAt"] = "Check"
    result = output(run(s3, definition))
    run_id = result["MapRunArn"].rpartition(":")[2]
    assert result["MapRunArn"].startswith(f"arn:aws:states:us-east-1:123456789012:mapRun:{local_runner.NAME}/Items:")
    assert result["ResultWriterDetails"] == {"Bucket": local_runner.RESULTS_BUCKET,
                                             "Key": f"results/{run_id}/manifest.json"}

    def read(key):
        return s3.get_object(Bucket=local_runner.RESULTS_BUCKET, Key=key)["Body"].read()

    manifest = json.loads(read(f"results/{run_id}/manifest.json"))
    assert manifest["DestinationBucket"] == local_runner.RESULTS_BUCKET and manifest["MapRunArn"] == result[
        "MapRunArn"]
    files = manifest["ResultFiles"]
    assert files["PENDING"] == [] and [entry["Key"] for entry in files["SUCCEEDED"]] == [
        f"results/{run_id}/SUCCEEDED_0.json"] and [entry["Key"] for entry in files["FAILED"]] == [
        f"results/{run_id}/FAILED_0.json"]
    succeeded, failed = (json.loads(read(files[status][0]["Key"])) for status in ("SUCCEEDED", "FAILED"))
    assert all(entry["Size"] == len(read(entry["Key"])) for entry in files["SUCCEEDED"] + files["FAILED"])
    assert sorted(json.loads(record["Output"])["n"] for record in succeeded) == [0, 2, 4]
    assert sorted(json.loads(record["Input"])["n"] for record in failed) == [1, 3, 5]
    for record in succeeded + failed:
        assert record["ExecutionArn"].startswith(f"arn:aws:states:us-east-1:123456789012:express:{local_runner.NAME}"
                                                 f"/Items:{run_id}:")
        assert record["ExecutionArn"].endswith(record["Name"]) and record["StartDate"] <= record["StopDate"]
        assert record["StateMachineArn"].endswith(f":stateMachine:{local_runner.NAME}/Items")
    assert {(record["Status"], record["Error"], record["Cause"]) for record in failed} == {
        ("FAILED", "Odd", "an odd item")}
    described = local_runner.RUNNER_MAP_RUNS.describe(result["MapRunArn"])
    assert described["status"] == "SUCCEEDED" and described["itemCounts"]["total"] == 6
    assert (described["itemCounts"]["succeeded"], described["itemCounts"]["failed"]) == (3, 3)


@pytest.mark.parametrize(("config", "succeeded"), [
    ({"Transformation": "COMPACT", "OutputType": "JSONL"}, b'{"n":0}\n{"n":2}\n{"n":4}\n'),
    ({"Transformation": "COMPACT", "OutputType": "JSON"}, b'[{"n":0},{"n":2},{"n":4}]'),
    ({"Transformation": "FLATTEN", "OutputType": "JSONL"}, b'0\n0\n2\n2\n4\n4\n'),
    ({"Transformation": "FLATTEN", "OutputType": "JSON"}, b"[0,0,2,2,4,4]"),
], ids=["COMPACT-JSONL", "COMPACT-JSON", "FLATTEN-JSONL", "FLATTEN-JSON"])
def test_result_writers_writer_config_writes_the_outputs_alone_flattened_or_not_as_json_or_jsonl(s3, config,
                                                                                                  succeeded):
    """ResultWriter's WriterConfig, DOCS + input-output-resultwriter.html: COMPACT writes each child execution's
    output, FLATTEN each element of an output that is an array, and a failed execution's record unchanged (as
    NONE writes it); OutputType JSON makes each file a JSON array, JSONL one entry a line. (The corpus pipeline
    writes COMPACT JSON Lines: its merge reads the batch outputs a line at a time, not every batch's input again.)"""
    put_lines(s3, [json.dumps({"odd": index % 2 == 1, "n": index, "pair": [index, index]}) for index in range(6)])
    child = copy.deepcopy(FAIL_ODD)
    child["Done"] = {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "End": True} if config["Transformation"] == \
        "COMPACT" else {"Type": "Pass", "OutputPath": "$.pair", "End": True}
    definition = map_definition(child, ToleratedFailureCount=3, MaxConcurrency=1, ResultWriter={
        "Resource": S3_PUT_OBJECT, "Parameters": {"Bucket": local_runner.RESULTS_BUCKET, "Prefix": "results"},
        "WriterConfig": config})
    definition["States"]["Items"]["ItemProcessor"]["StartAt"] = "Check"
    result = output(run(s3, definition, concurrency=1))

    def read(key):
        return s3.get_object(Bucket=local_runner.RESULTS_BUCKET, Key=key)["Body"].read()

    files = json.loads(read(result["ResultWriterDetails"]["Key"]))["ResultFiles"]
    assert read(files["SUCCEEDED"][0]["Key"]) == succeeded
    failed = read(files["FAILED"][0]["Key"])
    records = [json.loads(line) for line in failed.splitlines()] if config["OutputType"] == "JSONL" else \
        json.loads(failed)
    assert [(record["Status"], record["Error"], json.loads(record["Input"])["n"]) for record in records] == [
        ("FAILED", "Odd", 1), ("FAILED", "Odd", 3), ("FAILED", "Odd", 5)]


# ---- what the runner does not implement, refused by name before anything runs ------------------------------------


def edited(edit):
    definition = copy.deepcopy(local_runner.DEFINITION)
    edit(definition)
    return definition


MAP = ("States", "ScoreSegments")


def at(definition, *path):
    for step in path:
        definition = definition[step]
    return definition


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: at(d, *MAP, "ItemReader", "ReaderConfig").update(CSVHeaders=["a"]),
     "state ScoreSegments: the local runner does not implement ItemReader.ReaderConfig.CSVHeaders"),
    (lambda d: at(d, *MAP, "ItemReader", "ReaderConfig").update(InputType="CSV"),
     "state ScoreSegments: the local runner does not implement ItemReader.ReaderConfig.InputType CSV (only JSONL)"),
    (lambda d: at(d, *MAP, "ItemBatcher").update(MaxItemsPerBatchPath="$.n"),
     "state ScoreSegments: the local runner does not implement ItemBatcher.MaxItemsPerBatchPath"),
    (lambda d: at(d, *MAP, "ItemProcessor", "States", "ScoreBatch").update(TimeoutSeconds=60),
     "state ScoreBatch: the local runner does not implement TimeoutSeconds"),
    (lambda d: at(d, *MAP, "ItemProcessor", "States", "ScoreBatch").update(Bogus=1),
     "state ScoreBatch: the local runner does not implement Bogus"),
    (lambda d: at(d, *MAP, "ItemProcessor", "States", "ScoreBatch", "Parameters").update(
        {"Payload.$": "States.JsonPatch($, $.x)"}),
     "state ScoreBatch: the local runner does not implement the intrinsic function in Parameters.Payload.$ "
     "(States.JsonPatch is not an intrinsic function of the JSONPath language)"),
    (lambda d: at(d, *MAP, "ItemSelector").update({"item.$": "$..item"}),
     "state ScoreSegments: the local runner does not implement the JSONPath $..item in ItemSelector.item.$ "
     "(only reference paths: .name, ['name'], [index])"),
    (lambda d: at(d, "States").update(Wait={"Type": "Wait", "Seconds": -1, "End": True}),
     "state Wait: the local runner does not implement Seconds -1 (AWS requires an integer from 0 to 31622400)"),
    (lambda d: at(d, "States").update(Task={"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                                            "End": True}),
     "state Task: the local runner does not implement the Task resource 'arn:aws:states:::sqs:sendMessage' (only "
     "arn:aws:states:::lambda:invoke or a Lambda function's ARN)"),
    (lambda d: at(d, *MAP, "ItemProcessor", "ProcessorConfig").update(Mode="INLINE"),
     "state ScoreSegments: the local runner does not implement ItemProcessor.ProcessorConfig.Mode INLINE (only "
     "DISTRIBUTED)"),
    (lambda d: d.update(QueryLanguage="JSONata"),  # JSONPath's fields in a JSONata state: AWS refuses them too
     "state CheckInput: the local runner does not implement Parameters"),
    (lambda d: at(d, *MAP, "ResultWriter").update(WriterConfig={"OutputType": "CSV"}),
     'state ScoreSegments: the local runner does not implement ResultWriter.WriterConfig {"OutputType": "CSV"} '
     "(Transformation is one of NONE, COMPACT, FLATTEN, OutputType one of JSON, JSONL)"),
    (lambda d: at(d, *MAP, "ResultWriter").update(WriterConfig={"Transformation": "COMPACT", "Bogus": 1}),
     "state ScoreSegments: the local runner does not implement ResultWriter.WriterConfig.Bogus"),
    (lambda d: at(d, *MAP).update(ResultWriter={"WriterConfig": {"Transformation": "FLATTEN"}}),
     "state ScoreSegments: the local runner does not implement ResultWriter with WriterConfig alone (a preview: "
     "results not exported)"),
])
def test_an_edited_definition_with_what_the_runner_does_not_implement_is_refused_by_name_before_anything_runs(
        s3, edit, message):
    calls = []
    with pytest.raises(asl.NotImplementedByRunner) as refused:
        local_runner.machine(s3, lambda *call: calls.append(call), edited(edit))
    assert str(refused.value) == message and calls == []


def test_the_template_substitutes_local_arns_and_buckets_into_the_definition_as_sam_does():
    """SAM's DefinitionSubstitutions (the template's CorpusPipeline): ${ScoreBatchFunctionArn} becomes the function's
    ARN (here the local one `serve` answers to), ${CorpusBucket} the bucket, ${ResultsPrefix} its literal."""
    score_batch = at(local_runner.DEFINITION, *MAP, "ItemProcessor", "States", "ScoreBatch")
    assert score_batch["Parameters"]["FunctionName"] == \
        "arn:aws:lambda:us-east-1:123456789012:function:ScoreBatchFunction"
    assert at(local_runner.DEFINITION, *MAP, "ResultWriter", "Parameters") == {
        "Bucket": local_runner.RESULTS_BUCKET, "Prefix": "map-results"}
    assert local_runner.NAME == "local-corpus-pipeline" and "${" not in json.dumps(local_runner.DEFINITION)


def test_a_template_whose_substitution_the_runner_cannot_resolve_is_refused_by_name(tmp_path):
    template = (local_runner.TEMPLATE.read_text(encoding="utf-8")
                .replace("ResultsPrefix: map-results", "ResultsPrefix: !ImportValue SharedPrefix"))
    (tmp_path / "template.yaml").write_text(template, encoding="utf-8")
    (tmp_path / "statemachine").symlink_to(local_runner.TEMPLATE.parent / "statemachine")
    with pytest.raises(definitions.PipelineError, match=r"DefinitionSubstitutions.ResultsPrefix: the local runner does "
                                                     r'not resolve \{"Fn::ImportValue": "SharedPrefix"\}'):
        definitions.load_definition(tmp_path / "template.yaml")


SHAPES = [  # on 72c9660 each was a traceback (TypeError) or accepted; AWS rejects each
    (lambda d: d.update(StartAt=["ScoreSegments"]), "the definition: ", "whose StartAt names no state"),
    (lambda d: d.update(StartAt={"a": 1}), "the definition: ", "whose StartAt names no state"),
    (lambda d: d.update(Comment=5), "the definition: ", "a Comment that is not a string"),
    (lambda d: at(d, "States", "MergeReport").update(Retry=5), "state MergeReport: ", "Retry that is not a list"),
    (lambda d: at(d, "States", "MergeReport").update(Retry=None), "state MergeReport: ", "Retry that is not a list"),
    (lambda d: at(d, "States", "MergeReport").update(Catch=5), "state MergeReport: ", "Catch that is not a list"),
    (lambda d: at(d, *MAP).update(MaxConcurrency=10**30), "state ScoreSegments: ",
     "MaxConcurrency 1000000000000000000000000000000 (AWS requires an integer from 0 to 10000)"),
    (lambda d: at(d, *MAP).update(Label="x" * 1000), "state ScoreSegments: ", "(AWS requires at most 40 characters, "
     "without whitespace, brackets, wildcards, special or control characters)"),
    (lambda d: at(d, *MAP).update(ItemSelector="x"), "state ScoreSegments: ", "an ItemSelector that is not a JSON "
     "object"),
    (lambda d: at(d, *MAP, "ResultWriter", "Parameters").update(Prefix="a\ud800"), "the definition: ",
     "a string holding a lone surrogate (not UTF-8 text, which AWS requires)"),
    (lambda d: d["States"].update(C={"Type": "Choice", "Choices": [{"Variable": "$.a", "StringEquals": 5,
                                                                    "Next": "C"}]}),
     "state C: ", "Choices[0].StringEquals 5 (AWS requires a string)"),
    (lambda d: d["States"].update(C={"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": "yes",
                                                                    "Next": "C"}]}),
     "state C: ", 'Choices[0].IsPresent "yes" (AWS requires true or false)'),
    (lambda d: d["States"].update(C={"Type": "Choice", "Choices": [{"Variable": "$.a", "IsNull": True,
                                                                    "Next": ["C"]}]}),
     "state C: ", "Choices[0].Next ['C'], which names no state"),
    (lambda d: d["States"].update(C={"Type": "Choice", "Choices": [{"Variable": "$.a", "IsNull": True,
                                                                    "Next": "C"}], "Default": {"a": 1}}),
     "state C: ", "Default {'a': 1}, which names no state"),
]


@pytest.mark.parametrize(("edit", "where", "what"), SHAPES)
def test_a_malformed_definition_is_one_line_naming_the_state_and_field(s3, edit, where, what):
    """The definition's shapes, types and AWS's documented ranges (state-map-distributed.html: MaxConcurrency up to
    10,000, a Label of up to 40 characters; choice-state.html: each comparison's type) are checked when it is read,
    before anything runs, in one line."""
    with pytest.raises(asl.NotImplementedByRunner) as refused:
        local_runner.machine(s3, lambda *call: None, edited(edit))
    assert str(refused.value).startswith(where) and str(refused.value).endswith(what)


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "huge", "deep"])
def test_a_definition_file_is_read_with_a_bound_and_refused_in_one_line(tmp_path, target):
    """DefinitionUri naming /dev/zero (on 72c9660: a MemoryError after 10 s), a FIFO (it hung), a file past Step
    Functions' 1 MB definition quota, or JSON nested 10^5 deep: one line, at once."""
    import os

    paths = {"/dev/zero": "/dev/zero", "fifo": str(tmp_path / "fifo"), "huge": str(tmp_path / "huge.json"),
             "deep": str(tmp_path / "deep.json")}
    if target == "fifo":
        os.mkfifo(paths["fifo"])
    elif target == "huge":
        (tmp_path / "huge.json").write_text(" " * (1024 * 1024 + 1) + "{}", encoding="utf-8")
    elif target == "deep":
        (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    template = local_runner.TEMPLATE.read_text(encoding="utf-8").replace(
        "DefinitionUri: statemachine/corpus_pipeline.asl.json", f"DefinitionUri: {paths[target]}")
    assert paths[target] in template
    (tmp_path / "template.yaml").write_text(template, encoding="utf-8")
    expected = {"/dev/zero": "not a regular file", "fifo": "not a regular file", "huge": "larger than 1048576 bytes",
                "deep": "nested"}[target]
    with pytest.raises(definitions.PipelineError, match=expected):
        definitions.load_definition(tmp_path / "template.yaml")


# ---- the real definition drives the run ----------------------------------------------------------------------------


def pairs(count):
    return [(f"the cat sat on mat {index}", f"the cat sat on the mat {index}") for index in range(count)]


def run_real(s3, pipeline_handlers, definition, invoke=None, count=600):
    lines = [json.dumps({"hypothesis": h, "reference": r}) for h, r in pairs(count)]
    s3.put_object(Bucket="corpus", Key="inputs/test.jsonl", Body="\n".join(lines).encode())
    invoke = invoke or local_runner.in_process(dict(zip(("ScoreBatchFunction", "MergeReportFunction"),
                                                        pipeline_handlers)))
    return local_runner.machine(s3, invoke, definition).execute(local_runner.execution_input({"word_order": 2})), \
        invoke


def test_max_items_per_batch_in_the_definition_sets_the_batches_and_the_report_stays_exact(s3, pipeline_handlers):
    reports = []
    for size, batches in ((None, [256, 256, 88]), (100, [100] * 6)):
        definition = local_runner.DEFINITION if size is None else edited(
            lambda d, size=size: at(d, *MAP, "ItemBatcher").update(MaxItemsPerBatch=size))
        execution, invoke = run_real(s3, pipeline_handlers, definition)
        assert execution.status == "SUCCEEDED", execution
        assert [len(payload["Items"]) for name, payload in invoke.calls if name == "ScoreBatchFunction"] == batches
        reports.append(s3.get_object(Bucket="corpus", Key="reports/test.json")["Body"].read())
    assert reports[0] == reports[1]
    hypotheses, references = zip(*pairs(600))
    assert json.loads(reports[0]) == chrf_core.CHRF(word_order=2).corpus_score(hypotheses, [references]).to_dict(
        signature=True) | {"nrefs": 1}


def test_the_definitions_retry_absorbs_a_lambda_service_fault_and_without_it_the_execution_fails(
        s3, pipeline_handlers):
    handlers = local_runner.in_process(dict(zip(("ScoreBatchFunction", "MergeReportFunction"), pipeline_handlers)))
    faults = {"left": 1}

    def one_fault(function, payload):
        if "ScoreBatch" in function and faults["left"]:
            faults["left"] -= 1
            raise StatesError("Lambda.ServiceException", "Service unavailable")
        return handlers(function, payload)

    execution, _ = run_real(s3, pipeline_handlers, local_runner.DEFINITION, one_fault, count=10)
    assert execution.status == "SUCCEEDED", execution
    s3.delete_object(Bucket="corpus", Key="reports/test.json")
    faults["left"] = 1
    without_retry = edited(lambda d: at(d, *MAP, "ItemProcessor", "States", "ScoreBatch").pop("Retry"))
    execution, _ = run_real(s3, pipeline_handlers, without_retry, one_fault, count=10)
    assert (execution.status, execution.error) == ("FAILED", "States.ExceedToleratedFailureThreshold")
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")


def test_a_stopped_execution_ends_aborted_at_once_even_asleep_in_a_long_retry_back_off(s3):
    """StopExecution (and Ctrl-C of pipeline run --local) during a Retry's IntervalSeconds of 600: the wait is cut
    short and the execution ends ABORTED (on 72c9660 it slept on, still running 120 s later)."""
    import threading
    import time

    definition = {"StartAt": "T", "States": {"T": task(End=True, Retry=[
        {"ErrorEquals": ["Boom"], "IntervalSeconds": 600, "MaxAttempts": 3}])}}
    machine = local_runner.machine(s3, flaky(5, "Boom"), definition, sleep=None)
    control = states.Control()
    ended = []
    runner = threading.Thread(target=lambda: ended.append(machine.execute({}, "x", control)))
    runner.start()
    time.sleep(0.5)
    assert runner.is_alive()
    stopped = time.monotonic()
    control.stop.set()
    runner.join(30)
    assert time.monotonic() - stopped < 5 and ended[0].status == "ABORTED"


@pytest.mark.parametrize("loop", [
    {"StartAt": "L", "States": {"L": {"Type": "Pass", "Next": "L"}}},
    {"StartAt": "C", "States": {"C": {"Type": "Choice", "Choices": [
        {"Variable": "$.x", "IsPresent": True, "Next": "C"}], "Default": "C"}}},
], ids=["Pass", "Choice"])
def test_a_standard_execution_that_never_ends_fails_at_awss_history_quota(s3, loop):
    """DOCS + service-quotas.html: a Standard execution's history holds at most 25,000 events, and the execution
    fails when it reaches them (on 72c9660 a Pass or Choice looping on itself ran at 100% CPU until killed)."""
    execution = run(s3, loop, {})
    assert (execution.status, execution.error) == ("FAILED", "States.Runtime")
    assert "25000 events" in execution.cause


def test_an_express_child_that_never_ends_times_out_at_its_duration(s3, monkeypatch):
    """DOCS + service-quotas.html: an Express execution runs at most five minutes (shortened here), then it times
    out: the Map counts its items as failed (on 72c9660 a looping child never ended)."""
    monkeypatch.setattr(execution_module, "EXPRESS_DURATION", 0.5)
    put_lines(s3, ['{"n": 1}'])
    execution = run(s3, map_definition({"Child": {"Type": "Pass", "Next": "Child"}}))
    assert (execution.status, execution.error) == ("FAILED", "States.ExceedToleratedFailureThreshold")


@pytest.mark.parametrize(("payload", "expected"), [
    ("$", lambda batch: batch), ("$.Items", lambda batch: batch["Items"]),
    ("$.Items[0]", lambda batch: batch["Items"][0])])
def test_a_lambda_task_gets_its_payload_as_compact_utf8_json_whether_passed_whole_or_in_part(s3, payload, expected):
    """A child's input passed on whole ("Payload.$": "$", the template's ScoreBatch) is sent as the bytes the batch
    was spooled as, not decoded and encoded again; a part of it is encoded. Either way: compact JSON in UTF-8 (a
    lone surrogate escaped), equal to the value Step Functions would pass."""
    items = [{"text": "aé中😀\n\"\\"}, {"text": "b\udc00"}, {"n": 1.5e300, "t": True, "z": None}]
    put_lines(s3, [json.dumps(item) for item in items])
    sent = []

    def invoke(function, data):
        sent.append(data)
        return LambdaAnswer(b"{}", None, "request")

    child = {"Child": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
                       "Parameters": {"FunctionName": "F", "Payload.$": payload}, "End": True}}
    definition = map_definition(child, ItemBatcher={"MaxItemsPerBatch": 2})
    output(run(s3, definition, invoke=invoke))
    first, second = (expected(batch) for batch in ({"Items": items[:2]}, {"Items": items[2:]}))
    decoded = [json.loads(data.decode("utf-8")) for data in sent]  # (the children run in any order)
    assert sorted(decoded, key=repr) == sorted([first, second], key=repr)
    assert sent[decoded.index(second)] == json.dumps(second, ensure_ascii=False, separators=(",", ":")).encode()
