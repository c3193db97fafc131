"""What the local runner reaches outside itself (Services): Lambda through an Invoke API (``direct_invoke``: serve's
own, in its process; ``invoke_api``: any endpoint, through boto3), S3 through a boto3 client, the Map Runs' records;
and with what names Step Functions gives what goes wrong on the way (``Lambda.<code>``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, NamedTuple

from .asl import StatesError
from .map_runs import MapRuns


class LambdaAnswer(NamedTuple):
    """What the Lambda Invoke API answered: the payload, X-Amz-Function-Error (None when the function succeeded),
    and the request id."""

    payload: bytes
    function_error: str | None
    request_id: str


LambdaInvoke = Callable[[str, bytes], LambdaAnswer]  # (function name or ARN, JSON payload); raises StatesError


class Services(NamedTuple):
    """What the runner reaches outside itself."""

    lambda_invoke: LambdaInvoke
    s3: Any  # a boto3 S3 client
    map_runs: MapRuns
    concurrency: int = 4  # child executions at once, at most (and at most MaxConcurrency)
    sleep: Callable[[float], None] | None = None  # a retrier's wait; None: wait, unless the execution is stopped
    jitter: Callable[[], float] = random.random  # a share in [0, 1) of a FULL-jitter delay
    progress: Callable[[int, int], None] | None = None  # (child executions done, in all), from the caller's thread


def direct_invoke(answer: Callable[[str, str, dict[str, str], bytes], tuple[int, list[tuple[str, str]], bytes]]
                  ) -> LambdaInvoke:
    """Lambda tasks through the Invoke API of the same process (`serve`'s InvokeApi.answer: its rules and its
    answers, without an HTTP round trip and a request signed for it: Step Functions calls Lambda from inside AWS),
    with the names :func:`invoke_api` gives what goes wrong: Lambda.<the API's error code>."""

    def invoke(function: str, payload: bytes) -> LambdaAnswer:
        status, headers, body = answer(function, "", {}, payload)
        found = {name.lower(): value for name, value in headers}
        if status != 200:
            code = found.get("x-amzn-errortype") or "ServiceException"
            raise StatesError(f"Lambda.{code}", body.decode("utf-8", "replace"))
        return LambdaAnswer(body, found.get("x-amz-function-error"), found.get("x-amzn-requestid", ""))

    return invoke


def invoke_api(client: Any) -> LambdaInvoke:
    """Lambda tasks through a Lambda Invoke API (a boto3 Lambda client, e.g. with endpoint_url of `serve`), with
    Step Functions' names for what goes wrong on the way: Lambda.<the API's error code>, or
    Lambda.SdkClientException when no answer came."""
    from botocore.exceptions import BotoCoreError, ClientError

    def invoke(function: str, payload: bytes) -> LambdaAnswer:
        try:
            response = client.invoke(FunctionName=function, Payload=payload)
            body = response["Payload"].read()
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code") or "ServiceException"
            raise StatesError(f"Lambda.{code}", str(error)) from None
        except BotoCoreError as error:
            raise StatesError("Lambda.SdkClientException", str(error)) from None
        request_id = response.get("ResponseMetadata", {}).get("RequestId", "")
        return LambdaAnswer(body, response.get("FunctionError"), request_id)

    return invoke

