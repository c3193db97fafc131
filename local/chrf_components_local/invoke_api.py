"""The Lambda Invoke API of `serve` (``POST /2015-03-31/functions/{FunctionName}/invocations``), answered as Lambda
answers it: the same checks in the same order, the same status codes and error types (docs/deploy-and-pipelines.md
has the table).

1. With ``--iam``, the SigV4 signature (service ``lambda``): MissingAuthenticationTokenException,
   IncompleteSignatureException, InvalidSignatureException or UnrecognizedClientException, 403.
2. The parameters' constraints (the Lambda API model's): FunctionName, Qualifier, X-Amz-Invocation-Type and
   X-Amz-Log-Type; a value outside them is a 400 ValidationException.
3. The function: a name, partial ARN or ARN of this server's account and region, unqualified or ``$LATEST``
   (no versions or aliases are published locally); else 404 ResourceNotFoundException.
4. The payload: at most 6 MB (RequestResponse, DryRun) or 1 MB (Event), else 413 RequestTooLargeException; an
   ``X-Amz-Client-Context`` of at most 3,583 bytes of base64 holding a JSON object (the Invoke API's documented
   ClientContext), else 400 InvalidRequestContentException; strict JSON in UTF-8 (no NaN, no trailing data, no byte
   order mark, not UTF-16 or UTF-32), else 400 InvalidRequestContentException.
5. DryRun 204; Event 202 once queued (429 TooManyRequestsException when the function's queue is full);
   RequestResponse 200 with the function's result, ``X-Amz-Function-Error: Unhandled`` when it failed.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import parse_qs

from .answers import JSON_HEADERS, Answer, lambda_error
from .runtime import TAIL_BYTES, Functions
from .template import ACCOUNT, local_arn

INVOKE_PATH = re.compile(r"/2015-03-31/functions/([^/]+)/invocations")
REQUEST_LIMIT = 6 * 1024 * 1024  # payload bytes of a synchronous invocation
EVENT_LIMIT = 1024 * 1024  # payload bytes of an asynchronous invocation
NAME_LIMIT = 170
NAME_PATTERN = (r"(arn:(aws[a-zA-Z-]*)?:lambda:)?((eusc-)?[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d{1}:)?(\d{12}:)?"
                r"(function:)?([a-zA-Z0-9-_\.]+)(:(\$LATEST(\.PUBLISHED)?|[a-zA-Z0-9-_]+))?")
FUNCTION_NAME = re.compile(NAME_PATTERN)
# What a name that passes the pattern means (the pattern's "0-9-_" is a range that also admits ":" and "@"; the
# parts are read with the characters Lambda names really use).
NAME_PARTS = re.compile(r"(?:arn:aws[a-zA-Z-]*:lambda:)?(?P<region>(?:eusc-)?[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d:)?"
                        r"(?P<account>\d{12}:)?(?:function:)?(?P<name>[a-zA-Z0-9_.-]+)"
                        r"(?::(?P<qualifier>\$LATEST(?:\.PUBLISHED)?|[a-zA-Z0-9_-]+))?")
QUALIFIER_PATTERN = r"(|[a-zA-Z0-9$_-]+)"
ENUMS = {"invocationType": ("Event", "RequestResponse", "DryRun"), "logType": ("None", "Tail")}
CLIENT_CONTEXT_LIMIT = 3583  # bytes of base64 (the Invoke API reference: "Up to 3,583 bytes of base64-encoded data")


def valid_client_context(value: str) -> bool:
    """Whether an X-Amz-Client-Context header is what Lambda takes: base64 of a JSON object, within the limit."""
    if len(value) > CLIENT_CONTEXT_LIMIT:
        return False
    try:
        decoded = json.loads(base64.b64decode(value, validate=True).decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(decoded, dict)


def _validation_error(value: str, member: str, constraint: str) -> Answer:
    shown = value if len(value) <= 200 else value[:199] + "…"
    return lambda_error(400, "ValidationException", f"1 validation error detected: Value '{shown}' at '{member}' "
                                                    f"failed to satisfy constraint: Member must {constraint}")


def _reject_constant(name: str) -> None:
    raise ValueError(f"Non-standard token '{name}'")


def parse_payload(body: bytes) -> str | None:
    """Why the payload is not JSON as Lambda parses it, or None when it is (an empty payload is ``{}``). Lambda reads
    UTF-8 only: Python's json.loads would take UTF-16 and UTF-32 bytes, and a byte order mark, as well."""
    if not body:
        return None
    try:
        json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        return "nested too deeply"
    except ValueError as error:
        return str(error)
    return None


class InvokeApi:
    """The Invoke API for the template's functions, in ``region`` of account ACCOUNT."""

    def __init__(self, functions: Functions, region: str) -> None:
        self.functions, self.region = functions, region

    def function_of(self, name: str) -> str | None:
        """The function a FunctionName (a name, partial ARN or ARN) names, if this server has it."""
        parts = NAME_PARTS.fullmatch(name)
        return parts["name"] if parts and self.functions.get(parts["name"]) else None

    def not_found(self, name: str, qualifier: str | None) -> Answer:
        arn = local_arn("lambda", self.region, f"function:{name}") + (f":{qualifier}" if qualifier else "")
        return lambda_error(404, "ResourceNotFoundException", f"Function not found: {arn}")

    def answer(self, name: str, query: str, headers: dict[str, str], body: bytes) -> Answer:
        """The answer to an invocation of ``name`` (the path's FunctionName, already unquoted); ``headers``
        lower-case. The signature, if required, has already been checked."""
        if len(name) > NAME_LIMIT:
            return _validation_error(name, "functionName", f"have length less than or equal to {NAME_LIMIT}")
        parsed = FUNCTION_NAME.fullmatch(name)
        if parsed is None:
            return _validation_error(name, "functionName", f"satisfy regular expression pattern: {NAME_PATTERN}")
        qualifiers = parse_qs(query, keep_blank_values=True).get("Qualifier", [])
        qualifier = qualifiers[-1] if qualifiers else None
        if qualifier is not None and (not 1 <= len(qualifier) <= 128 or not re.fullmatch(QUALIFIER_PATTERN,
                                                                                         qualifier)):
            return _validation_error(qualifier, "qualifier", f"satisfy regular expression pattern: "
                                                             f"{QUALIFIER_PATTERN}")
        invocation_type = headers.get("x-amz-invocation-type", "RequestResponse")
        log_type = headers.get("x-amz-log-type", "None")
        for member, value in (("invocationType", invocation_type), ("logType", log_type)):
            if value not in ENUMS[member]:
                return _validation_error(value, member, f"satisfy enum value set: [{', '.join(ENUMS[member])}]")
        parts = NAME_PARTS.fullmatch(name)
        if parts is None:
            return self.not_found(name, qualifier)
        region, account, function, derived = parts["region"], parts["account"], parts["name"], parts["qualifier"]
        if derived and qualifier and derived != qualifier:
            return lambda_error(400, "InvalidParameterValueException",
                                "The derived qualifier from the function name does not match the specified "
                                "qualifier.")
        qualifier = qualifier or derived
        runtime = self.functions.get(function)
        if runtime is None or (region and region[:-1] != self.region) or (account and account[:-1] != ACCOUNT) or (
                qualifier not in (None, "$LATEST")):
            return self.not_found(function, qualifier)
        limit = EVENT_LIMIT if invocation_type == "Event" else REQUEST_LIMIT
        if len(body) > limit:
            operation = "InvokeAsync" if invocation_type == "Event" else "InvokeFunction"
            return lambda_error(413, "RequestTooLargeException",
                                f"Request must be smaller than {limit} bytes for the {operation} operation")
        client_context = headers.get("x-amz-client-context")
        if client_context is not None and not valid_client_context(client_context):
            return lambda_error(400, "InvalidRequestContentException",
                                f"Client context must be a valid Base64-encoded JSON object of at most "
                                f"{CLIENT_CONTEXT_LIMIT} bytes.")
        problem = parse_payload(body)
        if problem:
            return lambda_error(400, "InvalidRequestContentException",
                                f"Could not parse request body into json: {problem}")
        payload = body or b"{}"
        if invocation_type == "DryRun":
            return 204, [], b""
        if invocation_type == "Event":
            if not runtime.enqueue(payload):
                return lambda_error(429, "TooManyRequestsException", "Rate Exceeded.",
                                    Reason="ConcurrentInvocationLimitExceeded")
            return 202, [], b""
        result = runtime.invoke(payload)
        response_headers = [*JSON_HEADERS, ("X-Amz-Executed-Version", "$LATEST"),
                            ("X-Amzn-RequestId", result.request_id)]
        if result.failed:
            response_headers.append(("X-Amz-Function-Error", "Unhandled"))
        if log_type == "Tail":
            tail = result.log.encode("utf-8")[-TAIL_BYTES:]
            response_headers.append(("X-Amz-Log-Result", base64.b64encode(tail).decode("ascii")))
        return 200, response_headers, result.payload.encode("utf-8")
