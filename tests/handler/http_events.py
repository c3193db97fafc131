"""API Gateway events built from the stored samples, and a Lambda-like call of the handler."""

import base64
import copy
import json
import pathlib

import chrf_core
import lambda_handlers

EVENTS = pathlib.Path(__file__).resolve().parents[2] / "events"
HTTP_V2_TEMPLATE = json.loads((EVENTS / "http-v2-valid.json").read_text(encoding="utf-8"))
REST_V1_TEMPLATE = json.loads((EVENTS / "rest-v1-valid.json").read_text(encoding="utf-8"))
EXECUTE_PATH = chrf_core.contract.EXECUTE_PATH


def http_v2_event(body, method="POST", path=EXECUTE_PATH, base64_body=False):
    event = copy.deepcopy(HTTP_V2_TEMPLATE)
    if base64_body and body is not None:
        body = base64.b64encode(body if isinstance(body, bytes) else body.encode("utf-8")).decode("ascii")
    event.update(body=body, rawPath=path, isBase64Encoded=base64_body)
    event["requestContext"]["http"].update(method=method, path=path)
    return event


def rest_v1_event(body, method="POST", path=EXECUTE_PATH):
    event = copy.deepcopy(REST_V1_TEMPLATE)
    event.update(body=body, path=path, httpMethod=method)
    event["requestContext"].update(httpMethod=method)
    return event


def headers_of(result):
    """A response's headers, REST v1's multiValueHeaders folded in."""
    headers = dict(result.get("headers") or {})
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(values)
    return headers


def call(handler, event):
    """Invoke like Lambda; HTTP results come back as (status, headers, parsed body)."""
    result = lambda_handlers.invoke(handler, event)
    if isinstance(result, dict) and "statusCode" in result:
        return result["statusCode"], headers_of(result), json.loads(result["body"])
    return result
