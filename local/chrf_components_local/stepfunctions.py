"""Step Functions' API as `serve` answers it, for the state machines the template declares.

The protocol is AWS's JSON 1.0 (``X-Amz-Target: AWSStepFunctions.<Action>``), so boto3's ``stepfunctions`` client,
the AWS CLI and any SDK talk to it as to AWS. The actions, each as its page in the Step Functions API Reference
(https://docs.aws.amazon.com/step-functions/latest/apireference/) describes it:

* StartExecution: runs the execution in the background on the local runner (states.py). A name is 1-80 characters
  without whitespace, brackets, wildcards, the special characters ``"#%\\^|~`$&,;:/`` or control characters
  (InvalidName); the input is JSON of at most 256 KiB (InvalidExecutionInput); a name already used is
  ExecutionAlreadyExists, unless it is the same input while that execution runs (the same ARN, as AWS's
  idempotency for Standard workflows). At most RUNNING_LIMIT executions run at once (ExecutionLimitExceeded past
  it); the newest KEPT_EXECUTIONS are remembered.
* DescribeExecution, StopExecution (ABORTED, with the error and cause given), ListExecutions (by state machine,
  or by Map Run; statusFilter, maxResults, nextToken), ListStateMachines, DescribeStateMachine, DescribeMapRun,
  ListMapRuns.
* CreateStateMachine, UpdateStateMachine, DeleteStateMachine: the engineer's own definitions beside the template's,
  checked when created or updated as AWS checks them (InvalidDefinition naming the state and field; what the runner
  does not implement is refused there, by name); at most OWN_LIMIT of them. ValidateStateMachineDefinition answers
  the same check as diagnostics.
* GetExecutionHistory: the events of an execution (history.py), oldest first or reverseOrder, with or without
  their data (includeExecutionData), in pages.
* TestState (teststate_api.py): one state, alone or by stateName in a whole definition, with mocks.

Every other action is refused by name (UnknownOperationException), as are EXPRESS state machines (the runner keeps
Standard workflows' records). A Map Run's child executions are listed but keep no history of their own.
"""

from __future__ import annotations

import base64
import datetime
import json
import pathlib
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from . import asl, states
from .history import Budget, History
from .template import LOCAL_ROLE, local_arn

RUNNING_LIMIT = 4  # executions running at once
KEPT_EXECUTIONS = 1000  # executions remembered (the oldest closed ones are forgotten first)
NAME_LIMIT = 80
FORBIDDEN_IN_NAMES = re.compile(r"[\s<>{}\[\]?*\"#%\\^|~`$&,;:/\x00-\x1f\x7f-\x9f]")
ERROR_LIMIT, CAUSE_LIMIT = 256, 32768  # StopExecution's error and cause
PAGE_DEFAULT, PAGE_LIMIT = 100, 1000  # maxResults of the List actions
TOKEN_LIMIT = 1024  # nextToken's length (ValidationException past it)
ARN = re.compile(r"arn:aws:states:[a-z0-9-]+:\d{12}:(?P<kind>[A-Za-z]+):.+")
ACTIONS = ("StartExecution", "DescribeExecution", "StopExecution", "ListExecutions", "ListStateMachines",
           "DescribeStateMachine", "DescribeMapRun", "ListMapRuns", "CreateStateMachine", "UpdateStateMachine",
           "DeleteStateMachine", "ValidateStateMachineDefinition", "GetExecutionHistory", "TestState")
OWN_LIMIT = 100  # state machines created through the API, at most (StateMachineLimitExceeded past it)
ROLE_ARN = re.compile(r"arn:aws:iam::\d{12}:role/[\w+=,.@/-]{1,512}")


class ApiError(Exception):
    """An answer in AWS's error shape: HTTP 400 with ``__type`` and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Machine:
    """A state machine (the template's, or one created through the API), as the runner runs it (parsed once, when
    it is loaded, created or updated), or why the runner cannot."""

    def __init__(self, logical_id: str, name: str, arn: str, kind: str, definition: dict[str, Any] | None,
                 problem: str | None, parsed: asl.Machine | None = None, text: str | None = None,
                 role: str = LOCAL_ROLE) -> None:
        self.logical_id, self.name, self.arn, self.kind = logical_id, name, arn, kind
        self.definition, self.problem, self.parsed, self.role = definition, problem, parsed, role
        self.text = text if text is not None else json.dumps(definition) if definition is not None else "{}"
        self.created = datetime.datetime.now(datetime.UTC)
        self.revision = str(uuid.uuid4())


class Record:
    """One execution as DescribeExecution tells it."""

    def __init__(self, machine: Machine, name: str, arn: str, input_text: str, budget: Budget) -> None:
        self.machine, self.name, self.arn, self.input = machine, name, arn, input_text
        self.start = datetime.datetime.now(datetime.UTC)
        self.stop: datetime.datetime | None = None
        self.status = "RUNNING"
        self.output: str | None = None
        self.error: str | None = None
        self.cause: str | None = None
        self.control = states.Control()
        self.thread: threading.Thread | None = None
        self.history = History(budget)

    def summary(self) -> dict[str, Any]:
        summary = {"executionArn": self.arn, "stateMachineArn": self.machine.arn, "name": self.name,
                   "status": self.status, "startDate": self.start.timestamp(), "redriveCount": 0}
        if self.stop is not None:
            summary["stopDate"] = self.stop.timestamp()
        return summary

    def described(self) -> dict[str, Any]:
        described = {**self.summary(), "input": self.input, "inputDetails": {"included": True}, "redriveCount": 0,
                     "redriveStatus": "NOT_REDRIVABLE" if self.status in ("RUNNING", "SUCCEEDED") else "REDRIVABLE"}
        if described["redriveStatus"] == "NOT_REDRIVABLE":
            described["redriveStatusReason"] = f"Execution is {self.status} and cannot be redriven"
        if self.output is not None:
            described.update(output=self.output, outputDetails={"included": True})
        for key in ("error", "cause"):
            if getattr(self, key) is not None:
                described[key] = getattr(self, key)
        return described


def _string(request: dict[str, Any], key: str, required: bool = True, limit: int = 256) -> str | None:
    value = request.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value) or len(value) > limit:
        raise ApiError("ValidationException", f"1 validation error detected: Value at '{key}' failed to satisfy "
                                              f"constraint: Member must be a string of length 1 to {limit}")
    return value


def _no_constant(name: str) -> Any:
    """NaN, Infinity and -Infinity are not JSON (Python's parser reads them): refused as invalid JSON."""
    raise ValueError(f"{name} is not a JSON value")


def _arn(request: dict[str, Any], key: str, kind: str) -> str:
    """An ARN of this kind of resource (a state machine's, an execution's, a Map Run's): InvalidArn otherwise."""
    arn = _string(request, key, limit=2048)
    assert arn is not None
    found = ARN.fullmatch(arn)
    if found is None or found["kind"] != kind:
        raise ApiError("InvalidArn", f"Invalid Arn: '{arn[:256]}'")
    return arn


def _page(request: dict[str, Any], items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """One page of a List action's items (maxResults, nextToken), and the token of the next page."""
    size = request.get("maxResults", 0)
    if type(size) is not int or not 0 <= size <= PAGE_LIMIT:
        raise ApiError("ValidationException", f"1 validation error detected: Value at 'maxResults' failed to satisfy "
                                              f"constraint: Member must be between 0 and {PAGE_LIMIT}")
    size = size or PAGE_DEFAULT
    start = 0
    if request.get("nextToken") is not None:
        _string(request, "nextToken", limit=TOKEN_LIMIT)
        try:
            start = int(base64.urlsafe_b64decode(str(request["nextToken"]).encode()).decode())
        except ValueError:
            raise ApiError("InvalidToken", "Invalid token") from None
        if not 0 < start <= len(items):
            raise ApiError("InvalidToken", "Invalid token")
    end = start + size
    token = base64.urlsafe_b64encode(str(end).encode()).decode() if end < len(items) else None
    return items[start:end], token


class StepFunctionsApi:
    """The actions above over the template's state machines; executions run on ``services`` (made on first use,
    once the server's address is known) in ``region``."""

    def __init__(self, template_path: pathlib.Path, region: str, services: Callable[[], states.Services]) -> None:
        from .definitions import PipelineError, load_parsed, state_machine_ids

        self.region, self.make_services = region, services
        self.map_runs = states.MapRuns()
        self.machines: dict[str, Machine] = {}
        for logical_id, kind in state_machine_ids(template_path).items():
            parsed = None
            try:
                definition, name, parsed = load_parsed(template_path, logical_id, region)
                problem = None
            except PipelineError as error:
                definition, name, problem = None, logical_id, str(error)
            arn = local_arn("states", region, f"stateMachine:{name}")
            self.machines[arn] = Machine(logical_id, name, arn, kind, definition, problem, parsed)
        self.lock = threading.Lock()
        self.executions: OrderedDict[str, Record] = OrderedDict()
        self.runners: dict[str, states.StateMachine] = {}
        self.closed = False
        self.budget = Budget()

    # ---- the protocol ----

    def answer(self, target: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer for one request (its X-Amz-Target and body)."""
        action = target.removeprefix("AWSStepFunctions.")
        try:
            if action not in ACTIONS:
                raise ApiError("UnknownOperationException",
                               f"the local Step Functions endpoint does not implement {action[:64] or 'that action'} "
                               f"(it answers {', '.join(ACTIONS)})")
            try:
                request = json.loads(body or b"{}", parse_constant=_no_constant)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
                request = None
            if not isinstance(request, dict):
                raise ApiError("SerializationException", "the request body is not a JSON object")
            answer: dict[str, Any] = getattr(self, action[0].lower() + re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(),
                                                                             action[1:]))(request)
        except ApiError as error:
            return 400, {"__type": error.code, "message": str(error)}
        return 200, answer

    def machine(self, request: dict[str, Any]) -> Machine:
        arn = _arn(request, "stateMachineArn", "stateMachine")
        found = self.machines.get(arn)
        if found is None:
            raise ApiError("StateMachineDoesNotExist", f"State Machine Does Not Exist: '{arn}'")
        return found

    def record(self, request: dict[str, Any]) -> Record:
        arn = _arn(request, "executionArn", "execution")
        with self.lock:
            found = self.executions.get(arn)
        if found is None:
            raise ApiError("ExecutionDoesNotExist", f"Execution Does Not Exist: '{arn}'")
        return found

    # ---- the actions ----

    def start_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        machine = self.machine(request)
        name = request.get("name")  # 1..80 characters, none of FORBIDDEN_IN_NAMES (absent: a UUID)
        if name is not None and (not isinstance(name, str) or not 1 <= len(name) <= NAME_LIMIT
                                 or FORBIDDEN_IN_NAMES.search(name)):
            raise ApiError("InvalidName", f"Invalid Name: '{str(name)[:NAME_LIMIT + 1]}'")
        input_text = request.get("input", "{}")
        if not isinstance(input_text, str) or len(input_text.encode("utf-8", "surrogatepass")) > asl.DATA_LIMIT:
            raise ApiError("InvalidExecutionInput", f"the input must be a string of at most {asl.DATA_LIMIT} bytes")
        try:
            execution_input = json.loads(input_text, parse_constant=_no_constant)
        except ValueError as error:
            raise ApiError("InvalidExecutionInput", f"Invalid State Machine Execution Input: '{error}'") from None
        except RecursionError:
            raise ApiError("InvalidExecutionInput", "Invalid State Machine Execution Input: nested deeper than "
                                                    "Step Functions reads") from None
        if machine.kind != "STANDARD":
            raise ApiError("StateMachineTypeNotSupported", f"the local endpoint runs STANDARD state machines only; "
                                                          f"{machine.name} is {machine.kind}")
        if machine.definition is None:
            raise ApiError("StateMachineDoesNotExist", f"{machine.name} is not served locally: {machine.problem}")
        import uuid

        name = name or str(uuid.uuid4())
        with self.lock:
            if self.closed:
                raise ApiError("ServiceUnavailable", "the local endpoint is stopping")
            runner = self.runners.get(machine.arn)
            if runner is None:
                runner = self.runners[machine.arn] = states.StateMachine(machine.definition, machine.name,
                                                                         self.make_services(), self.region,
                                                                         machine.parsed)
            arn = runner.execution_arn(name)
            existing = self.executions.get(arn)
            if existing is not None:
                if existing.status == "RUNNING" and existing.input == input_text:
                    return {"executionArn": arn, "startDate": existing.start.timestamp()}
                raise ApiError("ExecutionAlreadyExists", f"Execution Already Exists: '{arn}'")
            if sum(record.status == "RUNNING" for record in self.executions.values()) >= RUNNING_LIMIT:
                raise ApiError("ExecutionLimitExceeded", f"the local endpoint runs at most {RUNNING_LIMIT} executions "
                                                         f"at once")
            record = Record(machine, name, arn, input_text, self.budget)
            self.executions[arn] = record
            self._forget_old()
            record.thread = threading.Thread(target=self._run, args=(runner, record, execution_input), daemon=True,
                                             name=f"execution-{name[:32]}")
            record.thread.start()
        return {"executionArn": arn, "startDate": record.start.timestamp()}

    def _run(self, runner: states.StateMachine, record: Record, execution_input: Any) -> None:
        try:
            ended = runner.execute(execution_input, record.name, record.control, record.start, record.history)
        except Exception as error:  # a fault of the runner itself: the execution fails, the server stays up
            ended = states.Execution(record.arn, "FAILED", error="States.Runtime", cause=f"{type(error).__name__}")
        with self.lock:
            if record.status == "RUNNING":
                record.status, record.output = ended.status, ended.output
                if ended.status != "ABORTED":
                    record.error, record.cause = ended.error, ended.cause
                record.stop = datetime.datetime.now(datetime.UTC)

    def _forget_old(self) -> None:
        """Keep at most KEPT_EXECUTIONS records: the oldest closed ones go first (called with the lock held)."""
        while len(self.executions) > KEPT_EXECUTIONS:
            oldest = next((arn for arn, record in self.executions.items() if record.status != "RUNNING"), None)
            if oldest is None:
                return
            self.executions.pop(oldest).history.release()
            self.map_runs.forget(oldest)

    def describe_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        record = self.record(request)
        with self.lock:
            return record.described()

    def stop_execution(self, request: dict[str, Any]) -> dict[str, Any]:
        record = self.record(request)
        error = _string(request, "error", required=False, limit=ERROR_LIMIT)
        cause = _string(request, "cause", required=False, limit=CAUSE_LIMIT)
        with self.lock:
            if record.status == "RUNNING":
                record.status, record.error, record.cause = "ABORTED", error, cause
                record.stop = datetime.datetime.now(datetime.UTC)
                record.control.stop.set()
            stopped = record.stop or datetime.datetime.now(datetime.UTC)
        return {"stopDate": stopped.timestamp()}

    def list_executions(self, request: dict[str, Any]) -> dict[str, Any]:
        status = request.get("statusFilter")
        if status is not None and status not in ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED",
                                                 "PENDING_REDRIVE"):
            raise ApiError("ValidationException", f"1 validation error detected: Value '{str(status)[:32]}' at "
                                                  f"'statusFilter' failed to satisfy constraint: Member must satisfy "
                                                  f"enum value set")
        if ("stateMachineArn" in request) == ("mapRunArn" in request):
            raise ApiError("ValidationException", "give exactly one of stateMachineArn and mapRunArn")
        if "mapRunArn" in request:
            run = _arn(request, "mapRunArn", "mapRun")
            children = self.map_runs.children(run)
            if children is None:
                raise ApiError("ResourceNotFound", "Map Run does not exist")
            chosen = [child for child in children if status is None or child["status"] == status]
            page, token = _page(request, chosen)
            return {"executions": page, **({"nextToken": token} if token else {})}
        machine = self.machine(request)
        with self.lock:
            chosen = [record.summary() for record in reversed(self.executions.values())
                      if record.machine is machine and (status is None or record.status == status)]
        page, token = _page(request, chosen)
        return {"executions": page, **({"nextToken": token} if token else {})}

    def list_state_machines(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:  # CreateStateMachine and DeleteStateMachine change the machines meanwhile
            listed = [{"stateMachineArn": machine.arn, "name": machine.name, "type": machine.kind,
                       "creationDate": machine.created.timestamp()} for machine in self.machines.values()]
        page, token = _page(request, listed)
        return {"stateMachines": page, **({"nextToken": token} if token else {})}

    def describe_state_machine(self, request: dict[str, Any]) -> dict[str, Any]:
        machine = self.machine(request)
        return {"stateMachineArn": machine.arn, "name": machine.name, "status": "ACTIVE",
                "definition": machine.text, "roleArn": machine.role, "type": machine.kind,
                "creationDate": machine.created.timestamp(), "revisionId": machine.revision,
                "loggingConfiguration": {"level": "OFF", "includeExecutionData": False},
                "tracingConfiguration": {"enabled": False}}

    # ---- the engineer's own state machines ----

    def checked_definition(self, request: dict[str, Any],
                           key: str = "definition") -> tuple[dict[str, Any], asl.Machine, str]:
        """A definition as CreateStateMachine, UpdateStateMachine and TestState check it: JSON of at most 1 MiB
        (ValidationException past it), a state machine the runner runs (InvalidDefinition, naming the state and
        the field)."""
        from .definitions import DEPTH_LIMIT, depth
        from .template import DEFINITION_LIMIT

        text = _string(request, key, limit=DEFINITION_LIMIT)
        assert text is not None
        try:
            definition = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError) as error:
            raise ApiError("InvalidDefinition", f"Invalid State Machine Definition: 'INVALID_JSON_DESCRIPTION: "
                                                f"{str(error)[:200]}'") from None
        if depth(definition) > DEPTH_LIMIT:
            raise ApiError("InvalidDefinition", f"Invalid State Machine Definition: 'nested more than "
                                                f"{DEPTH_LIMIT} levels deep'")
        try:
            parsed = asl.parse_machine(definition)
        except asl.NotImplementedByRunner as error:
            raise ApiError("InvalidDefinition", f"Invalid State Machine Definition: '{error}'") from None
        return definition, parsed, text

    def _role(self, request: dict[str, Any], required: bool = True) -> str | None:
        role = _string(request, "roleArn", required=required, limit=256)
        if role is not None and not ROLE_ARN.fullmatch(role):
            raise ApiError("InvalidArn", f"Invalid Arn: 'Resource type not valid in this context: {role[:256]}'")
        return role

    def create_state_machine(self, request: dict[str, Any]) -> dict[str, Any]:
        name = _string(request, "name", limit=NAME_LIMIT)
        assert name is not None
        if FORBIDDEN_IN_NAMES.search(name):
            raise ApiError("InvalidName", f"Invalid Name: '{name}'")
        kind = request.get("type", "STANDARD")
        if kind not in ("STANDARD", "EXPRESS"):
            raise ApiError("ValidationException", f"1 validation error detected: Value '{str(kind)[:20]}' at 'type' "
                                                  f"failed to satisfy constraint: Member must satisfy enum value set")
        if request.get("publish"):
            raise ApiError("ValidationException", "the local endpoint does not publish state machine versions "
                                                  "(publish)")
        if "encryptionConfiguration" in request:
            raise ApiError("ValidationException", "the local endpoint does not implement encryptionConfiguration")
        role = self._role(request)
        assert role is not None
        definition, parsed, text = self.checked_definition(request)
        arn = local_arn("states", self.region, f"stateMachine:{name}")
        with self.lock:
            existing = self.machines.get(arn)
            if existing is not None:  # the same definition and role: the same machine (AWS's idempotency)
                if existing.text == text and existing.role == role and existing.kind == kind:
                    return {"stateMachineArn": arn, "creationDate": existing.created.timestamp()}
                raise ApiError("StateMachineAlreadyExists", f"State Machine Already Exists: '{arn}'")
            if sum(machine.logical_id == "" for machine in self.machines.values()) >= OWN_LIMIT:
                raise ApiError("StateMachineLimitExceeded", f"the local endpoint keeps at most {OWN_LIMIT} state "
                                                            f"machines of its own")
            machine = self.machines[arn] = Machine("", name, arn, kind, definition, None, parsed, text, role)
        return {"stateMachineArn": arn, "creationDate": machine.created.timestamp()}

    def update_state_machine(self, request: dict[str, Any]) -> dict[str, Any]:
        machine = self.machine(request)
        if request.get("publish"):
            raise ApiError("ValidationException", "the local endpoint does not publish state machine versions "
                                                  "(publish)")
        if "definition" not in request and "roleArn" not in request and "loggingConfiguration" not in request \
                and "tracingConfiguration" not in request:
            raise ApiError("MissingRequiredParameter", "Either the definition, the role ARN, the LoggingConfiguration, "
                                                       "or the TracingConfiguration must be specified")
        role = self._role(request, required=False)
        checked = self.checked_definition(request) if "definition" in request else None
        with self.lock:
            if checked is not None:
                machine.definition, machine.parsed, machine.text = checked
                machine.problem = None
                self.runners.pop(machine.arn, None)  # new executions run the new definition; running ones go on
            if role is not None:
                machine.role = role
            machine.revision = str(uuid.uuid4())
        return {"updateDate": datetime.datetime.now(datetime.UTC).timestamp(), "revisionId": machine.revision}

    def delete_state_machine(self, request: dict[str, Any]) -> dict[str, Any]:
        arn = _arn(request, "stateMachineArn", "stateMachine")
        with self.lock:  # running executions go on to their end, as AWS lets them
            self.machines.pop(arn, None)
            self.runners.pop(arn, None)
        return {}

    def validate_state_machine_definition(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            self.checked_definition(request)
        except ApiError as error:
            if error.code != "InvalidDefinition":
                raise
            return {"result": "FAIL", "diagnostics": [{"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED",
                                                       "message": str(error)[:1024]}], "truncated": False}
        return {"result": "OK", "diagnostics": [], "truncated": False}

    def get_execution_history(self, request: dict[str, Any]) -> dict[str, Any]:
        record = self.record(request)
        for key in ("reverseOrder", "includeExecutionData"):
            if key in request and not isinstance(request[key], bool):
                raise ApiError("ValidationException", f"1 validation error detected: Value at '{key}' failed to "
                                                      f"satisfy constraint: Member must be a boolean")
        events = record.history.page(request.get("reverseOrder") is True, request.get("includeExecutionData", True)
                                     is not False)
        page, token = _page(request, events)
        return {"events": page, **({"nextToken": token} if token else {})}

    def test_state(self, request: dict[str, Any]) -> dict[str, Any]:
        from .teststate_api import test_state

        return test_state(self, request)

    def describe_map_run(self, request: dict[str, Any]) -> dict[str, Any]:
        described = self.map_runs.describe(_arn(request, "mapRunArn", "mapRun"))
        if described is None:
            raise ApiError("ResourceNotFound", "Map Run does not exist")
        return described

    def list_map_runs(self, request: dict[str, Any]) -> dict[str, Any]:
        record = self.record(request)
        runs = [{"executionArn": record.arn, "mapRunArn": run.arn,
                 "stateMachineArn": run.arn.replace(":mapRun:", ":stateMachine:", 1).rsplit(":", 1)[0],
                 "startDate": run.start.timestamp(), **({"stopDate": run.stop.timestamp()} if run.stop else {})}
                for run in self.map_runs.of_execution(record.arn)]
        page, token = _page(request, runs)
        return {"mapRuns": page, **({"nextToken": token} if token else {})}

    def close(self, wait: float = 5.0) -> None:
        """Stop every running execution (ABORTED) and wait a little for their threads."""
        import time

        with self.lock:
            self.closed = True
            running = [record for record in self.executions.values() if record.status == "RUNNING"]
            for record in running:
                record.control.stop.set()
        deadline = time.monotonic() + wait
        for record in running:
            if record.thread is not None:
                record.thread.join(max(0.0, deadline - time.monotonic()))

