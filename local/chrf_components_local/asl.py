"""The Amazon States Language as the local runner (states.py) reads it: a definition parsed once, before anything
runs, into a few state types (Pass, Task, Map, Choice, Succeed, Fail), their paths, payload templates, retriers,
catchers and Choice rules parsed with them. Constructing them is where whatever the runner does not implement, or
AWS would not accept either (a field, a type, a value out of AWS's documented range, a malformed shape), is refused
by name, in one line (NotImplementedByRunner); the runner then only reads their attributes.

What it reads: states ``Task`` (``arn:aws:states:::lambda:invoke`` only), ``Map`` (a Distributed Map), ``Pass``,
``Choice``, ``Fail`` and ``Succeed``, with ``InputPath``, ``Parameters``, ``ResultSelector``, ``ResultPath`` and
``OutputPath`` (JSONPath reference paths: ``$``, ``$$`` for the context object, ``.field``, ``['field']``,
``[index]``); ``Retry`` and ``Catch``; the Distributed Map's ``ItemReader`` (``s3:getObject``, JSONL, ``MaxItems``),
``ItemSelector``, ``ItemBatcher``, ``ItemProcessor`` (its own machine), ``MaxConcurrency``, the tolerated failures,
``Label`` and ``ResultWriter`` (``s3:putObject``, with or without ``WriterConfig``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, NamedTuple, Protocol

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
S3_GET_OBJECT = "arn:aws:states:::s3:getObject"
S3_PUT_OBJECT = "arn:aws:states:::s3:putObject"
TRANSFORMATIONS = ("NONE", "COMPACT", "FLATTEN")  # ResultWriter.WriterConfig (input-output-resultwriter.html)
OUTPUT_TYPES = ("JSON", "JSONL")
MAP_CONCURRENCY_LIMIT = 10000  # a Distributed Map's MaxConcurrency at most (state-map-distributed.html)
LABEL_LIMIT = 40  # characters of a Distributed Map's Label (state-map-distributed.html)
LABEL_FORBIDDEN = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")
RETRY_LIMIT = 99999999  # IntervalSeconds and MaxAttempts at most (concepts-error-handling.html)
MAX_DELAY_LIMIT = 31622400  # MaxDelaySeconds at most: a year, a Standard execution's longest duration
DATA_LIMIT = 256 * 1024  # bytes of a state's or task's input or output, and of a child execution's input

JSONPATH, JSONATA = "JSONPath", "JSONata"  # the query languages (a definition's or a state's QueryLanguage)
COMMON = {"Type", "Comment", "QueryLanguage", "InputPath", "OutputPath", "Next", "End"}
STATE_FIELDS = {  # JSONPath states (amazon-states-language-*-state.html)
    "Task": COMMON | {"Resource", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Assign"},
    "Map": COMMON | {"ItemReader", "ItemSelector", "ItemBatcher", "ItemProcessor", "MaxConcurrency",
                     "ToleratedFailureCount", "ToleratedFailurePercentage", "ResultWriter", "ResultSelector",
                     "ResultPath", "Retry", "Catch", "Label", "Assign"},
    "Pass": COMMON | {"Parameters", "Result", "ResultPath", "Assign"},
    "Wait": COMMON | {"Seconds", "Timestamp", "SecondsPath", "TimestampPath", "Assign"},
    "Parallel": COMMON | {"Branches", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Assign"},
    "Choice": {"Type", "Comment", "QueryLanguage", "InputPath", "OutputPath", "Choices", "Default", "Assign"},
    "Succeed": {"Type", "Comment", "QueryLanguage", "InputPath", "OutputPath"},
    "Fail": {"Type", "Comment", "QueryLanguage", "Error", "Cause", "ErrorPath", "CausePath"},
}
JSONATA_COMMON = {"Type", "Comment", "QueryLanguage", "Output", "Assign", "Next", "End"}
JSONATA_FIELDS = {  # JSONata states (transforming-data.html): no paths, Arguments and Output instead
    "Task": JSONATA_COMMON | {"Resource", "Arguments", "Retry", "Catch"},
    "Pass": JSONATA_COMMON,
    "Wait": JSONATA_COMMON | {"Seconds", "Timestamp"},
    "Parallel": JSONATA_COMMON | {"Branches", "Arguments", "Retry", "Catch"},
    "Choice": {"Type", "Comment", "QueryLanguage", "Choices", "Default", "Output", "Assign"},
    "Succeed": {"Type", "Comment", "QueryLanguage", "Output"},
    "Fail": {"Type", "Comment", "QueryLanguage", "Error", "Cause"},
}
RETRY_FIELDS = {"ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds", "JitterStrategy",
                "Comment"}
CATCH_FIELDS = {"ErrorEquals", "ResultPath", "Next", "Comment", "Assign"}
JSONATA_CATCH_FIELDS = {"ErrorEquals", "Next", "Comment", "Output", "Assign"}
LAMBDA_PARAMETERS = {"FunctionName", "Payload", "Qualifier"}
FUNCTION_ARN = re.compile(r"arn:aws:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?")
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,79}")  # workflow-variables.html: at most 80 characters
WAIT_LIMIT = 31622400  # a Wait's Seconds at most: a year, a Standard execution's longest duration
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
VARIABLE_ROOT = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
PATH_STEP = re.compile(r"\.([^.\[\]\s'\"*@()?,]+)|\['([^'\\]*)'\]|\[(\d+)\]")


class NotImplementedByRunner(Exception):
    """The definition asks for something this runner does not implement, or that AWS would not accept either:
    found before anything runs, named in one line."""


class StatesError(Exception):
    """A Step Functions error (its name, as Retry and Catch match it) and its cause."""

    def __init__(self, error: str, cause: str = "") -> None:
        super().__init__(f"{error}: {cause}")
        self.error, self.cause = error, cause


class Context(Protocol):
    """What a path reads of the execution it runs in: the context object ($$)."""

    item: dict[str, Any] | None  # $$.Map.Item while a Map's ItemSelector is evaluated
    variables: dict[str, Any]  # the workflow variables in scope ($name)

    def data(self) -> dict[str, Any]: ...

    def part(self, name: Any) -> Any: ...  # data()[name] if there is one, else None

    def bindings(self, data: Any, **extra: Any) -> dict[str, Any]: ...  # what a JSONata expression sees


Predicate = Callable[[Any, Context], bool]  # a Choice rule as it runs: whether it holds of a state's data


def refuse(where: str, what: str) -> NotImplementedByRunner:
    return NotImplementedByRunner(f"{where}: the local runner does not implement {what}")


# ---- paths and payload templates ---------------------------------------------------------------------------------


class Path:
    """A JSONPath reference path, parsed: its root ('$' or '$$', the context object) and steps (names, indexes)."""

    __slots__ = ("item_steps", "root", "steps", "text", "variable")

    def __init__(self, text: Any, where: str, field: str) -> None:
        if not isinstance(text, str) or not text.startswith("$"):
            raise refuse(where, f"{field} {text!r} (a JSONPath must start with $)")
        self.text, self.root = text, "$$" if text.startswith("$$") else "$"
        variable = VARIABLE_ROOT.match(text) if self.root == "$" else None
        self.variable = variable.group(1) if variable else None  # $name: a workflow variable (workflow-variables.html)
        steps: list[str | int] = []
        position = variable.end() if variable else len(self.root)
        while position < len(text):
            match = PATH_STEP.match(text, position)
            if match is None:
                raise refuse(where, f"the JSONPath {text} in {field} (only reference paths: .name, ['name'], [index])")
            name, quoted, index = match.groups()
            steps.append(int(index) if index is not None else name if name is not None else quoted)
            position = match.end()
        self.steps = tuple(steps)
        # $$.Map.Item...: read from the context's item directly (an ItemSelector asks it of every item)
        self.item_steps = self.steps[2:] if self.root == "$$" and self.steps[:2] == ("Map", "Item") else None

    def resolve(self, data: Any, context: Context, field: str) -> Any:
        """The value the path names in ``data`` (or the context object); States.Runtime naming ``field`` if none."""
        steps = self.steps
        if self.item_steps is not None and context.item is not None:
            value: Any = context.item
            steps = self.item_steps
        elif self.variable is not None:
            if self.variable not in context.variables:
                raise StatesError("States.Runtime", f"The JSONPath '{self.text}' specified for the field '{field}' "
                                                    f"names the variable ${self.variable}, which is not assigned")
            value = context.variables[self.variable]
        elif self.root == "$$" and steps:  # the part of the context object the path starts in, not all of it
            value = context.part(steps[0])
            if value is None:
                raise StatesError("States.Runtime", f"The JSONPath '{self.text}' specified for the field '{field}' "
                                                    f"could not be found in the input")
            steps = steps[1:]
        else:
            value = context.data() if self.root == "$$" else data
        for step in steps:
            if isinstance(step, str):
                if isinstance(value, dict) and step in value:
                    value = value[step]
                    continue
            elif isinstance(value, list) and step < len(value):
                value = value[step]
                continue
            raise StatesError("States.Runtime", f"The JSONPath '{self.text}' specified for the field '{field}' "
                                                f"could not be found in the input")
        return value

    def put(self, data: Any, value: Any) -> Any:
        """``data`` with ``value`` placed where this ResultPath says ('$': it replaces the input). Only the objects
        along the path are copied: the input itself is not changed."""
        if not self.steps:
            return value
        root = dict(data) if isinstance(data, dict) else None
        if root is None:
            raise StatesError("States.ResultPathMatchFailure",
                              f"Unable to apply ResultPath {self.text}: the state's input is not an object")
        target = root
        for step in self.steps[:-1]:
            inner = target.get(step)
            if inner is None:
                inner = {}
            elif not isinstance(inner, dict):
                raise StatesError("States.ResultPathMatchFailure",
                                  f"Unable to apply ResultPath {self.text}: {step} is not an object")
            target[step] = inner = dict(inner)
            target = inner
        target[self.steps[-1]] = value
        return root


ROOT = Path("$", "", "")


def optional_path(state: dict[str, Any], field: str, where: str, name: str = "") -> Path | None:
    """InputPath, OutputPath or ResultPath: '$' when absent, None when null (the empty object for InputPath and
    OutputPath, the result discarded for ResultPath)."""
    if field not in state:
        return ROOT
    return Path(state[field], where, name or field) if state[field] is not None else None


class Template:
    """A payload template (Parameters, ResultSelector, ItemSelector, ...), parsed: every ``key.$`` a path (an
    intrinsic function is refused by name)."""

    __slots__ = ("tree",)

    def __init__(self, template: Any, where: str, field: str) -> None:
        self.tree = self._parsed(template, where, field)

    @classmethod
    def _parsed(cls, template: Any, where: str, field: str) -> Any:
        if isinstance(template, dict):
            entries: list[tuple[str, str | None, Any]] = []
            for key, value in template.items():
                if isinstance(key, str) and key.endswith(".$"):
                    entries.append((key[:-2], key, path_or_call(value, where, f"{field}.{key}")))
                else:
                    entries.append((key, None, cls._parsed(value, where, f"{field}.{key}")))
            return dict, entries
        if isinstance(template, list):
            return list, [cls._parsed(value, where, f"{field}[{number}]") for number, value in enumerate(template)]
        return None, template

    def evaluate(self, data: Any, context: Context) -> Any:
        """The template with its paths resolved against ``data`` and the context object."""
        return self._evaluated(self.tree, data, context)

    @classmethod
    def _evaluated(cls, tree: Any, data: Any, context: Context) -> Any:
        kind, content = tree
        if kind is dict:
            return {key: inner.resolve(data, context, field) if field is not None else
                    cls._evaluated(inner, data, context) for key, field, inner in content}
        if kind is list:
            return [cls._evaluated(inner, data, context) for inner in content]
        return content


def path_or_call(value: Any, where: str, field: str) -> Any:
    """A ``key.$`` value: a JSONPath, or an intrinsic function (intrinsics.py); either answers ``resolve``."""
    if isinstance(value, str) and value.startswith("States."):
        from . import intrinsics

        try:
            return intrinsics.parse(value, lambda text: Path(text, where, field))
        except ValueError as error:
            raise refuse(where, f"the intrinsic function in {field} ({error})") from None
    return Path(value, where, field)


def optional_template(state: dict[str, Any], field: str, where: str, name: str = "") -> Template | None:
    return Template(state[field], where, name or field) if field in state else None


# ---- fields --------------------------------------------------------------------------------------------------------


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


def error_names(entry: dict[str, Any], where: str, field: str, last: bool) -> list[str]:
    """ErrorEquals: names; States.ALL alone, and only in the last retrier or catcher (AWS: "must appear alone in
    the array and must appear in the last retrier/catcher", concepts-error-handling.html)."""
    names = entry.get("ErrorEquals")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        raise refuse(where, f"{field}.ErrorEquals that is not a non-empty list of error names")
    if "States.ALL" in names and names != ["States.ALL"]:
        raise refuse(where, f"{field}.ErrorEquals with States.ALL beside other names (AWS requires it alone)")
    if "States.ALL" in names and not last:
        raise refuse(where, f"{field}.ErrorEquals States.ALL before the last one (AWS requires it last)")
    return names


def names_state(value: Any, states: dict[str, Any]) -> bool:
    """Whether a Next, StartAt or Default names a state (a string: a list or an object names none)."""
    return isinstance(value, str) and value in states


def check_comment(value: dict[str, Any], where: str) -> None:
    if not isinstance(value.get("Comment", ""), str):
        raise refuse(where, "a Comment that is not a string")


@dataclass
class Retrier:
    """A Retry entry, with AWS's defaults (concepts-error-handling.html)."""

    error_equals: list[str]
    interval: float = 1
    max_attempts: int = 3
    backoff_rate: float = 2.0
    max_delay: float = MAX_DELAY_LIMIT  # no wait outlasts a Standard execution
    full_jitter: bool = False


@dataclass
class Catcher:
    error_equals: list[str]
    result_path: Path | None
    next: str
    output: Any = None  # JSONata: the Catch's Output (None: the error output)
    assign: Any = None  # the Catch's Assign (an Assigner)


class Assigner:
    """A state's (or a Catch's or a Choice rule's) Assign: each variable's value, evaluated together (every value
    sees the variables as they were when the state was entered), then assigned (workflow-variables.html)."""

    __slots__ = ("language", "value")

    def __init__(self, assign: Any, where: str, language: str, field: str = "Assign") -> None:
        if not isinstance(assign, dict):
            raise refuse(where, f"{field} that is not a JSON object")
        for key in assign:
            name = key.removesuffix(".$") if language == JSONPATH else key
            if not VARIABLE_NAME.fullmatch(name) or name == "states":
                raise refuse(where, f"{field}.{key} (a variable's name is a letter or _ then letters, digits or _, "
                                    f"at most 80, and not the reserved states)")
        self.language = language
        self.value: Any = Template(assign, where, field) if language == JSONPATH else \
            jsonata_value(assign, where, field)

    def evaluate(self, data: Any, context: Context, bindings: dict[str, Any] | None) -> dict[str, Any]:
        """The values to assign: JSONPath paths read ``data``; JSONata expressions ``bindings``."""
        if self.language == JSONPATH:
            return dict(self.value.evaluate(data, context))
        assert bindings is not None
        return dict(self.value.evaluate(bindings))


def jsonata_value(value: Any, where: str, field: str) -> Any:
    from .jsonata_language import Value

    return Value(value, lambda what: refuse(where, what), field)


# ---- states --------------------------------------------------------------------------------------------------------


@dataclass
class State:
    """What every state has: its name (``where`` names it in messages), input and output paths ('$' when absent,
    None when null), its Next or End; its query language, its Assign, and in JSONata its Output and Arguments."""

    name: str
    input_path: Path | None
    output_path: Path | None
    next: str | None
    end: bool
    language: str = dataclass_field(default=JSONPATH, kw_only=True)
    assign: Assigner | None = dataclass_field(default=None, kw_only=True)
    output: Any = dataclass_field(default=None, kw_only=True)  # JSONata Output (a jsonata_language.Value)
    arguments: Any = dataclass_field(default=None, kw_only=True)  # JSONata Arguments


@dataclass
class Succeed(State):
    pass


@dataclass
class Fail(State):
    error: Any  # JSONata: a Value
    cause: Any
    error_path: Path | None
    cause_path: Path | None


class Rule(NamedTuple):
    """A Choice rule: whether it holds of the state's input, where it leads, and (JSONata) its Output and Assign."""

    holds: Predicate
    next: str
    output: Any = None
    assign: Assigner | None = None


@dataclass
class Choice(State):
    choices: list[Rule]
    default: str | None


@dataclass
class Pass(State):
    parameters: Template | None
    result: Any  # Result, or NO_RESULT: the effective input passes
    result_path: Path | None


NO_RESULT = object()


@dataclass
class Wait(State):
    """A Wait: Seconds or Timestamp, given (a number, a date; JSONata: either may be an expression) or read from
    the input (SecondsPath, TimestampPath)."""

    seconds: Any
    timestamp: Any
    seconds_path: Path | None
    timestamp_path: Path | None


@dataclass
class Task(State):
    """A Lambda Task (``arn:aws:states:::lambda:invoke``, or a function's ARN as Resource), or (as Map's and
    Parallel's base) any state that runs work with Retry and Catch."""

    parameters: Template | None
    result_selector: Template | None
    result_path: Path | None
    retriers: list[Retrier]
    catchers: list[Catcher]
    resource: str = dataclass_field(default=LAMBDA_INVOKE, kw_only=True)


@dataclass
class Parallel(Task):
    branches: list[Machine]


@dataclass
class Map(Task):
    """A Distributed Map."""

    processor: Machine
    express: bool
    reader: Template
    max_items: int | None
    selector: Template | None
    batch_input: Template | None
    batched: bool
    max_items_per_batch: float
    max_input_bytes: int
    max_concurrency: int
    label: str
    tolerated_count: int | None
    tolerated_percentage: float | None
    writer: Template | None
    transformation: str  # ResultWriter.WriterConfig's: NONE (the records), COMPACT or FLATTEN (the outputs)
    output_type: str  # JSON (an array a file) or JSONL (a record a line)


@dataclass
class Machine:
    """A state machine (or a Map's ItemProcessor, or a Parallel's branch), parsed."""

    start_at: str
    states: dict[str, State]
    language: str = JSONPATH


Base = tuple[str, Path | None, Path | None, str | None, bool]  # what every state has, in State's order


class AnyName(dict):  # type: ignore[type-arg]
    """The states a single state's Next may name when it is tested alone (TestState): any."""

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)


def query_language(value: dict[str, Any], inherited: str, where: str) -> str:
    """A machine's or a state's QueryLanguage: JSONPath unless it says JSONata; a state in a JSONata machine cannot
    go back to JSONPath (AWS refuses it)."""
    language = value.get("QueryLanguage", inherited)
    if language not in (JSONPATH, JSONATA):
        raise refuse(where, f"QueryLanguage {json.dumps(language)[:40]} (JSONPath or JSONata)")
    if inherited == JSONATA and language == JSONPATH:
        raise refuse(where, "QueryLanguage JSONPath in a JSONata state machine (AWS refuses it)")
    return str(language)


def parse_machine(machine: Any, where: str = "the definition", child: bool = False,
                  inherited: str = JSONPATH) -> Machine:
    """A state machine (or a Map's ItemProcessor, a Parallel's branch): StartAt, States, each state's fields and
    their types and AWS's ranges; Next targets exist. Whatever the shape, the answer is the parsed machine or
    NotImplementedByRunner, in one line."""
    if not child:
        try:
            json.dumps(machine, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise refuse(where, "a string holding a lone surrogate (not UTF-8 text, which AWS requires)") from None
        except RecursionError:
            raise refuse(where, "JSON nested this deeply") from None
    allowed = {"StartAt", "States", "Comment", "ProcessorConfig", "QueryLanguage"} if child else \
        {"StartAt", "States", "Comment", "QueryLanguage", "Version"}
    check_fields(machine, allowed, where, "")
    check_comment(machine, where)
    if machine.get("Version", "1.0") != "1.0":
        raise refuse(where, f"Version {json.dumps(machine['Version'])[:20]} (the States Language is 1.0)")
    language = query_language(machine, inherited, where)
    states = machine.get("States")
    if not isinstance(states, dict) or not states or not names_state(machine.get("StartAt"), states):
        raise refuse(where, "a machine without States or whose StartAt names no state")
    return Machine(machine["StartAt"], {name: parse_state(name, state, states, language)
                                        for name, state in states.items()}, language)


def parse_state(name: str, state: Any, states: dict[str, Any], inherited: str = JSONPATH) -> State:
    where = f"state {name}"
    kind = state.get("Type") if isinstance(state, dict) else None
    if kind not in STATE_FIELDS:
        raise refuse(where, f"the state type {kind}")
    assert isinstance(state, dict)
    language = query_language(state, inherited, where)
    if language == JSONATA:
        if kind not in JSONATA_FIELDS:
            raise refuse(where, f"a {kind} state in JSONata (use JSONPath for it)")
        check_fields(state, JSONATA_FIELDS[kind], where, "")
    else:
        check_fields(state, STATE_FIELDS[kind], where, "")
    input_path, output_path = (optional_path(state, field, where) for field in ("InputPath", "OutputPath"))
    result_path = optional_path(state, "ResultPath", where)
    if result_path is not None and (result_path.root != "$" or result_path.variable is not None
                                    or any(isinstance(step, int) for step in result_path.steps)):
        raise refuse(where, f"ResultPath {state['ResultPath']} (only field names under $)")
    parameters, result_selector, selector = (optional_template(state, field, where)
                                             for field in ("Parameters", "ResultSelector", "ItemSelector"))
    end = False
    if kind not in ("Choice", "Succeed", "Fail"):
        end = state.get("End") is True
        if end:
            if "Next" in state:
                raise refuse(where, "both Next and End")
        elif not names_state(state.get("Next"), states):
            raise refuse(where, f"Next {state.get('Next')!r}, which names no state")
    check_comment(state, where)
    extra: dict[str, Any] = {"language": language}
    if "Assign" in state:
        extra["assign"] = Assigner(state["Assign"], where, language)
    if language == JSONATA:
        for key in ("Output", "Arguments"):
            if key in state:
                extra[key.lower()] = jsonata_value(state[key], where, key)
    base = (name, input_path, output_path, None if end else state.get("Next"), end)
    retriers, catchers = retry_and_catch(state, states, where, language)
    if kind == "Task":
        resource = check_task(state, where, language)
        return Task(*base, parameters, result_selector, result_path, retriers, catchers, resource=resource, **extra)
    if kind == "Parallel":
        branches = state.get("Branches")
        if not isinstance(branches, list) or not branches:
            raise refuse(where, "a Parallel state without Branches (a non-empty list of state machines)")
        machines = [parse_machine(branch, f"{where} (Branches[{number}])", child=True, inherited=language)
                    for number, branch in enumerate(branches)]
        for number, branch in enumerate(branches):
            if "ProcessorConfig" in branch:
                raise refuse(where, f"Branches[{number}].ProcessorConfig")
        return Parallel(*base, parameters, result_selector, result_path, retriers, catchers, machines,
                        resource="", **extra)
    if kind == "Map":
        return parse_map(state, where, Task(*base, parameters, result_selector, result_path, retriers, catchers,
                                            resource="", **extra), selector)
    if kind == "Pass":
        return Pass(*base, parameters, state.get("Result", NO_RESULT), result_path, **extra)
    if kind == "Wait":
        return parse_wait(state, where, base, language, extra)
    if kind == "Choice":
        return parse_choice(state, where, base, states, language, extra)
    if kind == "Fail":
        if language == JSONATA:
            error, cause = (jsonata_value(state[key], where, key) if key in state else None
                            for key in ("Error", "Cause"))
            return Fail(*base, error, cause, None, None, **extra)
        error_path, cause_path = (Path(state[field], where, field) if field in state else None
                                  for field in ("ErrorPath", "CausePath"))
        return Fail(*base, state.get("Error", "States.Fail"), state.get("Cause", ""), error_path, cause_path,
                    **extra)
    return Succeed(*base, **extra)


def parse_wait(state: dict[str, Any], where: str, base: Base, language: str,
               extra: dict[str, Any]) -> Wait:
    """A Wait: exactly one of Seconds, Timestamp, SecondsPath, TimestampPath (amazon-states-language-wait-state.html);
    Seconds a non-negative integer, Timestamp an ISO 8601 date (RFC 3339)."""
    given = [key for key in ("Seconds", "Timestamp", "SecondsPath", "TimestampPath") if key in state]
    if len(given) != 1:
        raise refuse(where, f"a Wait with {len(given)} of Seconds, Timestamp, SecondsPath and TimestampPath (one "
                            f"is required)")
    (key,) = given
    value = state[key]
    seconds = timestamp = None
    seconds_path = timestamp_path = None
    if language == JSONATA and isinstance(value, str) and value.startswith("{%"):
        parsed = jsonata_value(value, where, key)
        seconds, timestamp = (parsed, None) if key == "Seconds" else (None, parsed)
    elif key == "Seconds":
        check_positive(state, "Seconds", where, 0, maximum=WAIT_LIMIT)
        seconds = value
    elif key == "Timestamp":
        if parse_timestamp(value) is None:
            raise refuse(where, f"Timestamp {json.dumps(value)[:40]} (an ISO 8601 date such as "
                                f"2026-03-14T01:59:00Z)")
        timestamp = value
    else:
        path = Path(value, where, key)
        seconds_path, timestamp_path = (path, None) if key == "SecondsPath" else (None, path)
    return Wait(*base, seconds, timestamp, seconds_path, timestamp_path, **extra)


TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def parse_timestamp(value: Any) -> Any:
    """An RFC 3339 date (with its offset, as Step Functions requires) as an aware datetime, or None."""
    import datetime

    if not isinstance(value, str) or not TIMESTAMP.fullmatch(value):
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_choice(state: dict[str, Any], where: str, base: Base, states: dict[str, Any], language: str,
                 extra: dict[str, Any]) -> Choice:
    choices = state.get("Choices")
    if not isinstance(choices, list) or not choices:
        raise refuse(where, "a Choice state without Choices")
    rules = []
    for number, rule in enumerate(choices):
        field = f"Choices[{number}]"
        if language == JSONATA:
            check_fields(rule, {"Condition", "Next", "Comment", "Output", "Assign"}, where, field)
            if "Condition" not in rule:
                raise refuse(where, f"{field} without Condition (a JSONata Choice rule's test)")
            predicate = jsonata_condition(rule["Condition"], where, f"{field}.Condition")
            output = jsonata_value(rule["Output"], where, f"{field}.Output") if "Output" in rule else None
        else:
            predicate = parse_rule({key: value for key, value in rule.items() if key != "Assign"}
                                   if isinstance(rule, dict) else rule, where, field, top=True)
            output = None
        assign = Assigner(rule["Assign"], where, language, f"{field}.Assign") if "Assign" in rule else None
        if not names_state(rule.get("Next"), states):
            raise refuse(where, f"{field}.Next {rule.get('Next')!r}, which names no state")
        rules.append(Rule(predicate, rule["Next"], output, assign))
    if "Default" in state and not names_state(state["Default"], states):
        raise refuse(where, f"Default {state['Default']!r}, which names no state")
    return Choice(*base, rules, state.get("Default"), **extra)


def jsonata_condition(value: Any, where: str, field: str) -> Predicate:
    """A JSONata Choice rule's Condition: true, false, or an expression that must yield a boolean."""
    if isinstance(value, bool):
        return lambda data, context: value
    if not isinstance(value, str) or not value.startswith("{%"):
        raise refuse(where, f"{field} that is neither a boolean nor a {{% %}} expression")
    expression = jsonata_value(value, where, field)

    def holds(data: Any, context: Context) -> bool:
        result = expression.evaluate(context.bindings(data))
        if not isinstance(result, bool):
            raise StatesError("States.QueryEvaluationError", f"The JSONata expression in {field} returned "
                                                             f"{json.dumps(result)[:60]}, not a boolean")
        return result

    return holds


def retry_and_catch(state: dict[str, Any], states: dict[str, Any], where: str,
                    language: str = JSONPATH) -> tuple[list[Retrier], list[Catcher]]:
    retries, catches = state.get("Retry", []), state.get("Catch", [])
    for field, value in (("Retry", retries), ("Catch", catches)):
        if not isinstance(value, list):
            raise refuse(where, f"{field} that is not a list")
    retriers = []
    for number, retrier in enumerate(retries):
        check_fields(retrier, RETRY_FIELDS, where, f"Retry[{number}]")
        names = error_names(retrier, where, f"Retry[{number}]", number == len(retries) - 1)
        check_positive(retrier, "IntervalSeconds", where, 1, maximum=RETRY_LIMIT)
        check_positive(retrier, "MaxAttempts", where, 0, maximum=RETRY_LIMIT)
        check_positive(retrier, "MaxDelaySeconds", where, 1, maximum=MAX_DELAY_LIMIT)
        check_positive(retrier, "BackoffRate", where, 1.0, integer=False)
        if retrier.get("JitterStrategy", "NONE") not in ("FULL", "NONE"):
            raise refuse(where, f"Retry[{number}].JitterStrategy {retrier['JitterStrategy']!r}")
        retriers.append(Retrier(names, retrier.get("IntervalSeconds", 1), retrier.get("MaxAttempts", 3),
                                retrier.get("BackoffRate", 2.0), retrier.get("MaxDelaySeconds", MAX_DELAY_LIMIT),
                                retrier.get("JitterStrategy") == "FULL"))
    catchers = []
    for number, catcher in enumerate(catches):
        field = f"Catch[{number}]"
        check_fields(catcher, JSONATA_CATCH_FIELDS if language == JSONATA else CATCH_FIELDS, where, field)
        names = error_names(catcher, where, field, number == len(catches) - 1)
        if not names_state(catcher.get("Next"), states):
            raise refuse(where, f"{field}.Next {catcher.get('Next')!r}, which names no state")
        path = optional_path(catcher, "ResultPath", where, f"{field}.ResultPath")
        output = jsonata_value(catcher["Output"], where, f"{field}.Output") if "Output" in catcher else None
        assign = Assigner(catcher["Assign"], where, language, f"{field}.Assign") if "Assign" in catcher else None
        catchers.append(Catcher(names, path, catcher["Next"], output, assign))
    return retriers, catchers


def check_task(state: dict[str, Any], where: str, language: str = JSONPATH) -> str:
    """A Task's Resource: ``arn:aws:states:::lambda:invoke`` (with FunctionName, and in JSONPath Payload), or a Lambda
    function's ARN (its input the payload, its result the function's answer)."""
    resource = state.get("Resource")
    if isinstance(resource, str) and FUNCTION_ARN.fullmatch(resource):
        return resource
    if resource != LAMBDA_INVOKE:
        raise refuse(where, f"the Task resource {resource!r} (only {LAMBDA_INVOKE} or a Lambda function's ARN)")
    key = "Arguments" if language == JSONATA else "Parameters"
    parameters = state.get(key)
    if not isinstance(parameters, dict):
        raise refuse(where, f"{LAMBDA_INVOKE} without {key}")
    names = {name.removesuffix(".$") for name in parameters} if language == JSONPATH else set(parameters)
    for name in sorted(names - LAMBDA_PARAMETERS):
        raise refuse(where, f"{key}.{name} of {LAMBDA_INVOKE}")
    for required in ("FunctionName", "Payload") if language == JSONPATH else ("FunctionName",):
        if required not in names:
            raise refuse(where, f"{LAMBDA_INVOKE} without {key}.{required}")
    return LAMBDA_INVOKE


def parse_map(state: dict[str, Any], where: str, task: Task, selector: Template | None) -> Map:
    processor = state.get("ItemProcessor")
    execution = check_fields(processor.get("ProcessorConfig", {}) if isinstance(processor, dict) else None,
                             {"Mode", "ExecutionType"}, where, "ItemProcessor.ProcessorConfig")
    if execution.get("Mode") != "DISTRIBUTED":
        raise refuse(where, f"ItemProcessor.ProcessorConfig.Mode {execution.get('Mode', 'INLINE')} (only "
                            f"DISTRIBUTED)")
    if execution.get("ExecutionType") not in ("EXPRESS", "STANDARD"):
        raise refuse(where, f"ItemProcessor.ProcessorConfig.ExecutionType {execution.get('ExecutionType')!r}")
    child = parse_machine(processor, f"{where} (ItemProcessor)", child=True)
    reader = check_fields(state.get("ItemReader"), {"Resource", "ReaderConfig", "Parameters"}, where, "ItemReader")
    if reader.get("Resource") != S3_GET_OBJECT:
        raise refuse(where, f"ItemReader.Resource {reader.get('Resource')!r} (only {S3_GET_OBJECT})")
    location = Template(reader.get("Parameters"), where, "ItemReader.Parameters")
    if {key.removesuffix(".$") for key in reader.get("Parameters") or {}} != {"Bucket", "Key"}:
        raise refuse(where, "ItemReader.Parameters other than Bucket and Key")
    config = check_fields(reader.get("ReaderConfig"), {"InputType", "MaxItems"}, where, "ItemReader.ReaderConfig")
    if config.get("InputType") != "JSONL":
        raise refuse(where, f"ItemReader.ReaderConfig.InputType {config.get('InputType')} (only JSONL)")
    check_positive(config, "MaxItems", where, 1)
    batcher: dict[str, Any] = {}
    batch_input = None
    if "ItemBatcher" in state:
        batcher = check_fields(state["ItemBatcher"], {"MaxItemsPerBatch", "MaxInputBytesPerBatch", "BatchInput"},
                               where, "ItemBatcher")
        if "MaxItemsPerBatch" not in batcher and "MaxInputBytesPerBatch" not in batcher:
            raise refuse(where, "an ItemBatcher without MaxItemsPerBatch or MaxInputBytesPerBatch")
        check_positive(batcher, "MaxItemsPerBatch", where, 1)
        check_positive(batcher, "MaxInputBytesPerBatch", where, 1)
        if batcher.get("MaxInputBytesPerBatch", 0) > DATA_LIMIT:
            raise refuse(where, f"ItemBatcher.MaxInputBytesPerBatch over {DATA_LIMIT} bytes (256 KiB, AWS's limit)")
        batch_input = optional_template(batcher, "BatchInput", where, "ItemBatcher.BatchInput")
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
    writer, transformation, output_type = None, "NONE", "JSON"
    if "ResultWriter" in state:
        written = check_fields(state["ResultWriter"], {"Resource", "Parameters", "WriterConfig"}, where,
                               "ResultWriter")
        if "WriterConfig" in written:
            formats = check_fields(written["WriterConfig"], {"Transformation", "OutputType"}, where,
                                   "ResultWriter.WriterConfig")
            transformation, output_type = formats.get("Transformation", "NONE"), formats.get("OutputType", "JSON")
            if transformation not in TRANSFORMATIONS or output_type not in OUTPUT_TYPES:
                raise refuse(where, f"ResultWriter.WriterConfig {json.dumps(formats)[:80]} (Transformation is one "
                                    f"of {', '.join(TRANSFORMATIONS)}, OutputType one of {', '.join(OUTPUT_TYPES)})")
            if "Resource" not in written and "Parameters" not in written:
                raise refuse(where, "ResultWriter with WriterConfig alone (a preview: results not exported)")
        if written.get("Resource") != S3_PUT_OBJECT:
            raise refuse(where, f"ResultWriter.Resource {written.get('Resource')!r} (only {S3_PUT_OBJECT})")
        writer = Template(written.get("Parameters"), where, "ResultWriter.Parameters")
        if {key.removesuffix(".$") for key in written.get("Parameters") or {}} != {"Bucket", "Prefix"}:
            raise refuse(where, "ResultWriter.Parameters other than Bucket and Prefix")
    return Map(**vars(task), processor=child, express=execution["ExecutionType"] == "EXPRESS", reader=location,
               max_items=config.get("MaxItems"), selector=selector, batch_input=batch_input,
               batched="ItemBatcher" in state, max_items_per_batch=batcher.get("MaxItemsPerBatch", math.inf),
               max_input_bytes=min(batcher.get("MaxInputBytesPerBatch", DATA_LIMIT), DATA_LIMIT),
               max_concurrency=state.get("MaxConcurrency", 0), label=label,
               tolerated_count=state.get("ToleratedFailureCount"),
               tolerated_percentage=state.get("ToleratedFailurePercentage"), writer=writer,
               transformation=transformation, output_type=output_type)


def parse_rule(rule: Any, where: str, field: str, top: bool = False) -> Predicate:
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
        inner = [parse_rule(each, where, f"{field}.{operator}[{number}]") for number, each in enumerate(rule[operator])]
        combined = all if operator == "And" else any
        return lambda data, context: combined(holds(data, context) for holds in inner)
    if operator == "Not":
        negated = parse_rule(rule["Not"], where, f"{field}.Not")
        return lambda data, context: not negated(data, context)
    base = operator.removesuffix("Path")
    if base not in COMPARISONS and operator not in TYPE_TESTS and operator != "IsPresent":
        raise refuse(where, f"the Choice operator {operator} (in {field})")
    variable = Path(rule.get("Variable"), where, f"{field}.Variable")
    operand = rule[operator]
    other_path = None
    if operator.endswith("Path") and base in COMPARISONS:
        other_path = Path(operand, where, f"{field}.{operator}")
    else:
        kinds = COMPARISONS[operator][0] if operator in COMPARISONS else bool
        if not isinstance(operand, kinds) or (kinds is not bool and isinstance(operand, bool)):
            wanted = {str: "a string", bool: "true or false"}.get(kinds, "a number")
            raise refuse(where, f"{field}.{operator} {json.dumps(operand)[:40]} (AWS requires {wanted})")
    if operator == "IsPresent":
        def present(data: Any, context: Context) -> bool:
            try:
                variable.resolve(data, context, "Variable")
            except StatesError:
                return operand is False
            return operand is True
        return present
    if operator in TYPE_TESTS:
        test: Callable[[Any], bool] = TYPE_TESTS[operator]
        return lambda data, context: test(variable.resolve(data, context, "Variable")) is operand
    kinds, compare = COMPARISONS[base]
    numeric = operator.startswith("Numeric")

    def compared(data: Any, context: Context) -> bool:
        value = variable.resolve(data, context, "Variable")
        other = other_path.resolve(data, context, operator) if other_path is not None else operand
        if numeric and (type(value) is bool or type(other) is bool):
            return False
        return isinstance(value, kinds) and isinstance(other, kinds) and bool(compare(value, other))
    return compared
