"""The batch and merge functions against moto S3, driven the way the Distributed Map drives them."""

import json
import random

import chrf_core
import pytest
from chrf_components_cli import local_lambda
from distributed_map import DEFINITION_PATH, run_map
from hypothesis import given, settings
from jsonschema import Draft202012Validator
from naive_chrf import naive_score
from support import ROOT, requests_strategy

DEFINITION = json.loads((ROOT / DEFINITION_PATH).read_text(encoding="utf-8"))
CORPUS_SCHEMA = Draft202012Validator(json.loads((ROOT / "spec" / "corpus-report.schema.json").read_text()))
DATA = ROOT / "tests" / "data" / "popovic"


def put_jsonl(s3, key, pairs, extra_lines=()):
    lines = [json.dumps({"hypothesis": h, "reference": r}, ensure_ascii=False) for h, r in pairs]
    s3.put_object(Bucket="corpus", Key=key, Body=("\n".join([*lines, *extra_lines]) + "\n").encode("utf-8"))


def run_pipeline(s3, handlers, pairs, settings_=None, extra_lines=()):
    score_batch, merge_report = handlers
    put_jsonl(s3, "inputs/test.jsonl", pairs, extra_lines)
    execution_input = {
        "input": {"bucket": "corpus", "key": "inputs/test.jsonl"},
        "settings": settings_ or {},
        "output": {"bucket": "corpus", "key": "reports/test.json"},
    }
    context = local_lambda.LambdaContext()
    map_result = run_map(s3, score_batch, context, execution_input, "corpus", "map-results", DEFINITION)
    return merge_report({**execution_input, "map_result": map_result}, context)


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
    result = run_pipeline(s3, pipeline_handlers, pairs, request_settings)
    report = json.loads(s3.get_object(Bucket="corpus", Key="reports/test.json")["Body"].read())
    hyps, refs = [h for h, _ in pairs], [r for _, r in pairs]
    direct = chrf_core.build_report(chrf_core.count_segments(hyps, refs, chrf_core.parse_settings(request_settings)))
    assert report == direct
    assert report["segment_count"] == 600
    assert result == {"report": {"bucket": "corpus", "key": "reports/test.json"}, "segment_count": 600,
                      "score": direct["score"]}
    CORPUS_SCHEMA.validate(report)


@settings(max_examples=25, deadline=None)
@given(requests_strategy(max_segments=8))
def test_pipeline_equals_single_request_on_generated_unicode(pipeline_handlers, request):
    from moto import mock_aws

    with mock_aws():
        import boto3

        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="corpus")
        request_settings = {k: v for k, v in request.items() if k not in ("hypotheses", "references")}
        run_pipeline(s3, pipeline_handlers, list(zip(request["hypotheses"], request["references"])), request_settings)
        report = json.loads(s3.get_object(Bucket="corpus", Key="reports/test.json")["Body"].read())
    assert report == chrf_core.score(request) == naive_score(request)


def test_score_batch_returns_the_counts_of_its_segments_and_their_lines(pipeline_handlers):
    score_batch, _ = pipeline_handlers
    items = [{"line": 10 + i, "item": {"hypothesis": h, "reference": r}} for i, (h, r) in enumerate(real_pairs(5))]
    result = score_batch({"BatchInput": {"settings": {"char_order": 4}}, "Items": items}, local_lambda.LambdaContext())
    expected = chrf_core.compute_counts(
        {"hypotheses": [i["item"]["hypothesis"] for i in items],
         "references": [i["item"]["reference"] for i in items], "char_order": 4}
    )
    assert result == {"first_line": 11, "last_line": 15, "counts": expected.to_dict()}


@pytest.mark.parametrize(
    ("bad_line", "field", "message"),
    [
        ('{"hypothesis": "a"}', None, "line 301: must be a JSON object with exactly the keys hypothesis and reference"),
        ('["a", "b"]', None, "line 301: must be a JSON object"),
        ('{"hypothesis": 3, "reference": "b"}', "hypotheses", "line 301: hypothesis must be a string"),
        ('{"hypothesis": "\\ud800", "reference": "b"}', "hypotheses", "line 301 (hypothesis): must not contain a lone"),
    ],
)
def test_invalid_line_fails_with_invalid_input_error_naming_it_and_writes_no_report(
    s3, pipeline_handlers, bad_line, field, message
):
    pairs = real_pairs(300)
    with pytest.raises(Exception) as caught:
        run_pipeline(s3, pipeline_handlers, pairs, extra_lines=[bad_line, '{"hypothesis": "x", "reference": "y"}'])
    assert type(caught.value).__name__ == "InvalidInputError"
    assert caught.value.field == field and caught.value.message.startswith(message), caught.value.message
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")


def test_of_several_invalid_lines_in_different_batches_the_first_is_reported(s3, pipeline_handlers):
    pairs = real_pairs(700)
    lines = [json.dumps({"hypothesis": h, "reference": r}, ensure_ascii=False) for h, r in pairs]
    lines[650] = '{"hypothesis": null, "reference": "b"}'
    lines[420] = '{"reference": "b"}'
    s3.put_object(Bucket="corpus", Key="inputs/test.jsonl", Body="\n".join(lines).encode("utf-8"))
    score_batch, merge_report = pipeline_handlers
    execution_input = {"input": {"bucket": "corpus", "key": "inputs/test.jsonl"}, "settings": {},
                       "output": {"bucket": "corpus", "key": "reports/test.json"}}
    context = local_lambda.LambdaContext()
    map_result = run_map(s3, score_batch, context, execution_input, "corpus", "map-results", DEFINITION)
    with pytest.raises(Exception) as caught:
        merge_report({**execution_input, "map_result": map_result}, context)
    assert caught.value.message.startswith("line 421: ")


def test_invalid_settings_fail_the_execution_naming_the_setting(s3, pipeline_handlers):
    with pytest.raises(Exception) as caught:
        run_pipeline(s3, pipeline_handlers, real_pairs(3), {"beta": 0})
    assert type(caught.value).__name__ == "InvalidInputError" and caught.value.field == "beta"
    with pytest.raises(Exception) as caught:
        run_pipeline(s3, pipeline_handlers, real_pairs(3), {"bogus": 1})
    assert caught.value.field == "bogus"


def test_empty_jsonl_object_is_invalid_input(s3, pipeline_handlers):
    with pytest.raises(Exception) as caught:
        run_pipeline(s3, pipeline_handlers, [])
    assert "holds no segments" in caught.value.message


def test_merge_fails_without_writing_when_the_manifest_is_missing(s3, pipeline_handlers):
    _, merge_report = pipeline_handlers
    event = {"output": {"bucket": "corpus", "key": "reports/x.json"},
             "map_result": {"ResultWriterDetails": {"Bucket": "corpus", "Key": "map-results/nope/manifest.json"}}}
    with pytest.raises(Exception) as caught:
        merge_report(event, local_lambda.LambdaContext())
    assert "NoSuchKey" in str(caught.value)
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")


def test_merge_rejects_malformed_result_files_and_failed_batches(s3, pipeline_handlers):
    _, merge_report = pipeline_handlers
    s3.put_object(Bucket="corpus", Key="map-results/r/SUCCEEDED_0.json", Body=b"not json")
    succeeded = [{"Key": "map-results/r/SUCCEEDED_0.json"}]
    manifest = {"DestinationBucket": "corpus", "ResultFiles": {"SUCCEEDED": succeeded}}
    s3.put_object(Bucket="corpus", Key="map-results/r/manifest.json", Body=json.dumps(manifest).encode())
    event = {"output": {"bucket": "corpus", "key": "reports/x.json"},
             "map_result": {"ResultWriterDetails": {"Bucket": "corpus", "Key": "map-results/r/manifest.json"}}}
    with pytest.raises(ValueError, match="is not valid JSON"):
        merge_report(event, local_lambda.LambdaContext())
    manifest["ResultFiles"]["FAILED"] = [{"Key": "map-results/r/FAILED_0.json"}]
    s3.put_object(Bucket="corpus", Key="map-results/r/manifest.json", Body=json.dumps(manifest).encode())
    with pytest.raises(RuntimeError, match="failed or pending"):
        merge_report(event, local_lambda.LambdaContext())
    assert "Contents" not in s3.list_objects_v2(Bucket="corpus", Prefix="reports/")


def test_corpus_report_schema_is_the_contract_output_schema_without_the_segment_cap():
    import copy

    from support import CONTRACT

    corpus = json.loads((ROOT / "spec" / "corpus-report.schema.json").read_text(encoding="utf-8"))
    expected = copy.deepcopy(CONTRACT["output_schema"])
    del expected["properties"]["segment_count"]["maximum"]
    assert {k: v for k, v in corpus.items() if k not in ("$schema", "$id", "title", "description")} == expected
