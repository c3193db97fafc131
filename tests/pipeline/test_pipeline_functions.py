"""The batch and merge functions against moto S3, driven by the state machine's own definition (the local runner:
tests/pipeline/local_runner.py), and the merge's proofs on results made by hand."""

import json
import random
import re

import chrf_core
import lambda_handlers
import local_runner
import pytest
from aws_stand_ins import MAP_RUNS
from hypothesis import given, settings
from jsonschema import Draft202012Validator
from naive_chrf import naive_score
from support import ROOT, requests_strategy

CORPUS_SCHEMA = Draft202012Validator(json.loads((ROOT / "spec" / "corpus-report.schema.json").read_text()))
DATA = ROOT / "tests" / "data" / "popovic"


def put_jsonl(s3, key, pairs, extra_lines=()):
    lines = [json.dumps({"hypothesis": h, "reference": r}, ensure_ascii=False) for h, r in pairs]
    s3.put_object(Bucket="corpus", Key=key, Body=("\n".join([*lines, *extra_lines]) + "\n").encode("utf-8"))


def handlers_by_name(pipeline_handlers):
    return dict(zip(("ScoreBatchFunction", "MergeReportFunction"), pipeline_handlers))


def run_pipeline(s3, handlers, pairs, settings_=None, extra_lines=()):
    """One execution of the state machine on these pairs (plus raw JSON Lines): the Execution."""
    put_jsonl(s3, "inputs/test.jsonl", pairs, extra_lines)
    machine = local_runner.machine(s3, local_runner.in_process(handlers_by_name(handlers)))
    return machine.execute(local_runner.execution_input(settings_))


def real_pairs(count):
    pairs = []
    for language in ("en", "cs", "ru", "zh"):
        hyps = (DATA / f"example.hyp.{language}").read_text(encoding="utf-8").splitlines()
        refs = (DATA / f"example.ref.{language}").read_text(encoding="utf-8").splitlines()
        pairs += zip(hyps, refs)
    rng = random.Random(7)
    return [pairs[rng.randrange(len(pairs))] for _ in range(count)]


def test_pipeline_report_in_s3_equals_scoring_the_whole_test_set_at_once(s3, pipeline_handlers):
    pairs = real_pairs(600)  # several batches: 256 items or 64 KB, whichever comes first
    request_settings = {"word_order": 2, "beta": 2}
    execution = run_pipeline(s3, pipeline_handlers, pairs, request_settings)
    report = json.loads(s3.get_object(Bucket="corpus", Key="reports/test.json")["Body"].read())
    hyps, refs = [h for h, _ in pairs], [r for _, r in pairs]
    direct = chrf_core.CHRF(**request_settings).corpus_score(hyps, [refs]).to_dict()
    assert direct == chrf_core.CHRF(**request_settings).corpus_score(iter(hyps), iter(refs)).to_dict()
    # the contract's object, then the signature, the normalization and nrefs, as score --json gives them
    assert report == chrf_core.Report.signed(direct, chrf_core.CHRF(**request_settings), 1)
    assert list(report)[-3:] == ["signature", "normalize", "nrefs"]
    assert report["segment_count"] == 600
    assert execution.status == "SUCCEEDED", execution
    assert json.loads(execution.output) == {"report": {"bucket": "corpus", "key": "reports/test.json"},
                                            "segment_count": 600, "score": direct["score"]}
    CORPUS_SCHEMA.validate(report)


@settings(max_examples=25, deadline=None)
@given(requests_strategy(max_segments=8))
def test_pipeline_equals_single_request_on_generated_unicode(pipeline_handlers, request):
    from aws_stand_ins import moto_aws

    with moto_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="corpus")
        s3.create_bucket(Bucket=local_runner.RESULTS_BUCKET)
        request_settings = {k: v for k, v in request.items() if k not in ("hypotheses", "references")}
        execution = run_pipeline(s3, pipeline_handlers, list(zip(request["hypotheses"], request["references"])),
                                 request_settings)
        assert execution.status == "SUCCEEDED", execution
        report = json.loads(s3.get_object(Bucket="corpus", Key="reports/test.json")["Body"].read())
    contract = {key: value for key, value in report.items() if key not in ("signature", "normalize", "nrefs")}
    assert contract == chrf_core.score(request) == naive_score(request)


def test_score_batch_returns_the_counts_of_its_segments_and_their_lines(pipeline_handlers):
    score_batch, _ = pipeline_handlers
    items = [{"line": 10 + i, "item": {"hypothesis": h, "reference": r}} for i, (h, r) in enumerate(real_pairs(5))]
    result = score_batch({"BatchInput": {"settings": {"char_order": 4}}, "Items": items},
                         lambda_handlers.LambdaContext())
    expected = chrf_core.service.compute_counts(
        {"hypotheses": [i["item"]["hypothesis"] for i in items],
         "references": [i["item"]["reference"] for i in items], "char_order": 4}
    )
    assert result == {"first_line": 11, "last_line": 15, "counts": expected.to_dict()}


@pytest.mark.parametrize(
    ("bad_line", "field", "message"),
    [
        ('{"hypothesis": "a"}', None, "line 301: must be a JSON object with exactly the keys hypothesis and reference"),
        ('["a", "b"]', None, "line 301: must be a JSON object"),
        ('{"hypothesis": 3, "reference": "b"}', "hypotheses", "line 301 (hypothesis): must be a string"),
        ('{"hypothesis": "\\ud800", "reference": "b"}', "hypotheses", "line 301 (hypothesis): must not contain a lone"),
    ],
)
def test_invalid_line_fails_with_invalid_input_error_naming_it_and_writes_no_report(
    s3, pipeline_handlers, bad_line, field, message
):
    pairs = real_pairs(300)
    execution = run_pipeline(s3, pipeline_handlers, pairs,
                             extra_lines=[bad_line, '{"hypothesis": "x", "reference": "y"}'])
    body = local_runner.error_body(execution)
    assert body["message"].startswith(message) and body["line"] == 301, body
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")


def test_of_several_invalid_lines_in_different_batches_the_first_is_reported(s3, pipeline_handlers):
    pairs = real_pairs(700)
    lines = [json.dumps({"hypothesis": h, "reference": r}, ensure_ascii=False) for h, r in pairs]
    lines[650] = '{"hypothesis": null, "reference": "b"}'
    lines[420] = '{"reference": "b"}'
    s3.put_object(Bucket="corpus", Key="inputs/test.jsonl", Body="\n".join(lines).encode("utf-8"))
    invoke = local_runner.in_process(handlers_by_name(pipeline_handlers))
    execution = local_runner.machine(s3, invoke).execute(local_runner.execution_input())
    body = local_runner.error_body(execution)
    assert body["message"].startswith("line 421: ") and body["line"] == 421
    batches = [[item["line"] for item in payload["Items"]] for name, payload in invoke.calls
               if name == "ScoreBatchFunction"]
    assert [number for number, lines in enumerate(batches) if 420 in lines or 650 in lines] == [2, 3]


def test_invalid_settings_fail_the_execution_naming_the_setting_before_any_batch(s3, pipeline_handlers):
    refused = run_pipeline(s3, pipeline_handlers, real_pairs(3), {"beta": 0})
    assert local_runner.error_body(refused)["message"] == "beta: must be an integer from 1 to 16, got 0"
    refused = run_pipeline(s3, pipeline_handlers, real_pairs(3), {"bogus": 1})
    assert local_runner.error_body(refused)["message"].startswith("settings: unknown key (named in field)")


def test_a_setting_key_of_lone_surrogates_fails_with_a_deliverable_error(pipeline_handlers):
    score_batch, _ = pipeline_handlers
    batch = {"BatchInput": {"settings": {"\ud800" * 3: 1}}, "Items": [{"line": 0, "item": {"hypothesis": "a",
                                                                                         "reference": "a"}}]}
    with pytest.raises(Exception) as caught:
        score_batch(batch, lambda_handlers.LambdaContext())
    payload = {"errorType": type(caught.value).__name__, "errorMessage": str(caught.value)}
    json.dumps(payload, ensure_ascii=False).encode("utf-8")
    assert json.loads(payload["errorMessage"])["field"] == "\\ud800" * 3


def test_empty_jsonl_object_is_invalid_input(s3, pipeline_handlers):
    assert local_runner.error_body(run_pipeline(s3, pipeline_handlers, []))["message"] == \
        "input: the JSON Lines object holds no segments"


# ---- the merge proves the report covers the input exactly once ------------------------------------------------


def batch_output(first, pairs, settings_=None):
    request = {"hypotheses": [h for h, _ in pairs], "references": [r for _, r in pairs], **(settings_ or {})}
    return {"first_line": first, "last_line": first + len(pairs) - 1,
            "counts": chrf_core.service.compute_counts(request).to_dict()}


def record(output, status="SUCCEEDED"):
    return {"ExecutionArn": "arn:aws:states:us-east-1:123456789012:execution:child:x", "Status": status,
            "Input": "{}", "Output": json.dumps(output)}


def write_results(s3, files, failed=(), lines_read=None):
    """ResultWriter's layout for given result files (name -> records); the manifest's details for the merge."""
    keys = []
    for name, records in files.items():
        key = f"map-results/run/{name}"
        if records is not None:
            body = records if isinstance(records, bytes) else json.dumps(records).encode()
            s3.put_object(Bucket="corpus", Key=key, Body=body)
        keys.append({"Key": key, "Size": 1})
    manifest = {"DestinationBucket": "corpus", "ResultFiles": {"SUCCEEDED": keys, "FAILED": list(failed),
                                                               "PENDING": []}}
    s3.put_object(Bucket="corpus", Key="map-results/run/manifest.json", Body=json.dumps(manifest).encode())
    details = {"ResultWriterDetails": {"Bucket": "corpus", "Key": "map-results/run/manifest.json"}}
    if lines_read is not None:
        arn = f"arn:aws:states:us-east-1:123456789012:mapRun:corpus-pipeline/ScoreSegments:{len(MAP_RUNS)}"
        MAP_RUNS[arn] = {"itemCounts": {"total": lines_read, "succeeded": lines_read, "failed": 0}}
        details["MapRunArn"] = arn
    return details


def merge(pipeline_handlers, map_result, settings_=None):
    _, merge_report = pipeline_handlers
    event = {"input": {"bucket": "corpus", "key": "inputs/x.jsonl"}, "settings": settings_ or {},
             "output": {"bucket": "corpus", "key": "reports/x.json"}, "map_result": map_result}
    return merge_report(event, lambda_handlers.LambdaContext())


PAIRS = real_pairs(6)


def inconsistent(s3, pipeline_handlers, map_result, match, settings_=None):
    with pytest.raises(Exception) as caught:
        merge(pipeline_handlers, map_result, settings_)
    assert type(caught.value).__name__ == "InconsistentResultsError", repr(caught.value)
    assert re.search(match, str(caught.value)), str(caught.value)
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")


@pytest.mark.parametrize(("execution", "message"), [
    ({"input": {"bucket": "corpus", "key": "inputs/x.jsonl"}, "settings": {"word_order": 9},
      "output": {"bucket": "corpus", "key": "r.json"}}, "word_order: must be an integer from 0 to 4, got 9"),
    ({"input": {"bucket": "corpus", "key": "inputs/x.jsonl"}, "settings": {}}, "output: must be an object with "
                                                                               "string bucket and key"),
    ({"input": {"bucket": "Corpus", "key": "x"}, "settings": {}, "output": {"bucket": "corpus", "key": "r.json"}},
     "input: bucket must be an S3 bucket name"),
    ({"input": {"bucket": "corpus", "key": "x"}, "settings": {"beta": 3, "colour": "red"},
      "output": {"bucket": "corpus", "key": "r.json"}}, "settings: unknown key"),
    ([], "the execution input must be an object with input, settings and output"),
])
def test_the_check_refuses_an_execution_input_before_anything_is_read(s3, pipeline_handlers, execution, message):
    _, merge_report = pipeline_handlers
    answer = merge_report({"check": execution}, lambda_handlers.LambdaContext())
    assert answer["error"] == "InvalidInputError" and message in answer["message"], answer


def test_the_check_passes_a_valid_execution_input_and_reads_nothing(s3, pipeline_handlers):
    _, merge_report = pipeline_handlers
    execution = {"input": {"bucket": "corpus", "key": "inputs/none-yet.jsonl"}, "settings": {"word_order": 2},
                 "output": {"bucket": "corpus", "key": "reports/x.json"}}
    assert merge_report({"check": execution}, lambda_handlers.LambdaContext()) == {
        "checked": True, "settings": chrf_core.CHRF(word_order=2).as_dict()}


def test_the_merge_writes_a_report_for_results_that_tile_every_line_once(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(4, PAIRS[3:])), record(batch_output(1, PAIRS[:3]))]}
    result = merge(pipeline_handlers, write_results(s3, files, lines_read=6))
    whole = {"hypotheses": [h for h, _ in PAIRS], "references": [r for _, r in PAIRS]}
    assert result["segment_count"] == 6 and result["score"] == chrf_core.score(whole)["score"]


def test_the_merge_refuses_a_result_file_listed_twice(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS[:3]))]}
    details = write_results(s3, files)
    manifest = json.loads(s3.get_object(Bucket="corpus", Key="map-results/run/manifest.json")["Body"].read())
    manifest["ResultFiles"]["SUCCEEDED"] *= 2
    s3.put_object(Bucket="corpus", Key="map-results/run/manifest.json", Body=json.dumps(manifest).encode())
    inconsistent(s3, pipeline_handlers, details, r"SUCCEEDED_0.json is listed twice")


def test_the_merge_refuses_a_gap_in_the_lines(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS[:2])), record(batch_output(4, PAIRS[3:]))]}
    inconsistent(s3, pipeline_handlers, write_results(s3, files), r"lines 3-3 are in no batch result")


def test_the_merge_refuses_results_that_do_not_start_at_line_1(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(2, PAIRS[:2]))]}
    inconsistent(s3, pipeline_handlers, write_results(s3, files), r"lines 1-1 are in no batch result")


def test_the_merge_refuses_overlapping_ranges(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS[:3])), record(batch_output(3, PAIRS[2:]))]}
    inconsistent(s3, pipeline_handlers, write_results(s3, files), r"\(lines 3-6\) overlaps .*\(lines 1-3\)")


def test_the_merge_refuses_a_missing_last_batch_by_the_map_runs_own_count(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS[:3]))]}
    inconsistent(s3, pipeline_handlers, write_results(s3, files, lines_read=6), r"read 6 lines but .* cover 3")


def test_the_merge_refuses_a_segment_count_other_than_the_lines_of_its_batch(s3, pipeline_handlers):
    output = batch_output(1, PAIRS[:3])
    output["last_line"] = 4
    inconsistent(s3, pipeline_handlers, write_results(s3, {"SUCCEEDED_0.json": [record(output)]}),
                 r"record 1 \(lines 1-4\): segment_count 3 but 4 lines")


def test_the_merge_refuses_a_batch_scored_with_other_settings(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS, {"beta": 3}))]}
    inconsistent(s3, pipeline_handlers, write_results(s3, files), r"other settings", {"beta": 2})


def test_the_merge_refuses_a_record_that_did_not_succeed(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS), status="FAILED")]}
    inconsistent(s3, pipeline_handlers, write_results(s3, files), r"record 1: status FAILED")


def test_the_merge_refuses_failed_or_pending_result_files(s3, pipeline_handlers):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS))]}
    details = write_results(s3, files, failed=[{"Key": "map-results/run/FAILED_0.json", "Size": 1}])
    inconsistent(s3, pipeline_handlers, details, r"FAILED results")


@pytest.mark.parametrize(
    ("orders", "match"),
    [
        ([[5, 5, 6]] + [[0, 0, 0]] * 5, r"char 1: 6 matches but 5 hypothesis"),
        ([[5, 5, 1], [5, 6, 1]] + [[0, 0, 0]] * 4, r"char 2: more n-grams or matches than order 1"),
        ([[5, 5, 1], [4, 4, 2]] + [[0, 0, 0]] * 4, r"char 2: more n-grams or matches than order 1"),
    ],
)
def test_the_merge_refuses_impossible_per_order_counts(s3, pipeline_handlers, orders, match):
    output = batch_output(1, PAIRS[:1])
    output["counts"]["orders"] = orders
    inconsistent(s3, pipeline_handlers, write_results(s3, {"SUCCEEDED_0.json": [record(output)]}), match)


@pytest.mark.parametrize(
    ("segment_count", "orders", "match"),
    [
        (1, [[10**40, 10**40, 0]] + [[10**40 - n, 10**40 - n, 0] for n in range(1, 6)],
         r"20{40} char unigrams, more than the code points of a batch's texts"),
        (1, [[9, 9, 0]] * 6, r"char 2: hypothesis n-grams do not fall from order 1 \(9\)"),
        (1, [[13, 13, 0], [9, 12, 0], [8, 11, 0], [7, 10, 0], [6, 9, 0], [5, 8, 0]],
         r"char 2: hypothesis n-grams fall by 4 from order 1, more than the 1 segments"),
        (300, [[600, 600, 0], [300, 300, 0]] + [[0, 0, 0]] * 4, r"300 segments, more than a batch of at most 256"),
    ],
)
def test_the_merge_refuses_counts_that_no_batch_could_have_produced(s3, pipeline_handlers, segment_count, orders,
                                                                    match):
    output = batch_output(1, PAIRS[:1])
    output["counts"]["orders"], output["counts"]["segment_count"] = orders, segment_count
    output["last_line"] = segment_count
    inconsistent(s3, pipeline_handlers, write_results(s3, {"SUCCEEDED_0.json": [record(output)]}), match)


def test_the_merge_refuses_more_word_tokens_than_characters(s3, pipeline_handlers):
    output = batch_output(1, PAIRS[:1], {"word_order": 1, "char_order": 1})
    output["counts"]["orders"] = [[9, 9, 0], [500, 2, 0]]
    inconsistent(s3, pipeline_handlers, write_results(s3, {"SUCCEEDED_0.json": [record(output)]}),
                 r"word 1: 500 hypothesis tokens from 9 characters")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"not json", r"is not valid JSON"),
        (None, r"does not exist"),
        ({"not": "a list"}, r"record 1: not a batch result"),
        (b'{"first_line": 1, "last_line": 1, "counts": {}}\n{"Status": "FAILED"}\n', r"record 2: status FAILED"),
        (b'{"first_line": 1, "last_line": 1, "counts": {}}\n{not json\n', r"line 2 is not valid JSON"),
        ([{"Status": "SUCCEEDED", "Output": "{not json"}], r"Output is not a JSON string"),
        ([{"Status": "SUCCEEDED"}], r"Output is not a JSON string"),
        ([record({"first_line": 1})], r"not a batch result"),
        ([record({"first_line": "1", "last_line": 1, "counts": {}})], r"first_line and last_line"),
        ([record({"first_line": 1, "last_line": 1, "counts": {"orders": []}})], r"counts: expected an object"),
        ([record({"invalid_input": {"Error": "Boom", "Cause": "{}"}})], r"not an InvalidInputError"),
        ([record({"invalid_input": "oops"})], r"not an InvalidInputError"),
        (["a string"], r"not a batch result"),
    ],
)
def test_malformed_results_fail_with_the_named_error_never_a_raw_exception(s3, pipeline_handlers, content, match):
    if isinstance(content, (list, dict)):
        content = json.dumps(content).encode()
    inconsistent(s3, pipeline_handlers, write_results(s3, {"SUCCEEDED_0.json": content}), match)


@pytest.mark.parametrize("map_result", [None, 5, {"ResultWriterDetails": "x"}, {"ResultWriterDetails": {}}])
def test_a_map_result_of_the_wrong_shape_fails_with_the_named_error(s3, pipeline_handlers, map_result):
    inconsistent(s3, pipeline_handlers, map_result, r"map_result")


def test_the_merge_writes_nothing_and_logs_no_keys_or_texts(s3, pipeline_handlers, captured_logs):
    files = {"SUCCEEDED_0.json": [record(batch_output(1, PAIRS))]}
    merge(pipeline_handlers, write_results(s3, files, lines_read=6))
    logs = captured_logs.getvalue()
    assert "map-results" not in logs and "reports/x.json" not in logs
    assert not any(text[:12] in logs for pair in PAIRS for text in pair if len(text) >= 12)


def test_corpus_report_schema_is_the_contract_output_schema_without_the_segment_cap():
    import copy

    from support import CONTRACT

    corpus = json.loads((ROOT / "spec" / "corpus-report.schema.json").read_text(encoding="utf-8"))
    expected = copy.deepcopy(CONTRACT["output_schema"])
    del expected["properties"]["segment_count"]["maximum"]
    signed = {name: corpus["properties"].pop(name) for name in ("signature", "normalize", "nrefs")}
    assert {k: v for k, v in corpus.items() if k not in ("$schema", "$id", "title", "description")} == expected
    assert signed["signature"] == {"type": "string", "minLength": 1}  # beyond the contract, optional, as score --json
    assert not set(signed) & set(expected["required"])


def test_a_batchs_unknown_setting_key_is_not_logged_but_a_known_field_is(pipeline_handlers, captured_logs):
    score_batch, _ = pipeline_handlers
    item = {"line": 0, "item": {"hypothesis": "a", "reference": "a"}}
    for settings_, named in (({"CONFIDENTIAL pasted": 1}, "<unknown key>"), ({"beta": 0}, "beta")):
        with pytest.raises(chrf_core.InvalidInputError):
            score_batch({"BatchInput": {"settings": settings_}, "Items": [item]}, lambda_handlers.LambdaContext())
        logged = [json.loads(line) for line in captured_logs.getvalue().splitlines() if '"invalid batch"' in line]
        assert logged[-1]["field"] == named
    assert "CONFIDENTIAL" not in captured_logs.getvalue()


@pytest.mark.parametrize(("output", "problem"), [
    ({"bucket": "corpus", "key": "reports/\ud800.json"}, "no lone surrogate"),
    ({"bucket": "corpus", "key": "k" * 1025}, "at most 1024 UTF-8 bytes"),
    ({"bucket": "corpus", "key": ""}, "non-empty"),
    ({"bucket": "Not_A_Bucket", "key": "reports/x.json"}, "S3 bucket name"),
    ({"bucket": "\ud800bad", "key": "reports/x.json"}, "S3 bucket name"),
    ({"bucket": 5, "key": "reports/x.json"}, "S3 bucket name"),
    ("s3://corpus/x", "must be an object"),
])
def test_the_merge_refuses_an_output_location_s3_cannot_hold_as_invalid_input(pipeline_handlers, output, problem):
    _, merge = pipeline_handlers
    event = {"input": {"bucket": "corpus", "key": "inputs/x.jsonl"}, "settings": {}, "output": output,
             "map_result": []}
    answer = merge(event, lambda_handlers.LambdaContext())  # answered as data, which the Choice fails
    assert answer["error"] == "InvalidInputError" and answer["field"] == "output" and problem in answer["message"]
    json.dumps(answer, ensure_ascii=False).encode("utf-8")  # deliverable


@pytest.mark.parametrize("map_result", [
    {"MapRunArn": None, "ResultWriterDetails": {"Bucket": "corpus", "Key": "map-results/\udfff/manifest.json"}},
    {"MapRunArn": "arn:aws:states:us-east-1:123456789012:mapRun:\ud800", "ResultWriterDetails": {
        "Bucket": "corpus", "Key": "map-results/manifest.json"}},
])
def test_the_merge_refuses_map_results_that_cannot_name_s3_objects_or_a_map_run(s3, pipeline_handlers, map_result):
    _, merge = pipeline_handlers
    s3.put_object(Bucket="corpus", Key="map-results/manifest.json",
                  Body=json.dumps({"DestinationBucket": "corpus", "ResultFiles": {"SUCCEEDED": []}}))
    event = {"input": {"bucket": "corpus", "key": "inputs/x.jsonl"}, "settings": {},
             "output": {"bucket": "corpus", "key": "reports/x.json"}, "map_result": map_result}
    with pytest.raises(Exception) as caught:
        merge(event, lambda_handlers.LambdaContext())
    assert type(caught.value).__name__ == "InconsistentResultsError"


def test_the_merge_holds_line_ranges_and_a_running_sum_not_the_batches(s3, pipeline_handlers):
    """Issue 65: the merge held every batch's output and counts until all were read, so a run's peak grew with the
    corpus (5 x 10^6 lines: the merge's environment 44 MB to 162 MB). 20,000 batch results in a JSONL result file:
    the merge's own allocations peak at about three times the 7 MB file (22 MB; holding the batches took 71 MB)."""
    import tracemalloc

    one = batch_output(1, PAIRS[:1])
    line = json.dumps(one).encode()
    body = b"\n".join(line.replace(b'"first_line": 1, "last_line": 1', f'"first_line": {n}, "last_line": {n}'.encode())
                      for n in range(1, 20_001))
    details = write_results(s3, {"SUCCEEDED_0.json": body}, lines_read=20_000)
    tracemalloc.start()
    try:
        answer = merge(pipeline_handlers, details)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answer["segment_count"] == 20_000
    assert peak < 3 * len(body) + 16 * 2**20, f"{peak / 2**20:.0f} MB for a {len(body) / 2**20:.0f} MB result file"
