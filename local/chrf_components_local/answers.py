"""What the emulator answers, and the error shapes it writes, in one place: an answer is (status, headers, body);
the HTTP API's gateway errors are API Gateway's (``{"message": ...}``), the Invoke API's are the Lambda API's
(``{"Type", "message", "__type"}`` with ``x-amzn-ErrorType``), and a function's errors are the Lambda runtime's
(``{"errorMessage", "errorType", ...}``)."""

from __future__ import annotations

import json
from typing import Any

Answer = tuple[int, list[tuple[str, str]], bytes]
JSON_HEADERS = [("Content-Type", "application/json")]

# The HTTP API (API Gateway's answers when no function is reached, or the function failed)
NOT_FOUND: Answer = (404, JSON_HEADERS, b'{"message":"Not Found"}')
FAILED: Answer = (500, JSON_HEADERS, b'{"message":"Internal Server Error"}')


def function_error(error_type: str, message: str, request_id: str | None = None,
                   stack_trace: list[str] | None = None) -> dict[str, Any]:
    """A function error as Lambda's Python runtime reports it: ``errorMessage`` and ``errorType``, then, for an
    invocation the runtime ran, its ``requestId`` and ``stackTrace`` (empty for the runtime's own faults)."""
    error: dict[str, Any] = {"errorMessage": message, "errorType": error_type}
    if request_id is not None:
        error.update(requestId=request_id, stackTrace=stack_trace or [])
    return error


def gateway_refusal(code: str, message: str) -> Answer:
    """API Gateway's 403 for a request its IAM authorization refuses (the reason's code in x-amzn-ErrorType)."""
    return 403, [*JSON_HEADERS, ("x-amzn-ErrorType", code)], json.dumps({"message": message}).encode()


def lambda_error(status: int, error_type: str, message: str, **extra: str) -> Answer:
    """An error of the Lambda API, in AWS's JSON shape (the type in x-amzn-ErrorType and the body)."""
    body = json.dumps({"Type": "User", "message": message, "__type": error_type, **extra}).encode()
    return status, [*JSON_HEADERS, ("x-amzn-ErrorType", error_type)], body
