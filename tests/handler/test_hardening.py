"""What an attacker or a careless caller can send, and what must never come back.

Every response and error is deliverable the way the python3.13 runtime delivers it (json.dumps with
ensure_ascii=False, then UTF-8) and stays far below Lambda's 6 MB response limit; an API Gateway-shaped event,
however malformed, gets a 4xx with the error envelope, never a 500; caller-chosen strings never reach the logs.
"""

import copy
import json

import chrf_core
import lambda_handlers
import pytest
from http_events import HTTP_V2_TEMPLATE, REST_V1_TEMPLATE, call, http_v2_event, rest_v1_event
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import requests_strategy

MAX_RESPONSE_BYTES = 64 * 1024  # far below 6 MB: the largest answer is a 14-order report


def delivered(result):
    """The bytes the python3.13 runtime would send for a handler's result (or raised error)."""
    return json.dumps(result, ensure_ascii=False).encode("utf-8")


def invoke_as_lambda(handler, event):
    """What Lambda sends back for an invocation: the result, or the error payload built from the exception."""
    try:
        return handler(event, lambda_handlers.LambdaContext())
    except Exception as error:
        return {"errorType": type(error).__name__, "errorMessage": str(error)}


def assert_deliverable(result):
    data = delivered(result)
    assert len(data) < MAX_RESPONSE_BYTES, len(data)
    return data


KEYS = st.one_of(
    st.text(max_size=80),
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=4),
    st.sampled_from(["\ud800", "a\udfffb", "\udc00" * 100, "k" * 5000]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests_strategy(max_segments=3), st.dictionaries(KEYS, st.integers(), max_size=2))
def test_every_response_and_error_is_deliverable_as_the_runtime_sends_it(handler, request, extra):
    request = {**request, **extra}
    for event in (request, http_v2_event(json.dumps(request)), rest_v1_event(json.dumps(request))):
        assert_deliverable(invoke_as_lambda(handler, event))


@pytest.mark.parametrize("make", [lambda r: r, lambda r: http_v2_event(json.dumps(r)),
                                  lambda r: rest_v1_event(json.dumps(r))], ids=["direct", "http-v2", "rest-v1"])
def test_an_unknown_key_of_lone_surrogates_is_answered_not_a_crash(handler, make):
    result = invoke_as_lambda(handler, make({"\ud800": 1, "hypotheses": ["a"], "references": ["a"]}))
    data = assert_deliverable(result)
    assert b"\\\\ud800" in data  # escaped as text, once


def test_a_three_megabyte_unknown_key_gets_a_small_answer(handler):
    key = "x" * 3_200_000
    for make in (lambda r: r, lambda r: http_v2_event(json.dumps(r))):
        data = assert_deliverable(invoke_as_lambda(handler, make({key: 1})))
        assert data.count(b"x" * 63) <= 1


def test_an_http_400_for_an_unknown_key_names_it_in_field_only(handler):
    status, _, body = call(handler, http_v2_event(json.dumps({"hypotheses": ["a"], "references": ["a"], "zz": 1})))
    assert status == 400 and body["error"]["field"] == "zz" and "zz" not in body["error"]["message"]


# ---- correlation ids and logs ---------------------------------------------------------------------------------


def log_lines(captured_logs):
    return [json.loads(line) for line in captured_logs.getvalue().splitlines() if line.startswith("{")]


def test_a_direct_invoke_is_correlated_by_the_lambda_request_id_not_by_its_own_request_context(
    handler, captured_logs
):
    context = lambda_handlers.LambdaContext()
    event = {"hypotheses": ["a"], "references": ["a"], "requestContext": {"requestId": "CONFIDENTIAL-text-here"}}
    with pytest.raises(chrf_core.InvalidInputError):
        handler(event, context)
    logs = log_lines(captured_logs)
    assert logs and all(log.get("correlation_id") == context.aws_request_id for log in logs)
    assert "CONFIDENTIAL" not in captured_logs.getvalue()


@pytest.mark.parametrize("request_id", ["a sentence of a pasted translation", "x" * 65, "<script>", ""])
def test_an_api_request_id_that_is_not_a_short_token_is_not_logged(handler, captured_logs, request_id):
    event = http_v2_event(json.dumps({"hypotheses": ["a"], "references": ["a"]}))
    event["requestContext"]["requestId"] = request_id
    context = lambda_handlers.LambdaContext()
    handler(event, context)
    logs = log_lines(captured_logs)
    assert logs and all(log.get("correlation_id") == context.aws_request_id for log in logs)
    if request_id:
        assert request_id not in captured_logs.getvalue()


def test_an_api_gateway_request_id_is_the_correlation_id(handler, captured_logs):
    handler(http_v2_event(json.dumps({"hypotheses": ["a"], "references": ["a"]})), lambda_handlers.LambdaContext())
    assert {log.get("correlation_id") for log in log_lines(captured_logs)} == {"c6af9ac6-7b61-11e6-9a41-93e8deadbeef"}


# ---- malformed API Gateway events -----------------------------------------------------------------------------


def v2(**changes):
    event = copy.deepcopy(HTTP_V2_TEMPLATE)
    event["body"] = json.dumps({"hypotheses": ["a"], "references": ["a"]})
    for path, value in changes.items():
        target = event
        *parents, last = path.split("__")
        for name in parents:
            target = target[name]
        if value is ...:
            target.pop(last, None)
        else:
            target[last] = value
    return event


def v1(**changes):
    event = copy.deepcopy(REST_V1_TEMPLATE)
    event["body"] = json.dumps({"hypotheses": ["a"], "references": ["a"]})
    for name, value in changes.items():
        if value is ...:
            event.pop(name, None)
        else:
            event[name] = value
    return event


MALFORMED = {
    "v2 without method": {"version": "2.0", "requestContext": {"http": {}}},
    "v2 null rawPath": v2(rawPath=None),
    "v2 numeric rawPath": v2(rawPath=7),
    "v2 missing rawPath": v2(rawPath=...),
    "v2 null method": v2(requestContext__http__method=None),
    "v2 list method": v2(requestContext__http__method=["POST"]),
    "v2 headers as a string": v2(headers="content-type: application/json"),
    "v2 header value a number": v2(headers={"content-type": 5}),
    "v2 missing stage": v2(requestContext__stage=...),
    "v2 http as a string": v2(requestContext__http="POST"),
    "v2 body a number": v2(body=5),
    "v2 isBase64Encoded a string": v2(isBase64Encoded="yes"),
    "v1 null path": v1(path=None),
    "v1 missing path": v1(path=...),
    "v1 numeric method": v1(httpMethod=1),
    "v1 headers as a list": v1(headers=["a"]),
    "v1 multiValueHeaders not lists": v1(multiValueHeaders={"a": "b"}),
    "v1 missing stage": {**v1(), "requestContext": {"requestId": "r"}},
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_api_gateway_event_is_a_400_with_the_error_envelope(handler, name):
    status, headers, body = call(handler, MALFORMED[name])
    assert status == 400 and headers["Content-Type"] == "application/json"
    assert body["error"]["code"] == "invalid_input" and body["error"]["field"] is None
    assert body["error"]["message"].startswith("event: ")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
PLUMBING_V2 = ["rawPath", "headers", "body", "isBase64Encoded", "requestContext__stage", "requestContext__http",
               "requestContext__http__method", "requestContext__http__path", "version", "cookies"]
PLUMBING_V1 = ["path", "httpMethod", "headers", "multiValueHeaders", "body", "isBase64Encoded", "requestContext"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzzed_api_gateway_events_never_get_a_5xx_or_an_escaping_exception(handler, data):
    if data.draw(st.booleans()):
        event = v2()
        for path in data.draw(st.sets(st.sampled_from(PLUMBING_V2), min_size=1, max_size=3)):
            target = event
            *parents, last = path.split("__")
            for name in parents:
                target = target.get(name) if isinstance(target, dict) else None
            if isinstance(target, dict):
                target[last] = data.draw(JSONISH)
    else:
        event = v1()
        for name in data.draw(st.sets(st.sampled_from(PLUMBING_V1), min_size=1, max_size=3)):
            event[name] = data.draw(JSONISH)
    result = invoke_as_lambda(handler, event)
    assert_deliverable(result)
    if "statusCode" in result:
        assert 200 <= result["statusCode"] < 500, result
    else:  # no longer recognisable as HTTP: a direct invocation, validated as a request
        assert result.get("errorType") == "InvalidInputError" or "segment_count" in result, result
