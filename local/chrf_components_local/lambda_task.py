"""A Task state's call of Lambda on the local runner: ``arn:aws:states:::lambda:invoke`` (its result the Invoke API's
answer: Payload, StatusCode, ...) or a function's ARN as Resource (its result the function's own answer), as AWS's
page describes them (connect-lambda.html); the events each adds to the history (TaskScheduled, TaskStarted,
TaskSucceeded / TaskFailed, or LambdaFunction*)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .asl import DATA_LIMIT, LAMBDA_INVOKE, StatesError, Task
from .execution import Context, checked_size, dumps, encoded

if TYPE_CHECKING:
    from .states import StateMachine


def lambda_call(arguments: Any, state: Task) -> tuple[str, Any]:
    """(function name or ARN, payload) of a call: lambda:invoke's FunctionName (and Qualifier) and Payload; for a
    function's ARN as Resource, the ARN and the state's input."""
    if state.resource != LAMBDA_INVOKE:
        return state.resource, arguments
    if not isinstance(arguments, dict) or not isinstance(arguments.get("FunctionName"), str):
        raise StatesError("States.Runtime", f"The state {state.name}'s FunctionName is not a string")
    function = arguments["FunctionName"]
    if "Qualifier" in arguments:
        function = f"{function}:{arguments['Qualifier']}"
    return function, arguments.get("Payload", {})


def invoke(runner: StateMachine, state: Task, arguments: Any, context: Context) -> Any:
    """One attempt: the function called with ``arguments``' payload; the Task's result, or StatesError."""
    function, payload_value = lambda_call(arguments, state)
    raw = context.raw_input
    # measured as sent, encoded once: a child's input passed on whole ("Payload.$": "$") is the bytes it came as
    payload = raw[1] if raw is not None and payload_value is raw[0] else encoded(payload_value)
    if len(payload) > DATA_LIMIT:
        raise StatesError("States.DataLimitExceeded", f"The task's input has a size of {len(payload)} bytes, over "
                                                      f"the limit of {DATA_LIMIT} bytes")
    direct = state.resource != LAMBDA_INVOKE
    recording = context.history is not None
    if recording:
        if direct:
            context.event("LambdaFunctionScheduled", "lambdaFunctionScheduledEventDetails",
                          {"resource": function, "input": payload.decode("utf-8", "replace")})
            context.event("LambdaFunctionStarted")
        else:
            context.event("TaskScheduled", "taskScheduledEventDetails",
                          {"resourceType": "lambda", "resource": "invoke", "region": runner.region,
                           "parameters": dumps(arguments)})
            context.event("TaskStarted", "taskStartedEventDetails", {"resourceType": "lambda", "resource": "invoke"})
    try:
        result = _answer(runner, function, payload, direct)
    except StatesError as error:
        if recording:
            if direct:
                context.event("LambdaFunctionFailed", "lambdaFunctionFailedEventDetails",
                              {"error": error.error, "cause": error.cause[:32768]})
            else:
                context.event("TaskFailed", "taskFailedEventDetails", {"resourceType": "lambda", "resource": "invoke",
                                                                       "error": error.error,
                                                                       "cause": error.cause[:32768]})
        raise
    if recording:
        if direct:
            context.event("LambdaFunctionSucceeded", "lambdaFunctionSucceededEventDetails", {"output": dumps(result)})
        else:
            context.event("TaskSucceeded", "taskSucceededEventDetails",
                          {"resourceType": "lambda", "resource": "invoke", "output": dumps(result)})
    if context.inspection is not None and context.inspection.get("trace"):
        context.inspection["request"] = {"protocol": "https", "method": "POST",
                                         "url": f"/2015-03-31/functions/{function}/invocations",
                                         "headers": "Content-Type: application/json",
                                         "body": payload.decode("utf-8", "replace")}
        context.inspection["response"] = {"protocol": "https", "statusCode": "200", "statusMessage": "OK",
                                          "headers": "Content-Type: application/json", "body": dumps(result)}
    return result


def _answer(runner: StateMachine, function: str, payload: bytes, direct: bool) -> Any:
    answer = runner.services.lambda_invoke(str(function), payload)
    text = answer.payload.decode("utf-8", "replace")
    if answer.function_error:
        try:
            detail = json.loads(text)
        except ValueError:
            detail = None
        error = detail.get("errorType") if isinstance(detail, dict) else None
        raise StatesError(error if isinstance(error, str) and error else "Lambda.Unknown", text)
    try:
        result = json.loads(text) if text else None
    except ValueError:
        result = text
    checked_size(result, "task's result")
    if direct:
        return result
    return {"ExecutedVersion": "$LATEST", "Payload": result,
            "SdkHttpMetadata": {"HttpHeaders": {"Content-Type": "application/json",
                                                "X-Amz-Executed-Version": "$LATEST",
                                                "x-amzn-RequestId": answer.request_id},
                                "HttpStatusCode": 200},
            "SdkResponseMetadata": {"RequestId": answer.request_id}, "StatusCode": 200}
