"""The handler through API Gateway events (HTTP API v2, REST v1) and direct invocation."""

import copy
import json
import math
import sys

import chrf_core
import lambda_handlers
import pytest
from http_events import call, http_v2_event, rest_v1_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support import CONTRACT, ROOT, requests_strategy
from validation_cases import RULE_CASES, message_matches

EXECUTE = chrf_core.contract.EXECUTE_PATH
OUTPUT_VALIDATOR = Draft202012Validator(CONTRACT["output_schema"])


def json_representable(request):
    """NaN and infinities cannot be written in JSON; those cases are covered as malformed bodies instead."""
    values = request.values() if isinstance(request, dict) else []
    return not any(
        (isinstance(v, float) and not math.isfinite(v)) or (type(v) is int and abs(v) > 10**4000) for v in values
    )


JSON_CASES = [case for case in RULE_CASES if json_representable(case[0])]


@pytest.mark.parametrize(("request_", "field", "message"), JSON_CASES)
def test_every_rule_through_http_api_v2_is_a_400_naming_field_and_rule(handler, request_, field, message):
    status, headers, body = call(handler, http_v2_event(json.dumps(request_)))
    assert status == 400 and headers["Content-Type"] == "application/json"
    assert set(body) == {"error"} and set(body["error"]) == {"code", "field", "message"}
    assert body["error"]["code"] == "invalid_input" and body["error"]["field"] == field
    assert message_matches(body["error"]["message"], message)


@pytest.mark.parametrize(("request_", "field", "message"), RULE_CASES)
def test_every_rule_through_direct_invoke_raises_invalid_input_error(handler, request_, field, message):
    original = copy.deepcopy(request_)
    result = lambda_handlers.invoke(handler, request_)
    assert result["errorType"] == "InvalidInputError"
    error = json.loads(result["errorMessage"])
    assert error["code"] == "invalid_input" and error["field"] == field
    assert message_matches(error["message"], message)
    assert request_ == original or (request_ != request_ and repr(request_) == repr(original))  # NaN != NaN


def test_direct_invoke_error_class_is_named_for_step_functions_catch(handler):
    with pytest.raises(Exception) as caught:
        handler({"hypotheses": ["a"]}, lambda_handlers.LambdaContext())
    assert type(caught.value).__name__ == "InvalidInputError"
    assert isinstance(caught.value, chrf_core.InvalidInputError)


@settings(max_examples=150, deadline=None)
@given(requests_strategy())
def test_http_v2_rest_v1_and_direct_invoke_return_the_same_output(handler, request):
    body = json.dumps(request, ensure_ascii=False)
    status_v2, headers_v2, output_v2 = call(handler, http_v2_event(body))
    status_v1, headers_v1, output_v1 = call(handler, rest_v1_event(body))
    direct = lambda_handlers.invoke(handler, copy.deepcopy(request))
    assert status_v2 == status_v1 == 200
    assert headers_v2["Content-Type"] == headers_v1["Content-Type"] == "application/json"
    assert output_v2 == output_v1 == direct == chrf_core.score(request)


def test_http_body_is_exactly_the_contract_output(handler):
    example = CONTRACT["examples"][0]
    event = http_v2_event(json.dumps(example["input"]))
    result = lambda_handlers.invoke(handler, event)
    assert result["body"] == json.dumps(example["output"])


def test_base64_encoded_body_is_decoded(handler):
    request = {"hypotheses": ["Grüße aus Köln"], "references": ["Grüße von Köln"], "word_order": 1}
    status, _, body = call(handler, http_v2_event(json.dumps(request, ensure_ascii=False), base64_body=True))
    assert status == 200 and body == chrf_core.score(request)


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (http_v2_event(None), "body: a JSON request object is required, got an empty body"),
        (http_v2_event(""), "body: a JSON request object is required, got an empty body"),
        (http_v2_event("", base64_body=True), "body: a JSON request object is required, got an empty body"),
        (http_v2_event("   "), "body: not valid JSON"),
        (http_v2_event("hello"), "body: not valid JSON"),
        (http_v2_event('{"hypotheses": ["a"], "references": ["a"]}}'), "body: not valid JSON (Extra data"),
        (http_v2_event('{"hypotheses": ["a"], "references": ["a"], "beta": NaN}'), "body: not valid JSON (NaN"),
        (http_v2_event('{"hypotheses": ["a"], "references": ["a"], "beta": -Infinity}'), "body: not valid JSON"),
        (http_v2_event("[" * 100000 + "]" * 100000), "body: JSON nested too deeply"),
        (http_v2_event('{"beta": ' + "9" * 5000 + "}"), "body: not valid JSON (a number has too many digits)"),
        (http_v2_event(b"\xff\xfe{}", base64_body=True), "body: not valid UTF-8 (byte 0)"),
        (http_v2_event("{}"), "hypotheses: required key is missing"),
        (dict(http_v2_event("x"), body="!!!not base64", isBase64Encoded=True), "body: flagged as base64"),
        (dict(http_v2_event("x"), body='\ufeff{"hypotheses": ["a"], "references": ["a"]}'), "body: not valid JSON"),
    ],
    ids=lambda value: repr(value)[:40] if isinstance(value, str) else None,
)
def test_malformed_bodies_are_invalid_input_with_field_null(handler, event, message):
    status, _, body = call(handler, event)
    assert status == 400
    assert body["error"]["code"] == "invalid_input"
    assert body["error"]["message"].startswith(message), body["error"]["message"]
    if not message.startswith("hypotheses"):
        assert body["error"]["field"] is None


def test_lone_surrogate_escape_in_json_body_is_rejected_by_the_contract_rule(handler):
    status, _, body = call(handler, http_v2_event('{"hypotheses": ["\\ud800"], "references": ["a"]}'))
    assert status == 400 and body["error"]["field"] == "hypotheses"


@pytest.mark.parametrize("make_event", [http_v2_event, rest_v1_event])
def test_an_event_for_another_route_is_a_404_in_the_service_error_shape(handler, make_event):
    """Only a misrouted event can be one: the gateway routes exactly POST on the execute path to the function
    (tests/local/test_serve.py pins that routing in serve)."""
    status, _, body = call(handler, make_event("{}", path="/v1/tools/other/execute"))
    assert status == 404 and body["error"]["code"] == "not_found"
    for method in ("GET", "PUT", "DELETE"):
        status, _, body = call(handler, make_event(None, method=method))
        assert status == 404 and body["error"]["code"] == "not_found"


def test_unexpected_fault_is_a_500_without_internals_and_is_logged(handler, monkeypatch, captured_logs):
    def explode(settings, counts):  # a fault inside scoring, after validation
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(chrf_core.CHRF, "report", explode)
    status, _, body = call(handler, http_v2_event(json.dumps({"hypotheses": ["a"], "references": ["a"]})))
    assert status == 500
    assert body == {"error": {"code": "internal_error", "message": "internal error"}}
    assert "secret internal detail" in captured_logs.getvalue()  # the log keeps the trace for operators
    assert "Traceback" not in json.dumps(body)


def test_request_is_not_mutated_by_direct_invoke(handler):
    request = {"hypotheses": ["a b", "c"], "references": ["a c", "c"], "word_order": 2.0, "beta": 3}
    original = copy.deepcopy(request)
    lambda_handlers.invoke(handler, request)
    assert request == original and type(request["word_order"]) is float


def test_logs_carry_sizes_settings_and_request_ids_but_never_the_texts(handler, captured_logs, capsys):
    secret_hyp, secret_ref = "CONFIDENTIAL-hypothesis-ЖЖЖ", "CONFIDENTIAL-reference-中中中"
    request = {"hypotheses": [secret_hyp], "references": [secret_ref], "word_order": 2}
    call(handler, http_v2_event(json.dumps(request, ensure_ascii=False)))
    lambda_handlers.invoke(handler, request)
    lambda_handlers.invoke(handler, {**request, "beta": 0})
    call(handler, http_v2_event(json.dumps({**request, "unknown": secret_hyp}, ensure_ascii=False)))
    lambda_handlers.invoke(handler, {**request, "CONFIDENTIAL key pasted by mistake": 1})
    output = captured_logs.getvalue() + capsys.readouterr().out
    assert "CONFIDENTIAL" not in output and "ЖЖЖ" not in output and "\\u0416" not in output
    logs = [json.loads(line) for line in output.splitlines() if line.startswith('{"level"')]
    scored = [log for log in logs if log["message"] == "scored"]
    assert scored and all(log["segments"] == 1 and log["text_bytes"] > 0 for log in scored)
    assert all(log["kernel"] == chrf_core.KERNEL for log in scored)
    assert scored[0]["correlation_id"] == "c6af9ac6-7b61-11e6-9a41-93e8deadbeef"
    assert all("function_request_id" in log for log in logs)
    assert scored[0]["settings"]["word_order"] == 2


def test_metrics_are_emitted_in_embedded_metric_format(handler, capsys):
    lambda_handlers.invoke(handler, {"hypotheses": ["a"], "references": ["a"]})
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    names = {metric["Name"] for blob in emf for d in blob["_aws"]["CloudWatchMetrics"] for metric in d["Metrics"]}
    assert {"Requests", "Segments", "TextBytes"} <= names


def test_importing_the_handler_does_not_load_http_routing_or_tracing(handler):
    # Cold start: direct invocations never pay for the event handler; Tracer only when CHRF_TRACING is true.
    import subprocess

    code = (
        "import sys, app; "
        "print(any(m.startswith('aws_lambda_powertools.event_handler') for m in sys.modules), "
        "any(m.startswith('aws_xray_sdk') for m in sys.modules))"
    )
    env = {"PYTHONPATH": f"{ROOT / 'functions' / 'chrf_components'}:{ROOT / 'layers' / 'chrf_core'}"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
KEYS = ["hypotheses", "references", "char_order", "word_order", "beta", "lowercase", "include_whitespace", "averaging"]
TEXTS = st.lists(st.text(max_size=20), max_size=3)
NEAR_REQUESTS = st.fixed_dictionaries({}, optional={key: JSON_VALUES for key in KEYS}) | st.fixed_dictionaries(
    {"hypotheses": TEXTS, "references": TEXTS}, optional={key: JSON_VALUES for key in KEYS[2:]}
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(JSON_VALUES.map(json.dumps), NEAR_REQUESTS.map(json.dumps), st.text(), st.binary()))
def test_fuzzed_bodies_never_yield_a_5xx_or_an_escaping_exception(handler, body):
    base64_body = isinstance(body, bytes)
    result = handler(http_v2_event(body, base64_body=base64_body), lambda_handlers.LambdaContext())
    assert result["statusCode"] in (200, 400)
    parsed = json.loads(result["body"])
    if result["statusCode"] == 200:
        OUTPUT_VALIDATOR.validate(parsed)
    else:
        assert parsed["error"]["code"] == "invalid_input"


@settings(max_examples=200, deadline=None)
@given(st.one_of(JSON_VALUES, NEAR_REQUESTS))
def test_fuzzed_direct_invocations_return_output_or_raise_only_invalid_input(handler, event):
    try:
        output = handler(event, lambda_handlers.LambdaContext())
    except chrf_core.InvalidInputError:
        return
    OUTPUT_VALIDATOR.validate(output)

