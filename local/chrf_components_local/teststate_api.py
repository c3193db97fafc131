"""TestState as serve answers it: one state run alone on an input, as AWS's page describes it
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_TestState.html, and test-state-isolation.html).

* ``definition``: one state, or with ``stateName`` a whole state machine and the state named in it; checked as
  CreateStateMachine checks a definition (InvalidDefinition). A state tested alone needs neither Next nor End.
* ``input``, ``variables`` (the workflow variables it sees), ``context`` (its context object's Execution,
  StateMachine, State and Map parts).
* ``mock``: ``result`` (the service's answer, JSON) or ``errorOutput`` (``error``, ``cause``) instead of calling
  the function; ``fieldValidationMode`` STRICT (the default: every field of a lambda:invoke result one of Lambda
  Invoke's, typed as its model types it), PRESENT (the fields present typed so) or NONE. A Map or a Parallel is
  tested with a mock only, as AWS tests them; a Pass, Wait, Choice, Succeed or Fail takes none. Without a mock a
  Task calls the template's function, as AWS calls the real one.
* ``stateConfiguration``: ``retrierRetryCount`` (the retries already made: a retrier with attempts left makes the
  status RETRIABLE), ``errorCausedByState`` (checked to name a state of the Map's or Parallel's),
  ``mapIterationFailureCount`` (failed iterations, against the Map's tolerated failures) and
  ``mapItemReaderData`` (the items a Distributed Map's reader would read: JSON Lines, or a JSON array).
* ``inspectionLevel``: INFO (the output, or the error and cause, the status and the next state), DEBUG (and
  inspectionData: the input after each step of the data flow, the result, the variables after the state), TRACE
  (and, for a Task that called the function, the request and the response).

The status is SUCCEEDED, FAILED, RETRIABLE or CAUGHT_ERROR, with ``nextState`` where the execution would go. A Wait
does not wait.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from . import asl, states
from .execution import Context, dumps, retry_delay

if TYPE_CHECKING:
    from .stepfunctions import StepFunctionsApi

LEVELS = ("INFO", "DEBUG", "TRACE")
MODES = ("STRICT", "PRESENT", "NONE")
CONFIGURATION = {"retrierRetryCount", "errorCausedByState", "mapIterationFailureCount", "mapItemReaderData"}
# Lambda Invoke's answer as its model types it (botocore's lambda service model, InvocationResponse), and the
# fields Step Functions adds to it (connect-lambda.html)
INVOKE_FIELDS: dict[str, Any] = {"StatusCode": int, "FunctionError": str, "LogResult": str, "Payload": object,
                                 "ExecutedVersion": str, "SdkHttpMetadata": dict, "SdkResponseMetadata": dict}


def test_state(api: StepFunctionsApi, request: dict[str, Any]) -> dict[str, Any]:
    """The TestState answer for ``request``."""
    from .stepfunctions import ApiError, _no_constant, _string

    def json_field(key: str, default: str, kind: type | None = None) -> Any:
        text = _string(request, key, required=False, limit=asl.DATA_LIMIT) if key in request else default
        try:
            value = json.loads(text or default, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise ApiError("InvalidExecutionInput" if key == "input" else "ValidationException",
                           f"{key}: not JSON") from None
        if kind is not None and not isinstance(value, kind):
            raise ApiError("ValidationException", f"{key}: must be a JSON object")
        return value

    level = request.get("inspectionLevel", "INFO")
    if level not in LEVELS:
        raise ApiError("ValidationException", f"1 validation error detected: Value '{str(level)[:20]}' at "
                                              f"'inspectionLevel' failed to satisfy constraint: Member must satisfy "
                                              f"enum value set: [{', '.join(LEVELS)}]")
    if "roleArn" in request:
        api._role(request)
    state = _state(api, request)
    data = json_field("input", "{}")
    variables = json_field("variables", "{}", dict)
    given_context = json_field("context", "{}", dict)
    config = request.get("stateConfiguration") or {}
    if not isinstance(config, dict) or set(config) - CONFIGURATION:
        raise ApiError("ValidationException", f"stateConfiguration: the fields are {', '.join(sorted(CONFIGURATION))}")
    mock = _mock(request, state)
    _check_configuration(config, state)

    runner = states.StateMachine({}, "TestState", api.make_services(), api.region,
                                 asl.Machine(state.name, {state.name: state}, state.language))
    runner.waits = False
    context = runner.context(data, f"test-state-{uuid.uuid4()}")
    context.variables.update(variables)
    for part in ("Execution", "StateMachine", "State"):
        if isinstance(given_context.get(part), dict):
            getattr(context, part.lower() if part != "StateMachine" else "machine").update(given_context[part])
    if isinstance(given_context.get("Map"), dict) and isinstance(given_context["Map"].get("Item"), dict):
        context.item = given_context["Map"]["Item"]
    if level != "INFO":
        context.inspection = {"trace": level == "TRACE"}
    context.state = {"Name": state.name, "EnteredTime": states.timestamp(states.now()),
                     "RetryCount": int(config.get("retrierRetryCount", 0))}
    answer = _run(runner, state, data, context, mock, config)
    if context.inspection is not None:
        answer["inspectionData"] = _inspection(context.inspection, state, config, context)
    return answer


def _state(api: StepFunctionsApi, request: dict[str, Any]) -> asl.State:
    """The state under test, parsed."""
    from .stepfunctions import ApiError, _string

    name = _string(request, "stateName", required=False, limit=80)
    if name is not None:
        _, parsed, _ = api.checked_definition(request)
        if name not in parsed.states:
            raise ApiError("ValidationException", f"stateName: the definition has no state {name!r}")
        return parsed.states[name]
    from .definitions import DEPTH_LIMIT, depth
    from .template import DEFINITION_LIMIT

    text = _string(request, "definition", limit=DEFINITION_LIMIT)
    try:
        single = json.loads(text or "")
    except (ValueError, RecursionError):
        raise ApiError("InvalidDefinition", "Invalid State Machine Definition: 'INVALID_JSON_DESCRIPTION'") from None
    if not isinstance(single, dict) or depth(single) > DEPTH_LIMIT:
        raise ApiError("InvalidDefinition", f"Invalid State Machine Definition: 'a state is a JSON object nested at "
                                            f"most {DEPTH_LIMIT} levels deep'")
    if "States" in single:
        raise ApiError("ValidationException", "a whole state machine definition is tested with stateName")
    if single.get("Type") not in ("Choice", "Succeed", "Fail") and "Next" not in single and "End" not in single:
        single = {**single, "End": True}  # a state tested alone needs neither
    try:
        state = asl.parse_state("TestState", single, asl.AnyName())
    except asl.NotImplementedByRunner as error:
        raise ApiError("InvalidDefinition", f"Invalid State Machine Definition: '{error}'") from None
    return state


def _mock(request: dict[str, Any], state: asl.State) -> dict[str, Any] | None:
    from .stepfunctions import ApiError

    mock = request.get("mock")
    work = isinstance(state, asl.Task)
    if mock is None:
        if isinstance(state, (asl.Map, asl.Parallel)):
            raise ApiError("ValidationException", f"a {type(state).__name__} state is tested with a mock (TestState "
                                                  f"runs a Map or a Parallel only with one)")
        return None
    if not isinstance(mock, dict) or set(mock) - {"result", "errorOutput", "fieldValidationMode"} or \
            ("result" in mock) == ("errorOutput" in mock):
        raise ApiError("ValidationException", "mock: exactly one of result and errorOutput, and fieldValidationMode")
    if not work:
        raise ApiError("ValidationException", f"mock: a {type(state).__name__} state calls nothing to mock")
    mode = mock.get("fieldValidationMode", "STRICT")
    if mode not in MODES:
        raise ApiError("ValidationException", f"mock.fieldValidationMode: one of {', '.join(MODES)}")
    if "errorOutput" in mock:
        error = mock["errorOutput"]
        if not isinstance(error, dict) or set(error) - {"error", "cause"} or \
                not all(isinstance(value, str) for value in error.values()):
            raise ApiError("ValidationException", "mock.errorOutput: error and cause, strings")
        return {"error": error.get("error", "States.TaskFailed"), "cause": error.get("cause", "")}
    if not isinstance(mock["result"], str):
        raise ApiError("ValidationException", "mock.result: a string of JSON")
    try:
        result = json.loads(mock["result"])
    except ValueError:
        raise ApiError("ValidationException", "mock.result: not JSON") from None
    if mode != "NONE" and isinstance(state, asl.Task) and state.resource == asl.LAMBDA_INVOKE and \
            not isinstance(state, (asl.Map, asl.Parallel)):
        if not isinstance(result, dict):
            raise ApiError("ValidationException", "mock.result: lambda:invoke answers a JSON object")
        for key, value in result.items():
            kind = INVOKE_FIELDS.get(key)
            if kind is None:
                if mode == "STRICT":
                    raise ApiError("ValidationException", f"mock.result: {key} is not a field of Lambda Invoke's "
                                                          f"answer (fieldValidationMode STRICT)")
                continue
            if kind is not object and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
                raise ApiError("ValidationException", f"mock.result: {key} must be "
                                                      f"{'an integer' if kind is int else 'a ' + kind.__name__}")
    return {"result": result}


def _check_configuration(config: dict[str, Any], state: asl.State) -> None:
    from .stepfunctions import ApiError

    for key in ("retrierRetryCount", "mapIterationFailureCount"):
        if key in config and (type(config[key]) is not int or config[key] < 0):
            raise ApiError("ValidationException", f"stateConfiguration.{key}: a non-negative integer")
    if "mapIterationFailureCount" in config and not isinstance(state, asl.Map):
        raise ApiError("ValidationException", "stateConfiguration.mapIterationFailureCount: for a Map state")
    if "mapItemReaderData" in config and not isinstance(state, asl.Map):
        raise ApiError("ValidationException", "stateConfiguration.mapItemReaderData: for a Map state with an "
                                              "ItemReader")
    if "errorCausedByState" in config:
        inner = state.branches if isinstance(state, asl.Parallel) else [state.processor] \
            if isinstance(state, asl.Map) else []
        if not any(config["errorCausedByState"] in machine.states for machine in inner):
            raise ApiError("ValidationException", "stateConfiguration.errorCausedByState: must name a state of the "
                                                  "Map's or Parallel's own")


def _run(runner: states.StateMachine, state: asl.State, data: Any, context: Context,
         mock: dict[str, Any] | None, config: dict[str, Any]) -> dict[str, Any]:
    from .asl import StatesError

    if not isinstance(state, asl.Task):
        try:
            following, output = runner.step(state, data, context)
        except StatesError as error:
            return {"status": "FAILED", "error": error.error, "cause": error.cause}
        return {"status": "SUCCEEDED", "output": dumps(output), **({"nextState": following} if following else {})}
    effective = data
    try:
        if state.language != asl.JSONATA:
            effective = states.select(data, state.input_path, context, "InputPath")
        if context.inspection is not None:
            context.inspection.update(input=data, afterInputPath=effective)
        arguments = runner.arguments(state, data, effective, context)
        if mock is None:
            result = runner.attempt(state, arguments, context)
        elif "error" in mock:
            raise StatesError(mock["error"], mock["cause"])
        else:
            result = mock["result"]
            if isinstance(state, asl.Map):
                _tolerated(state, result, config)
        if context.inspection is not None:
            context.inspection["result"] = result
        output, assigned = runner.finish(state, data, result, context)
        following, output = runner.exited(state, state.next, output, assigned, context)
    except StatesError as error:
        answer: dict[str, Any] = {"error": error.error, "cause": error.cause}
        retried = int(config.get("retrierRetryCount", 0))
        found = next((number for number, retrier in enumerate(state.retriers)
                      if states.matches(retrier.error_equals, error.error, True)), None)
        if found is not None and retried < state.retriers[found].max_attempts:
            delay = retry_delay(state.retriers[found], retried, runner.services.jitter)
            if context.inspection is not None:
                context.inspection["errorDetails"] = {"retryIndex": found,
                                                      "retryBackoffIntervalSeconds": round(delay)}
            return {**answer, "status": "RETRIABLE"}
        caught = runner.caught(state, data, error, context)
        if caught is None:
            return {**answer, "status": "FAILED"}
        catcher, output, assigned = caught
        if context.inspection is not None:
            context.inspection["errorDetails"] = {"catchIndex": state.catchers.index(catcher)}
        following, output = runner.exited(state, catcher.next, output, assigned, context)
        return {**answer, "status": "CAUGHT_ERROR", "output": dumps(output), "nextState": catcher.next}
    return {"status": "SUCCEEDED", "output": dumps(output), **({"nextState": following} if following else {})}


def _tolerated(state: asl.Map, result: Any, config: dict[str, Any]) -> None:
    """stateConfiguration.mapIterationFailureCount against the Map's ToleratedFailureCount and Percentage."""
    from .asl import StatesError

    failed = config.get("mapIterationFailureCount")
    if failed is None:
        return
    total = max(len(result) if isinstance(result, list) else 0, failed, 1)
    count, percentage = state.tolerated_count, state.tolerated_percentage
    exceeded = failed > 0 if count is None and percentage is None else \
        (count is not None and failed > count) or (percentage is not None and failed * 100 > percentage * total)
    if exceeded:
        raise StatesError("States.ExceedToleratedFailureThreshold",
                          f"The specified tolerated failure threshold was exceeded: {failed} of {total} iterations "
                          f"failed")


def _inspection(inspection: dict[str, Any], state: asl.State, config: dict[str, Any],
                context: Context) -> dict[str, Any]:
    """inspectionData as the model types it: each datum a JSON string; request, response and errorDetails
    objects."""
    shown: dict[str, Any] = {}
    for key in ("input", "afterInputPath", "afterParameters", "afterArguments", "result", "afterResultSelector",
                "afterResultPath", "variables"):
        if key in inspection:
            shown[key] = dumps(inspection[key])
    for key in ("request", "response", "errorDetails"):
        if key in inspection:
            shown[key] = inspection[key]
    if isinstance(state, asl.Map):
        if state.tolerated_count is not None:
            shown["toleratedFailureCount"] = state.tolerated_count
        if state.tolerated_percentage is not None:
            shown["toleratedFailurePercentage"] = float(state.tolerated_percentage)
        shown["maxConcurrency"] = state.max_concurrency
        if "mapItemReaderData" in config:
            shown.update(_reader_data(state, config["mapItemReaderData"], inspection.get("afterInputPath"), context))
    return shown


def _reader_data(state: asl.Map, text: Any, effective: Any, context: Context) -> dict[str, str]:
    """What the Map makes of mapItemReaderData: each item after ItemSelector, and the batches after ItemBatcher."""
    from .stepfunctions import ApiError

    if not isinstance(text, str):
        raise ApiError("ValidationException", "stateConfiguration.mapItemReaderData: a string")
    try:
        stripped = text.strip()
        items = json.loads(stripped) if stripped.startswith("[") else \
            [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        raise ApiError("ValidationException", "stateConfiguration.mapItemReaderData: JSON Lines or a JSON "
                                              "array") from None
    source = states.ItemSource.of(state)
    selected = []
    for index, item in enumerate(items):
        context.item = {"Index": index, "Value": item}
        try:
            selected.append(state.selector.evaluate(effective, context) if state.selector else item)
        finally:
            context.item = None
    batches = [json.loads(data) for data, _, _ in states.batched(source, effective, context,
                                                                   enumerate(items, start=1))]
    return {"afterItemSelector": dumps(selected), **({"afterItemBatcher": dumps(batches)} if state.batched else {})}
