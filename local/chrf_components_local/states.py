"""A local runner for this project's state machine (statemachine/corpus_pipeline.asl.json), read from the file.

Not a Step Functions implementation: it runs the parts of the Amazon States Language that the corpus pipeline's
definition uses, following AWS's documented rules, and refuses by name, before anything runs, every state type,
field, JSONPath or intrinsic function it does not implement (``the local runner does not implement
ItemReader.ReaderConfig.CSVHeaders``). What it runs:

* states ``Task`` (``arn:aws:states:::lambda:invoke`` only), ``Map`` (a Distributed Map), ``Pass``, ``Choice``,
  ``Fail`` and ``Succeed``, with ``InputPath``, ``Parameters``, ``ResultSelector``, ``ResultPath`` and
  ``OutputPath`` (JSONPath reference paths: ``$``, ``$$`` for the context object, ``.field``, ``['field']``,
  ``[index]``);
* ``Retry`` (ErrorEquals, IntervalSeconds, MaxAttempts, BackoffRate, MaxDelaySeconds, JitterStrategy) and
  ``Catch`` (ErrorEquals, ResultPath, Next), with ``States.ALL`` and ``States.TaskFailed`` as AWS matches them;
* the Distributed Map's ``ItemReader`` (``s3:getObject``, ``ReaderConfig.InputType`` JSONL, ``MaxItems``),
  ``ItemSelector`` (``$$.Map.Item.Index``, ``$$.Map.Item.Value``), ``ItemBatcher`` (MaxItemsPerBatch,
  MaxInputBytesPerBatch, BatchInput), child workflows in threads (at most ``MaxConcurrency`` and the runner's own
  bound), ``ToleratedFailureCount`` / ``ToleratedFailurePercentage``, ``ResultWriter`` (``s3:putObject``: the
  manifest and the SUCCEEDED_n / FAILED_n files as AWS writes them) and a Map Run record for DescribeMapRun;
* Step Functions' quota of 256 KiB for a state's input or output (``States.DataLimitExceeded``).

The Lambda tasks go through a Lambda Invoke API (``LambdaInvoke``: `serve`'s over loopback, or any endpoint), and
S3 through a boto3 client (a local S3 such as moto's server). Every rule a test pins cites the AWS page it follows
(tests/pipeline/test_local_runner.py).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import datetime
import functools
import json
import math
import os
import random
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import IO, Any, NamedTuple

from .template import LOCAL_REGION, LOCAL_ROLE, local_arn

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
S3_GET_OBJECT = "arn:aws:states:::s3:getObject"
S3_PUT_OBJECT = "arn:aws:states:::s3:putObject"
MAP_CONCURRENCY_LIMIT = 10000  # a Distributed Map's MaxConcurrency at most (state-map-distributed.html)
LABEL_LIMIT = 40  # characters of a Distributed Map's Label (state-map-distributed.html)
LABEL_FORBIDDEN = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")
HISTORY_LIMIT = 25000  # events in a Standard execution's history: past it, the execution fails
EXPRESS_DURATION = 300  # seconds an Express execution may run: past it, it times out
RETRY_LIMIT = 99999999  # IntervalSeconds and MaxAttempts at most (concepts-error-handling.html)
MAX_DELAY_LIMIT = 31622400  # MaxDelaySeconds at most: a year, a Standard execution's longest duration
DATA_LIMIT = 256 * 1024  # bytes of a state's or task's input or output, and of a child execution's input
RESULT_FILE_LIMIT = 5 * 1024**3  # ResultWriter starts another result file past 5 GB
READ_CHUNK = 1 << 20

COMMON = {"Type", "Comment", "InputPath", "OutputPath", "Next", "End"}
STATE_FIELDS = {
    "Task": COMMON | {"Resource", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch"},
    "Map": COMMON | {"ItemReader", "ItemSelector", "ItemBatcher", "ItemProcessor", "MaxConcurrency",
                     "ToleratedFailureCount", "ToleratedFailurePercentage", "ResultWriter", "ResultSelector",
                     "ResultPath", "Retry", "Catch", "Label"},
    "Pass": COMMON | {"Parameters", "Result", "ResultPath"},
    "Choice": {"Type", "Comment", "InputPath", "OutputPath", "Choices", "Default"},
    "Succeed": {"Type", "Comment", "InputPath", "OutputPath"},
    "Fail": {"Type", "Comment", "Error", "Cause", "ErrorPath", "CausePath"},
}
RETRY_FIELDS = {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy",
                "Comment"}
CATCH_FIELDS = {"ErrorEquals", "ResultPath", "Next", "Comment"}
LAMBDA_PARAMETERS = {"FunctionName", "Payload", "Qualifier"}
COMPARISONS: dict[str, tuple[Any, Callable[[Any, Any], bool]]] = {
    "StringEquals": (str, lambda a, b: a == b), "StringLessThan": (str, lambda a, b: a < b),
    "StringGreaterThan": (str, lambda a, b: a > b), "StringLessThanEquals": (str, lambda a, b: a <= b),
    "StringGreaterThanEquals": (str, lambda a, b: a >= b),
    "NumericEquals": ((int, float), lambda a, b: a == b), "NumericLessThan": ((int, float), lambda a, b: a < b),
    "NumericGreaterThan": ((int, float), lambda a, b: a > b),
    "NumericLessThanEquals": ((int, float), lambda a, b: a <= b),
    "NumericGreaterThanEquals": ((int, float), lambda a, b: a >= b),
    "BooleanEquals": (bool, lambda a, b: a == b),
}
TYPE_TESTS = {"IsNull": lambda value: value is None, "IsString": lambda value: isinstance(value, str),
              "IsBoolean": lambda value: isinstance(value, bool),
              "IsNumeric": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)}
PATH_STEP = re.compile(r"\.([^.\[\]\s'\"*@()?,]+)|\['([^'\\]*)'\]|\[(\d+)\]")
INTRINSIC = re.compile(r"(States\.[A-Za-z0-9]+)\(")
Predicate = Callable[[Any, "Context"], bool]  # a Choice rule as it runs: whether it holds of a state's data
Rules = dict[int, Predicate]  # a machine's Choice rules, by the identity of the rule's object in the definition


class NotImplementedByRunner(Exception):
    """The definition asks for something this runner does not implement, or that AWS would not accept either:
    found before anything runs, named in one line."""


class StatesError(Exception):
    """A Step Functions error (its name, as Retry and Catch match it) and its cause."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"{error}: {cause}")
        self.error, self.cause = error, cause


class Stopped(Exception):
    """The execution was stopped (StopExecution, or the server stopping): it ends ABORTED where it is."""


class Control:
    """What one execution (and its child executions) share: the stop signal, and how many states it entered."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.transitions = 0

    def check(self) -> None:
        """Raise Stopped once the execution has been asked to stop."""
        if self.stop.is_set():
            raise Stopped

    def pause(self, seconds: float) -> None:
        """A retrier's wait, cut short (Stopped) when the execution is stopped."""
        if self.stop.wait(seconds):
            raise Stopped


class LambdaAnswer(NamedTuple):
    """What the Lambda Invoke API answered: the payload, X-Amz-Function-Error (None when the function succeeded),
    and the request id."""

    payload: bytes
    function_error: str | None
    request_id: str


LambdaInvoke = Callable[[str, bytes], LambdaAnswer]  # (function name or ARN, JSON payload); raises StatesError


class Execution(NamedTuple):
    """An execution as DescribeExecution tells it: status SUCCEEDED (with the output as JSON text) or FAILED
    (with the error and cause)."""

    arn: str
    status: str
    output: str | None = None
    error: str | None = None
    cause: str | None = None

    def described(self) -> dict[str, Any]:
        return {key: value for key, value in (("executionArn", self.arn), ("status", self.status),
                                              ("output", self.output), ("error", self.error),
                                              ("cause", self.cause)) if value is not None}


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def timestamp(moment: datetime.datetime) -> str:
    """ISO 8601 in UTC with milliseconds, as Step Functions writes dates in JSON documents."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def dumps(value: Any) -> str:
    """Compact JSON text, non-ASCII as it is: what Step Functions passes between states and to tasks."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encoded(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8; a string holding a lone surrogate (which UTF-8 cannot carry) makes the
    whole document escape non-ASCII as \\uXXXX, so it still reads back as the same value."""
    try:
        return dumps(value).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def json_size(value: Any) -> int:
    return len(encoded(value))


# ---- checking the definition before anything runs ------------------------------------------------------------------


def refuse(where: str, what: str) -> NotImplementedByRunner:
    return NotImplementedByRunner(f"{where}: the local runner does not implement {what}")


def parse_path(text: Any, where: str, field: str) -> tuple[str, tuple[str | int, ...]]:
    """A JSONPath reference path: its root ('$' or '$$') and steps (names and indexes); a path read once is not
    read again (the runner resolves the same few paths for every item)."""
    parsed = _parsed_path(text) if isinstance(text, str) else None
    if parsed is not None:
        return parsed
    root, steps = _parse_path(text, where, field)
    return root, tuple(steps)


@functools.lru_cache(maxsize=4096)
def _parsed_path(text: str) -> tuple[str, tuple[str | int, ...]] | None:
    try:
        root, steps = _parse_path(text, "", "")
    except NotImplementedByRunner:
        return None
    return root, tuple(steps)


def _parse_path(text: Any, where: str, field: str) -> tuple[str, list[str | int]]:
    if not isinstance(text, str) or not text.startswith("$"):
        raise refuse(where, f"{field} {text!r} (a JSONPath must start with $)")
    root = "$$" if text.startswith("$$") else "$"
    steps: list[str | int] = []
    position = len(root)
    while position < len(text):
        match = PATH_STEP.match(text, position)
        if match is None:
            raise refuse(where, f"the JSONPath {text} in {field} (only reference paths: .name, ['name'], [index])")
        name, quoted, index = match.groups()
        steps.append(int(index) if index is not None else name if name is not None else quoted)
        position = match.end()
    return root, steps


def check_template(template: Any, where: str, field: str) -> None:
    """A payload template: every ``key.$`` holds a path (an intrinsic function is refused by name)."""
    if isinstance(template, dict):
        for key, value in template.items():
            if isinstance(key, str) and key.endswith(".$"):
                intrinsic = INTRINSIC.match(value) if isinstance(value, str) else None
                if intrinsic:
                    raise refuse(where, f"the intrinsic function {intrinsic.group(1)} (in {field}.{key})")
                parse_path(value, where, f"{field}.{key}")
            else:
                check_template(value, where, f"{field}.{key}")
    elif isinstance(template, list):
        for number, value in enumerate(template):
            check_template(value, where, f"{field}[{number}]")


def check_fields(value: Any, allowed: set[str], where: str, prefix: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise refuse(where, f"{prefix or 'a state'} that is not a JSON object")
    for key in value:
        if key not in allowed:
            raise refuse(where, f"{prefix}{'.' if prefix else ''}{key}")
    return value


def check_positive(state: dict[str, Any], key: str, where: str, minimum: float = 0, integer: bool = True,
                   maximum: float = math.inf) -> None:
    """A number field within AWS's documented range (``minimum`` to ``maximum``, inclusive)."""
    if key in state:
        value = state[key]
        kind_ok = type(value) is int if integer else isinstance(value, (int, float)) and type(value) is not bool
        if not kind_ok or not minimum <= value <= maximum or (not integer and not math.isfinite(value)):
            low, high = (f"{bound:.15g}" for bound in (minimum, maximum))
            bound = f">= {low}" if maximum == math.inf else f"from {low} to {high}"
            raise refuse(where, f"{key} {value!r} (AWS requires {'an integer' if integer else 'a number'} {bound})")


def check_error_names(entry: dict[str, Any], where: str, field: str, last: bool) -> None:
    """ErrorEquals: names; States.ALL alone, and only in the last retrier or catcher (AWS: "must appear alone in
    the array and must appear in the last retrier/catcher", concepts-error-handling.html)."""
    names = entry.get("ErrorEquals")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise refuse(where, f"{field}.ErrorEquals that is not a non-empty list of error names")
    if "States.ALL" in names and names != ["States.ALL"]:
        raise refuse(where, f"{field}.ErrorEquals with States.ALL beside other names (AWS requires it alone)")
    if "States.ALL" in names and not last:
        raise refuse(where, f"{field}.ErrorEquals States.ALL before the last one (AWS requires it last)")


def check_machine(machine: Any, where: str = "the definition", child: bool = False,
                  rules: Rules | None = None) -> Rules:
    """A state machine (or a Map's ItemProcessor): StartAt, States, each state's fields and their types and AWS's
    ranges; Next targets exist. Whatever the shape, the answer is this or NotImplementedByRunner, in one line. Its
    Choice rules (its ItemProcessors' too), read once: each rule's predicate, by the rule's identity."""
    rules = {} if rules is None else rules
    if not child:
        try:
            json.dumps(machine, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise refuse(where, "a string holding a lone surrogate (not UTF-8 text, which AWS requires)") from None
        except RecursionError:
            raise refuse(where, "JSON nested this deeply") from None
    allowed = {"StartAt", "States", "Comment", "ProcessorConfig"} if child else {"StartAt", "States", "Comment"}
    check_fields(machine, allowed, where, "")
    check_comment(machine, where)
    states = machine.get("States")
    if not isinstance(states, dict) or not states or not names_state(machine.get("StartAt"), states):
        raise refuse(where, "a machine without States or whose StartAt names no state")
    for name, state in states.items():
        check_state(name, state, states, rules)
    return rules


def names_state(value: Any, states: dict[str, Any]) -> bool:
    """Whether a Next, StartAt or Default names a state (a string: a list or an object names none)."""
    return isinstance(value, str) and value in states


def check_comment(value: dict[str, Any], where: str) -> None:
    if not isinstance(value.get("Comment", ""), str):
        raise refuse(where, "a Comment that is not a string")


def check_state(name: str, state: Any, states: dict[str, Any], rules: Rules) -> None:
    where = f"state {name}"
    kind = state.get("Type") if isinstance(state, dict) else None
    if kind not in STATE_FIELDS:
        raise refuse(where, f"the state type {kind}")
    check_fields(state, STATE_FIELDS[kind], where, "")
    for field in ("InputPath", "OutputPath", "ResultPath"):
        if state.get(field) is not None and field in state:
            root, steps = parse_path(state[field], where, field)
            if field == "ResultPath" and (root != "$" or any(isinstance(step, int) for step in steps)):
                raise refuse(where, f"ResultPath {state[field]} (only field names under $)")
    for field in ("Parameters", "ResultSelector", "ItemSelector"):
        if field in state:
            check_template(state[field], where, field)
    if kind not in ("Choice", "Succeed", "Fail"):
        if state.get("End") is True:
            if "Next" in state:
                raise refuse(where, "both Next and End")
        elif not names_state(state.get("Next"), states):
            raise refuse(where, f"Next {state.get('Next')!r}, which names no state")
    check_comment(state, where)
    retriers, catchers = state.get("Retry", []), state.get("Catch", [])
    for field, value in (("Retry", retriers), ("Catch", catchers)):
        if not isinstance(value, list):
            raise refuse(where, f"{field} that is not a list")
    for number, retrier in enumerate(retriers):
        check_fields(retrier, RETRY_FIELDS, where, f"Retry[{number}]")
        check_error_names(retrier, where, f"Retry[{number}]", number == len(retriers) - 1)
        check_positive(retrier, "IntervalSeconds", where, 1, maximum=RETRY_LIMIT)
        check_positive(retrier, "MaxAttempts", where, 0, maximum=RETRY_LIMIT)
        check_positive(retrier, "MaxDelaySeconds", where, 1, maximum=MAX_DELAY_LIMIT)
        check_positive(retrier, "BackoffRate", where, 1.0, integer=False)
        if retrier.get("JitterStrategy", "NONE") not in ("FULL", "NONE"):
            raise refuse(where, f"Retry[{number}].JitterStrategy {retrier['JitterStrategy']!r}")
    for number, catcher in enumerate(catchers):
        check_fields(catcher, CATCH_FIELDS, where, f"Catch[{number}]")
        check_error_names(catcher, where, f"Catch[{number}]", number == len(catchers) - 1)
        if not names_state(catcher.get("Next"), states):
            raise refuse(where, f"Catch[{number}].Next {catcher.get('Next')!r}, which names no state")
        if catcher.get("ResultPath") is not None:
            parse_path(catcher.get("ResultPath", "$"), where, f"Catch[{number}].ResultPath")
    if kind == "Task":
        check_task(state, where)
    elif kind == "Map":
        check_map(state, where, rules)
    elif kind == "Choice":
        choices = state.get("Choices")
        if not isinstance(choices, list) or not choices:
            raise refuse(where, "a Choice state without Choices")
        for number, rule in enumerate(choices):
            rules[id(rule)] = check_rule(rule, where, f"Choices[{number}]", top=True)
            if not names_state(rule.get("Next"), states):
                raise refuse(where, f"Choices[{number}].Next {rule.get('Next')!r}, which names no state")
        if "Default" in state and not names_state(state["Default"], states):
            raise refuse(where, f"Default {state['Default']!r}, which names no state")
    elif kind == "Fail":
        for field in ("ErrorPath", "CausePath"):
            if field in state:
                parse_path(state[field], where, field)


def check_task(state: dict[str, Any], where: str) -> None:
    if state.get("Resource") != LAMBDA_INVOKE:
        raise refuse(where, f"the Task resource {state.get('Resource')!r} (only {LAMBDA_INVOKE})")
    parameters = state.get("Parameters")
    if not isinstance(parameters, dict):
        raise refuse(where, f"{LAMBDA_INVOKE} without Parameters")
    names = {key.removesuffix(".$") for key in parameters}
    for name in sorted(names - LAMBDA_PARAMETERS):
        raise refuse(where, f"Parameters.{name} of {LAMBDA_INVOKE}")
    for required in ("FunctionName", "Payload"):
        if required not in names:
            raise refuse(where, f"{LAMBDA_INVOKE} without Parameters.{required}")


def check_map(state: dict[str, Any], where: str, rules: Rules) -> None:
    processor = state.get("ItemProcessor")
    config = check_fields(processor.get("ProcessorConfig", {}) if isinstance(processor, dict) else None,
                          {"Mode", "ExecutionType"}, where, "ItemProcessor.ProcessorConfig")
    if config.get("Mode") != "DISTRIBUTED":
        raise refuse(where, f"ItemProcessor.ProcessorConfig.Mode {config.get('Mode', 'INLINE')} (only DISTRIBUTED)")
    if config.get("ExecutionType") not in ("EXPRESS", "STANDARD"):
        raise refuse(where, f"ItemProcessor.ProcessorConfig.ExecutionType {config.get('ExecutionType')!r}")
    check_machine(processor, f"{where} (ItemProcessor)", child=True, rules=rules)
    reader = check_fields(state.get("ItemReader"), {"Resource", "ReaderConfig", "Parameters"}, where, "ItemReader")
    if reader.get("Resource") != S3_GET_OBJECT:
        raise refuse(where, f"ItemReader.Resource {reader.get('Resource')!r} (only {S3_GET_OBJECT})")
    check_template(reader.get("Parameters"), where, "ItemReader.Parameters")
    if {key.removesuffix(".$") for key in reader.get("Parameters") or {}} != {"Bucket", "Key"}:
        raise refuse(where, "ItemReader.Parameters other than Bucket and Key")
    config = check_fields(reader.get("ReaderConfig"), {"InputType", "MaxItems"}, where, "ItemReader.ReaderConfig")
    if config.get("InputType") != "JSONL":
        raise refuse(where, f"ItemReader.ReaderConfig.InputType {config.get('InputType')} (only JSONL)")
    check_positive(config, "MaxItems", where, 1)
    if "ItemBatcher" in state:
        batcher = check_fields(state["ItemBatcher"], {"MaxItemsPerBatch", "MaxInputBytesPerBatch", "BatchInput"},
                               where, "ItemBatcher")
        if "MaxItemsPerBatch" not in batcher and "MaxInputBytesPerBatch" not in batcher:
            raise refuse(where, "an ItemBatcher without MaxItemsPerBatch or MaxInputBytesPerBatch")
        check_positive(batcher, "MaxItemsPerBatch", where, 1)
        check_positive(batcher, "MaxInputBytesPerBatch", where, 1)
        if batcher.get("MaxInputBytesPerBatch", 0) > DATA_LIMIT:
            raise refuse(where, f"ItemBatcher.MaxInputBytesPerBatch over {DATA_LIMIT} bytes (256 KiB, AWS's limit)")
        check_template(batcher.get("BatchInput", {}), where, "ItemBatcher.BatchInput")
    check_positive(state, "MaxConcurrency", where, 0, maximum=MAP_CONCURRENCY_LIMIT)
    label = state.get("Label", "")
    if not isinstance(label, str) or len(label) > LABEL_LIMIT or LABEL_FORBIDDEN.search(label):
        raise refuse(where, f"Label {json.dumps(label)[:60]} (AWS requires at most {LABEL_LIMIT} characters, "
                            f"without whitespace, brackets, wildcards, special or control characters)")
    if "ItemSelector" in state and not isinstance(state["ItemSelector"], dict):
        raise refuse(where, "an ItemSelector that is not a JSON object")
    check_positive(state, "ToleratedFailureCount", where, 0)
    check_positive(state, "ToleratedFailurePercentage", where, 0, integer=False)
    if state.get("ToleratedFailurePercentage", 0) > 100:
        raise refuse(where, "ToleratedFailurePercentage over 100")
    if "ResultWriter" in state:
        writer = check_fields(state["ResultWriter"], {"Resource", "Parameters"}, where, "ResultWriter")
        if writer.get("Resource") != S3_PUT_OBJECT:
            raise refuse(where, f"ResultWriter.Resource {writer.get('Resource')!r} (only {S3_PUT_OBJECT})")
        check_template(writer.get("Parameters"), where, "ResultWriter.Parameters")
        if {key.removesuffix(".$") for key in writer.get("Parameters") or {}} != {"Bucket", "Prefix"}:
            raise refuse(where, "ResultWriter.Parameters other than Bucket and Prefix")


def check_rule(rule: Any, where: str, field: str, top: bool = False) -> Predicate:
    """A Choice rule, checked (one operator, AWS's operand types, paths that parse), and what it is when it runs:
    whether it holds of a state's data (read once: the runner only calls it)."""
    allowed = {"Next", "Comment"} if top else {"Comment"}
    if not isinstance(rule, dict):
        raise refuse(where, f"{field} that is not a JSON object")
    operators = [key for key in rule if key not in allowed | {"Variable"}]
    if len(operators) != 1:
        raise refuse(where, f"{field} with {len(operators)} comparison operators (one is required)")
    operator = operators[0]
    if operator in ("And", "Or"):
        if not isinstance(rule[operator], list) or not rule[operator]:
            raise refuse(where, f"{field}.{operator} that is not a non-empty list")
        inner = [check_rule(each, where, f"{field}.{operator}[{number}]") for number, each in enumerate(rule[operator])]
        combined = all if operator == "And" else any
        return lambda data, context: combined(holds(data, context) for holds in inner)
    if operator == "Not":
        negated = check_rule(rule["Not"], where, f"{field}.Not")
        return lambda data, context: not negated(data, context)
    base = operator.removesuffix("Path")
    if base not in COMPARISONS and operator not in TYPE_TESTS and operator != "IsPresent":
        raise refuse(where, f"the Choice operator {operator} (in {field})")
    parse_path(rule.get("Variable"), where, f"{field}.Variable")
    variable: str = rule["Variable"]
    operand = rule[operator]
    if operator.endswith("Path") and base in COMPARISONS:
        parse_path(operand, where, f"{field}.{operator}")
    else:
        kinds = COMPARISONS[operator][0] if operator in COMPARISONS else bool
        if not isinstance(operand, kinds) or (kinds is not bool and isinstance(operand, bool)):
            wanted = {str: "a string", bool: "true or false"}.get(kinds, "a number")
            raise refuse(where, f"{field}.{operator} {json.dumps(operand)[:40]} (AWS requires {wanted})")
    if operator == "IsPresent":
        def present(data: Any, context: Context) -> bool:
            try:
                resolve(variable, data, context, "Variable")
            except StatesError:
                return operand is False
            return operand is True
        return present
    if operator in TYPE_TESTS:
        test: Callable[[Any], bool] = TYPE_TESTS[operator]
        return lambda data, context: test(resolve(variable, data, context, "Variable")) is operand
    kinds, compare = COMPARISONS[base]
    numeric = operator.startswith("Numeric")

    def compared(data: Any, context: Context) -> bool:
        value = resolve(variable, data, context, "Variable")
        other = resolve(operand, data, context, operator) if operator.endswith("Path") else operand
        if numeric and (type(value) is bool or type(other) is bool):
            return False
        return isinstance(value, kinds) and isinstance(other, kinds) and bool(compare(value, other))
    return compared


# ---- paths and payload templates -----------------------------------------------------------------------------------


class Context:
    """The context object ($$) of one execution, and the state it is in."""

    def __init__(self, execution: dict[str, Any], machine: dict[str, Any], control: Control | None = None,
                 express: bool = False) -> None:
        self.execution, self.machine = execution, machine
        self.control = control or Control()
        self.state: dict[str, Any] = {}
        self.item: dict[str, Any] | None = None
        self.events = 0  # history events so far (a Standard execution's are bounded)
        self.deadline = time.monotonic() + EXPRESS_DURATION if express else None  # an Express one's duration

    def count(self, events: int) -> None:
        """Count history events, and end an execution past AWS's bounds (service-quotas.html): a Standard
        execution's history of HISTORY_LIMIT events (it fails), an Express execution's EXPRESS_DURATION (it times
        out)."""
        self.control.check()
        self.events += events
        if self.deadline is None and self.events > HISTORY_LIMIT:
            raise StatesError("States.Runtime", f"The execution history reached {HISTORY_LIMIT} events, the quota "
                                                f"of a Standard execution: the execution fails")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise StatesError("States.Timeout", f"An Express execution ran past {EXPRESS_DURATION} seconds, its "
                                                f"longest duration")

    def pause(self, seconds: float) -> None:
        """A retrier's wait: cut short when the execution is stopped, and never past an Express deadline."""
        if self.deadline is not None:
            seconds = min(seconds, max(0.0, self.deadline - time.monotonic()))
        self.control.pause(seconds)
        self.count(0)

    def data(self) -> dict[str, Any]:
        data = {"Execution": self.execution, "StateMachine": self.machine, "State": self.state}
        if self.item is not None:
            data["Map"] = {"Item": self.item}
        return data


def resolve(path: str, data: Any, context: Context, field: str) -> Any:
    root, steps = parse_path(path, "a path", field)
    value: Any = context.data() if root == "$$" else data
    for step in steps:
        found = (isinstance(step, int) and isinstance(value, list) and step < len(value)) or (
            isinstance(step, str) and isinstance(value, dict) and step in value)
        if found:
            value = value[step]
        else:
            raise StatesError("States.Runtime", f"The JSONPath '{path}' specified for the field '{field}' could "
                                                f"not be found in the input")
    return value


def evaluate(template: Any, data: Any, context: Context, field: str = "Parameters") -> Any:
    """A payload template with its ``key.$`` paths resolved against ``data`` and the context object."""
    if isinstance(template, dict):
        result = {}
        for key, value in template.items():
            if key.endswith(".$"):
                result[key[:-2]] = resolve(value, data, context, key)
            else:
                result[key] = evaluate(value, data, context, field)
        return result
    if isinstance(template, list):
        return [evaluate(value, data, context, field) for value in template]
    return template


def put(data: Any, path: str | None, value: Any) -> Any:
    """``data`` with ``value`` placed at a ResultPath (None: the result is discarded; '$': it replaces the input).
    Only the objects along the path are copied: the input itself is not changed."""
    if path is None:
        return data
    _, steps = parse_path(path, "a path", "ResultPath")
    if not steps:
        return value
    root = dict(data) if isinstance(data, dict) else None
    if root is None:
        raise StatesError("States.ResultPathMatchFailure",
                          f"Unable to apply ResultPath {path}: the state's input is not an object")
    target = root
    for step in steps[:-1]:
        inner = target.get(step)
        if inner is None:
            inner = {}
        elif not isinstance(inner, dict):
            raise StatesError("States.ResultPathMatchFailure",
                              f"Unable to apply ResultPath {path}: {step} is not an object")
        target[step] = inner = dict(inner)
        target = inner
    target[steps[-1]] = value
    return root


def select(data: Any, path: Any, context: Context, field: str) -> Any:
    """InputPath or OutputPath: the whole data when absent, {} when null."""
    if path is None:
        return {}
    return resolve(path, data, context, field)


def checked_size(value: Any, where: str) -> Any:
    size = json_size(value)
    if size > DATA_LIMIT:
        raise StatesError("States.DataLimitExceeded", f"The {where} has a size of {size} bytes, over the limit of "
                                                      f"{DATA_LIMIT} bytes")
    return value


# ---- errors: Retry and Catch ---------------------------------------------------------------------------------------


def matches(names: list[str], error: str, task: bool) -> bool:
    """Whether an ErrorEquals list matches an error: by name; States.ALL matches every error but the terminal
    States.Runtime and States.DataLimitExceeded; States.TaskFailed (in a Task or Map) every one but States.Timeout
    and those."""
    if error == "States.Runtime":
        return False
    if error in names:
        return True
    if error == "States.DataLimitExceeded":
        return False
    return "States.ALL" in names or (task and "States.TaskFailed" in names and error != "States.Timeout")


def retry_delay(retrier: dict[str, Any], retries: int, draw: Callable[[], float]) -> float:
    """Seconds before retry number ``retries`` (0 for the first): IntervalSeconds times BackoffRate to the power of
    the retries already made, at most MaxDelaySeconds; with JitterStrategy FULL, a random share of it."""
    try:
        delay = retrier.get("IntervalSeconds", 1) * retrier.get("BackoffRate", 2.0) ** retries
    except OverflowError:  # a BackoffRate of 1e308: past any bound below
        delay = math.inf
    delay = min(delay, retrier.get("MaxDelaySeconds", MAX_DELAY_LIMIT))  # no wait outlasts a Standard execution
    return delay * draw() if retrier.get("JitterStrategy") == "FULL" else float(delay)


# ---- running -------------------------------------------------------------------------------------------------------


class MapRun:
    """A Map Run's record, as DescribeMapRun tells it."""

    def __init__(self, arn: str, execution_arn: str, state: dict[str, Any], concurrency: int) -> None:
        self.arn, self.execution_arn = arn, execution_arn
        self.start: datetime.datetime = now()
        self.stop: datetime.datetime | None = None
        self.status = "RUNNING"
        self.max_concurrency = concurrency
        self.tolerated_count: int | None = state.get("ToleratedFailureCount")
        self.tolerated_percentage: float | None = state.get("ToleratedFailurePercentage")
        self.items = dict.fromkeys(("pending", "running", "succeeded", "failed", "timedOut", "aborted", "total",
                                    "resultsWritten"), 0)
        self.executions = dict(self.items)

    def described(self) -> dict[str, Any]:
        described = {"mapRunArn": self.arn, "executionArn": self.execution_arn, "status": self.status,
                     "startDate": self.start.timestamp(), "maxConcurrency": self.max_concurrency,
                     "toleratedFailurePercentage": float(self.tolerated_percentage or 0),
                     "toleratedFailureCount": self.tolerated_count or 0, "itemCounts": dict(self.items),
                     "executionCounts": dict(self.executions), "redriveCount": 0}
        if self.stop is not None:
            described["stopDate"] = self.stop.timestamp()
        return described


class MapRuns:
    """The Map Runs this runner ran (thread-safe), for DescribeMapRun."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, MapRun] = {}

    def add(self, run: MapRun) -> None:
        with self.lock:
            self.runs[run.arn] = run

    def describe(self, arn: str) -> dict[str, Any] | None:
        with self.lock:
            run = self.runs.get(arn)
            return run.described() if run else None

    def of_execution(self, execution_arn: str) -> list[MapRun]:
        """The Map Runs an execution started, newest first."""
        with self.lock:
            return [run for run in reversed(self.runs.values()) if run.execution_arn == execution_arn]

    def forget(self, execution_arn: str) -> None:
        """Forget the Map Runs of an execution no longer remembered."""
        with self.lock:
            for run in [run for run in self.runs.values() if run.execution_arn == execution_arn]:
                del self.runs[run.arn]


class Services(NamedTuple):
    """What the runner reaches outside itself."""

    lambda_invoke: LambdaInvoke
    s3: Any  # a boto3 S3 client
    map_runs: MapRuns
    concurrency: int = 4  # child executions at once, at most (and at most MaxConcurrency)
    sleep: Callable[[float], None] | None = None  # a retrier's wait; None: wait, unless the execution is stopped
    jitter: Callable[[], float] = random.random  # a share in [0, 1) of a FULL-jitter delay
    progress: Callable[[int, int], None] | None = None  # (child executions done, in all), from the caller's thread


class Batch(NamedTuple):
    """A child execution's input, spooled: where it lies and which items it holds."""

    offset: int
    size: int
    first_item: int
    items: int


class StateMachine:
    """One state machine definition, checked, run on ``services`` in ``region`` of the local account."""

    def __init__(self, definition: dict[str, Any], name: str, services: Services,
                 region: str = LOCAL_REGION) -> None:
        self.rules = check_machine(definition)
        self.definition, self.name, self.services, self.region = definition, name, services, region
        self.arn = self.arn_of(f"stateMachine:{name}")

    def arn_of(self, resource: str) -> str:
        return local_arn("states", self.region, resource)

    def execution_arn(self, name: str) -> str:
        return self.arn_of(f"execution:{self.name}:{name}")

    def execute(self, execution_input: Any, name: str | None = None, control: Control | None = None,
                started: datetime.datetime | None = None) -> Execution:
        """Run one execution to its end (the caller waits, as for StartSyncExecution); ABORTED when ``control``
        is told to stop."""
        name = name or str(uuid.uuid4())
        arn = self.execution_arn(name)
        context = Context({"Id": arn, "Input": execution_input, "Name": name, "StartTime": timestamp(started or now()),
                           "RoleArn": LOCAL_ROLE}, {"Id": self.arn, "Name": self.name},
                          control)
        try:
            checked_size(execution_input, "execution input")
            output = self.run(self.definition, execution_input, context)
        except StatesError as error:
            return Execution(arn, "FAILED", error=error.error, cause=error.cause)
        except Stopped:
            return Execution(arn, "ABORTED")
        return Execution(arn, "SUCCEEDED", output=dumps(output))

    def run(self, machine: dict[str, Any], data: Any, context: Context) -> Any:
        states, name = machine["States"], machine["StartAt"]
        while True:
            context.count(2)  # its Entered and Exited events
            state = states[name]
            context.state = {"Name": name, "EnteredTime": timestamp(now()), "RetryCount": 0}
            kind = state["Type"]
            if kind == "Fail":
                error = resolve(state["ErrorPath"], data, context, "ErrorPath") if "ErrorPath" in state else \
                    state.get("Error", "States.Fail")
                cause = resolve(state["CausePath"], data, context, "CausePath") if "CausePath" in state else \
                    state.get("Cause", "")
                raise StatesError(str(error), cause if isinstance(cause, str) else dumps(cause))
            effective = select(data, state.get("InputPath", "$"), context, "InputPath")
            if kind == "Succeed":
                return select(effective, state.get("OutputPath", "$"), context, "OutputPath")
            if kind == "Choice":
                name = self.choose(state, effective, context, name)
                data = select(effective, state.get("OutputPath", "$"), context, "OutputPath")
                continue
            try:
                if kind == "Pass":
                    result = evaluate(state["Parameters"], effective, context) if "Parameters" in state else \
                        state.get("Result", effective)
                else:
                    result = self.with_retries(state, effective, context)
                    if "ResultSelector" in state:
                        result = evaluate(state["ResultSelector"], result, context, "ResultSelector")
                output = put(data, state.get("ResultPath", "$"), result)
                output = checked_size(select(output, state.get("OutputPath", "$"), context, "OutputPath"),
                                      f"output of state {name}")
            except StatesError as error:
                catcher = next((catcher for catcher in state.get("Catch", [])
                                if matches(catcher["ErrorEquals"], error.error, kind in ("Task", "Map"))), None)
                if catcher is None:
                    raise
                data = put(data, catcher.get("ResultPath", "$"), {"Error": error.error, "Cause": error.cause})
                name = catcher["Next"]
                continue
            if state.get("End"):
                return output
            data, name = output, state["Next"]

    def with_retries(self, state: dict[str, Any], effective: Any, context: Context) -> Any:
        attempts = [0] * len(state.get("Retry", []))
        while True:
            try:
                context.count(3)  # Scheduled, Started, and Succeeded or Failed
                return self.task(state, effective, context) if state["Type"] == "Task" else \
                    self.map(state, effective, context)
            except StatesError as error:
                found = next((number for number, retrier in enumerate(state.get("Retry", []))
                              if matches(retrier["ErrorEquals"], error.error, True)), None)
                if found is None:
                    raise
                retrier = state["Retry"][found]
                if attempts[found] >= retrier.get("MaxAttempts", 3):
                    raise
                delay = retry_delay(retrier, attempts[found], self.services.jitter)
                if self.services.sleep is None:
                    context.pause(delay)
                else:
                    self.services.sleep(delay)
                attempts[found] += 1
                context.state["RetryCount"] = context.state.get("RetryCount", 0) + 1

    def choose(self, state: dict[str, Any], data: Any, context: Context, name: str) -> str:
        for rule in state["Choices"]:
            if self.rules[id(rule)](data, context):
                return str(rule["Next"])
        if "Default" in state:
            return str(state["Default"])
        raise StatesError("States.NoChoiceMatched", f"No Choice Rules matched in state {name}, and no Default")

    # ---- Task: arn:aws:states:::lambda:invoke ----

    def task(self, state: dict[str, Any], effective: Any, context: Context) -> Any:
        parameters = evaluate(state["Parameters"], effective, context)
        function = parameters["FunctionName"]
        if "Qualifier" in parameters:
            function = f"{function}:{parameters['Qualifier']}"
        payload = encoded(parameters["Payload"])  # measured as sent: encoded once
        if len(payload) > DATA_LIMIT:
            raise StatesError("States.DataLimitExceeded", f"The task's input has a size of {len(payload)} bytes, over "
                                                          f"the limit of {DATA_LIMIT} bytes")
        answer = self.services.lambda_invoke(str(function), payload)
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
        return {"ExecutedVersion": "$LATEST", "Payload": result,
                "SdkHttpMetadata": {"HttpHeaders": {"Content-Type": "application/json",
                                                    "X-Amz-Executed-Version": "$LATEST",
                                                    "x-amzn-RequestId": answer.request_id},
                                    "HttpStatusCode": 200},
                "SdkResponseMetadata": {"RequestId": answer.request_id}, "StatusCode": 200}

    # ---- Map: a Distributed Map ----

    def map(self, state: dict[str, Any], effective: Any, context: Context) -> Any:
        label = state.get("Label") or context.state["Name"]
        run_id = str(uuid.uuid4())
        limit = state.get("MaxConcurrency", 0)
        parallel = min(limit, self.services.concurrency) if limit else self.services.concurrency
        record = MapRun(self.arn_of(f"mapRun:{self.name}/{label}:{run_id}"), context.execution["Id"], state, limit)
        self.services.map_runs.add(record)
        try:
            with tempfile.TemporaryFile() as spool:
                child = ChildRuns(self, state, label, run_id, record, spool, (effective, context))
                batches = self.read_batches(state, effective, context, child)
                outputs = child.run_all(batches, max(1, parallel))  # children start as the batches are read
            record.status = "FAILED" if child.exceeded else "SUCCEEDED"
            if child.exceeded:
                raise StatesError("States.ExceedToleratedFailureThreshold",
                                  f"The specified tolerated failure threshold was exceeded: {record.items['failed']} "
                                  f"of {record.items['total']} items failed")
            return outputs if outputs is not None else child.written
        except BaseException as error:
            if record.status == "RUNNING":
                record.status = "ABORTED" if isinstance(error, Stopped) else "FAILED"
            raise
        finally:
            record.stop = now()

    def read_batches(self, state: dict[str, Any], effective: Any, context: Context,
                     child: ChildRuns) -> Iterator[Batch]:
        """Read the items (ItemReader), select each (ItemSelector) and batch them (ItemBatcher) into the child
        runs' spool: the child executions' inputs, each checked against the 256 KiB limit, yielded as each is
        complete, so children run while the rest is still read (the Map Run's totals grow as they start)."""

        def spooled(data: bytes, first_item: int, items: int) -> Batch:
            with child.spool_lock:  # children read the spool meanwhile
                child.spool.seek(0, os.SEEK_END)
                batch = Batch(child.spool.tell(), len(data), first_item, items)
                child.spool.write(data)
            return batch

        reader = state["ItemReader"]
        location = evaluate(reader["Parameters"], effective, context, "ItemReader.Parameters")
        max_items = reader["ReaderConfig"].get("MaxItems")
        batcher = state.get("ItemBatcher")
        if batcher is not None:
            envelope = {"BatchInput": evaluate(batcher["BatchInput"], effective, context, "BatchInput")} \
                if "BatchInput" in batcher else {}
            base = json_size({**envelope, "Items": []})
            max_items_per_batch = batcher.get("MaxItemsPerBatch", math.inf)
            max_bytes = min(batcher.get("MaxInputBytesPerBatch", DATA_LIMIT), DATA_LIMIT)
        pending: list[bytes] = []
        pending_size, first = 0, 0

        def flush() -> Batch:
            nonlocal pending, pending_size
            data = (encoded(envelope)[:-1] + b"," if envelope else b"{") + b'"Items":[' + b",".join(pending) + b"]}"
            batch = spooled(data, first, len(pending))
            pending, pending_size = [], 0
            return batch

        for index, (line, item) in enumerate(self.read_items(location, max_items)):
            context.item = {"Index": index, "Value": item}
            try:
                selected = evaluate(state["ItemSelector"], effective, context, "ItemSelector") \
                    if "ItemSelector" in state else item
            finally:
                context.item = None
            text = encoded(selected)
            size = len(text)
            if batcher is None:
                if size > DATA_LIMIT:
                    raise StatesError("States.DataLimitExceeded", f"line {line}: {size} bytes, over the "
                                                                  f"{DATA_LIMIT}-byte input of a child execution")
                yield spooled(text, index, 1)
                continue
            if base + size > max_bytes:
                raise StatesError("States.ItemReaderFailed",
                                  f"line {line}: a batch of this item alone takes {base + size} bytes, more than "
                                  f"MaxInputBytesPerBatch ({max_bytes})")
            separator = 1 if pending else 0
            if pending and (len(pending) >= max_items_per_batch or base + pending_size + separator + size > max_bytes):
                yield flush()
                separator = 0
            if not pending:
                first = index
            pending.append(text)
            pending_size += separator + size
        if pending:
            yield flush()

    def read_items(self, location: dict[str, Any], max_items: int | None) -> Iterator[tuple[int, Any]]:
        """The JSONL object's items with their 1-based line numbers (blank lines hold none), one per line, read a
        chunk at a time: a line that is not one JSON value fails
        the Map run (States.ItemReaderFailed), as does a line too long to be any child's input."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = location.get("Bucket"), location.get("Key")
        if not isinstance(bucket, str) or not isinstance(key, str):
            raise StatesError("States.ItemReaderFailed", "ItemReader.Parameters: Bucket and Key must be strings")
        try:
            body = self.services.s3.get_object(Bucket=bucket, Key=key)["Body"]
        except (ClientError, BotoCoreError) as error:
            raise StatesError("States.ItemReaderFailed", f"s3:getObject s3://{bucket}/{key}: {error}") from None
        count, number, pending = 0, 0, b""
        with contextlib.closing(body):
            while max_items is None or count < max_items:
                chunk = body.read(READ_CHUNK)
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop() if chunk else b""
                if len(pending) > DATA_LIMIT:
                    raise StatesError("States.ItemReaderFailed", f"line {number + len(lines) + 1}: longer than "
                                                                 f"{DATA_LIMIT} bytes")
                for line in lines:
                    number += 1
                    if not line.strip():
                        continue
                    try:
                        item = json.loads(line.decode("utf-8"))
                    except (UnicodeDecodeError, ValueError, RecursionError):
                        raise StatesError("States.ItemReaderFailed", f"line {number}: not one JSON value in "
                                                                     f"UTF-8") from None
                    yield number, item
                    count += 1
                    if max_items is not None and count >= max_items:
                        return
                if not chunk:
                    return


class ChildRuns:
    """A Map Run's child executions: run in threads, at most ``parallel`` at once, their records spooled in
    completion order (SUCCEEDED and FAILED apart) for ResultWriter."""

    def __init__(self, machine: StateMachine, state: dict[str, Any], label: str, run_id: str, record: MapRun,
                 spool: IO[bytes], state_input: tuple[Any, Context]) -> None:
        self.machine, self.state, self.label, self.run_id, self.record = machine, state, label, run_id, record
        self.state_input = state_input  # the Map state's effective input and context, for ResultWriter's paths
        self.spool, self.spool_lock = spool, threading.Lock()
        self.express = state["ItemProcessor"]["ProcessorConfig"]["ExecutionType"] == "EXPRESS"
        self.exceeded = False
        self.written: dict[str, Any] | None = None

    def read(self, batch: Batch) -> str:
        with self.spool_lock:
            self.spool.seek(batch.offset)
            return self.spool.read(batch.size).decode("utf-8")

    def run_one(self, batch: Batch) -> dict[str, Any]:
        """One child execution: its record as ResultWriter writes it."""
        machine, name = self.machine, str(uuid.uuid4())
        arn = machine.arn_of(f"express:{machine.name}/{self.label}:{self.run_id}:{name}" if self.express else
                             f"execution:{machine.name}/{self.label}:{name}")
        started = now()
        text = self.read(batch)
        data = json.loads(text)
        context = Context({"Id": arn, "Input": data, "Name": name, "StartTime": timestamp(started),
                           "RoleArn": LOCAL_ROLE},
                          {"Id": f"{machine.arn}/{self.label}", "Name": f"{machine.name}/{self.label}"},
                          self.state_input[1].control, self.express)
        entry: dict[str, Any] = {"ExecutionArn": arn, "Input": text, "InputDetails": {"Included": True},
                                 "Name": name}
        try:
            output = machine.run(self.state["ItemProcessor"], data, context)
            entry.update(Output=dumps(output), OutputDetails={"Included": True}, Status="SUCCEEDED")
        except StatesError as error:
            entry.update(Error=error.error, Cause=error.cause, Status="FAILED")
        entry.update(RedriveCount=0, RedriveStatus="NOT_REDRIVABLE",
                     RedriveStatusReason="Execution is SUCCEEDED and cannot be redriven"
                     if entry["Status"] == "SUCCEEDED" else "Execution is an express execution",
                     StartDate=timestamp(started), StateMachineArn=context.machine["Id"], StopDate=timestamp(now()))
        return entry

    def tolerated(self, read_all: bool) -> bool:
        """Whether the failed items are within ToleratedFailureCount and ToleratedFailurePercentage (each only
        when given; with neither, no failure is tolerated). The percentage is of every item: it is judged once all
        are read (``read_all``), as the count can be at any time."""
        record = self.record
        failed, total = record.items["failed"], record.items["total"]
        count, percentage = record.tolerated_count, record.tolerated_percentage
        if count is None and percentage is None:
            return failed == 0
        return not ((count is not None and failed > count) or (
            read_all and percentage is not None and failed * 100 > percentage * total))

    def run_all(self, batches: Iterator[Batch], parallel: int) -> list[Any] | None:
        """Every child execution, started as its batch is read (no new one starts once the tolerated failures are
        exceeded); their outputs in item order when the Map has no ResultWriter, else None (the results are written
        to S3)."""
        record, services = self.record, self.machine.services
        outputs: list[Any] | None = None if "ResultWriter" in self.state else []
        output_bytes = 2
        pool = concurrent.futures.ThreadPoolExecutor(parallel, thread_name_prefix="child")
        with tempfile.TemporaryFile() as succeeded, tempfile.TemporaryFile() as failed:
            files: dict[str, IO[bytes]] = {"SUCCEEDED": succeeded, "FAILED": failed}
            counts = {"SUCCEEDED": 0, "FAILED": 0}
            running: dict[concurrent.futures.Future[dict[str, Any]], tuple[int, Batch]] = {}
            started, done, read_all = 0, 0, False
            try:
                while True:
                    while len(running) < parallel and not self.exceeded and not read_all:
                        batch = next(batches, None)  # read now: a child runs on while the next batch is read
                        if batch is None:
                            read_all = True
                            break
                        record.items["total"] += batch.items
                        record.executions["total"] += 1
                        record.items["running"] += batch.items
                        record.executions["running"] += 1
                        running[pool.submit(self.run_one, batch)] = (started, batch)
                        started += 1
                        if outputs is not None:
                            outputs.append(None)
                    if not running:
                        if read_all and not self.tolerated(read_all):
                            self.exceeded = True
                        break
                    finished, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
                    for future in finished:
                        number, batch = running.pop(future)
                        entry = future.result()
                        status = entry["Status"]
                        key = "succeeded" if status == "SUCCEEDED" else "failed"
                        for counter, amount in ((record.items, batch.items), (record.executions, 1)):
                            counter["running"] -= amount
                            counter[key] += amount
                        target = files[status]
                        target.write((b"," if counts[status] else b"[") + encoded(entry))
                        counts[status] += 1
                        if outputs is not None:
                            value = json.loads(entry["Output"]) if status == "SUCCEEDED" else \
                                {"Error": entry["Error"], "Cause": entry["Cause"]}
                            output_bytes += json_size(value) + 1
                            if output_bytes > DATA_LIMIT:
                                raise StatesError("States.DataLimitExceeded",
                                                  f"The Map state's output is over {DATA_LIMIT} bytes (a ResultWriter "
                                                  f"writes larger results to S3)")
                            outputs[number] = value
                        if not self.tolerated(read_all):
                            self.exceeded = True
                        done += 1
                        if services.progress:
                            services.progress(done, record.executions["total"])
            finally:  # on an error or Ctrl-C, children still running are left to end on their own
                pool.shutdown(wait=not running, cancel_futures=True)
            for status, target in files.items():
                if counts[status]:
                    target.write(b"]")
            if "ResultWriter" in self.state:
                self.written = self.write_results(files, counts)
        return outputs

    def write_results(self, files: dict[str, IO[bytes]], counts: dict[str, int]) -> dict[str, Any]:
        """ResultWriter: the result files and the manifest under Prefix/<Map Run id>/, as AWS writes them; the Map
        state's output names the manifest."""
        from botocore.exceptions import BotoCoreError, ClientError

        machine = self.machine
        location = evaluate(self.state["ResultWriter"]["Parameters"], *self.state_input, "ResultWriter.Parameters")
        bucket, prefix = location["Bucket"], location["Prefix"]
        folder = f"{prefix}/" if prefix and not prefix.endswith("/") else prefix
        folder += f"{self.run_id}/"
        manifest: dict[str, Any] = {"DestinationBucket": bucket, "MapRunArn": self.record.arn,
                                    "ResultFiles": {"FAILED": [], "PENDING": [], "SUCCEEDED": []}}
        try:
            for status, spool in files.items():
                if not counts[status]:
                    continue
                for number, (start, size) in enumerate(split_result_file(spool)):
                    key = f"{folder}{status}_{number}.json"
                    spool.seek(start)
                    machine.services.s3.upload_fileobj(LimitedReader(spool, size), bucket, key)
                    manifest["ResultFiles"][status].append({"Key": key, "Size": size})
            key = f"{folder}manifest.json"
            machine.services.s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest, indent=2).encode())
        except (ClientError, BotoCoreError) as error:
            raise StatesError("States.ResultWriterFailed", f"s3:putObject s3://{bucket}/{folder}: {error}") from None
        self.record.items["resultsWritten"] = self.record.items["succeeded"] + self.record.items["failed"]
        self.record.executions["resultsWritten"] = counts["SUCCEEDED"] + counts["FAILED"]
        return {"MapRunArn": self.record.arn, "ResultWriterDetails": {"Bucket": bucket, "Key": key}}


def split_result_file(spool: IO[bytes]) -> list[tuple[int, int]]:
    """(offset, size) of each result file: the whole spool, a JSON array, when it is within RESULT_FILE_LIMIT."""
    spool.seek(0, os.SEEK_END)
    size = spool.tell()
    if size > RESULT_FILE_LIMIT:
        raise StatesError("States.ResultWriterFailed", f"results of {size} bytes: the local runner writes one "
                                                       f"result file of at most {RESULT_FILE_LIMIT} bytes per status")
    return [(0, size)]


class LimitedReader:
    """At most ``size`` bytes of a file from its current position (for an upload of part of a spool)."""

    def __init__(self, file: IO[bytes], size: int) -> None:
        self.file, self.left = file, size

    def read(self, amount: int = -1) -> bytes:
        amount = self.left if amount is None or amount < 0 else min(amount, self.left)
        data = self.file.read(amount)
        self.left -= len(data)
        return data


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
