"""The local runner of the Amazon States Language: the template's state machines and the engineer's own.

Not a Step Functions implementation: it runs the parts of the language it implements, following AWS's documented
rules. A definition is parsed once, before anything runs (asl.py: every state type, field, JSONPath, intrinsic
function or JSONata expression it does not implement or AWS would refuse is refused there by name, ``the local
runner does not implement ItemReader.ReaderConfig.CSVHeaders``); this module runs the parsed states, one room per
family: Pass, Wait, Choice, Succeed and Fail here with the data flow of both query languages (JSONPath's InputPath,
Parameters, ResultSelector, ResultPath and OutputPath; JSONata's Arguments and Output; Assign and the workflow's
variables in both), Retry and Catch as AWS matches errors (``States.ALL``, ``States.TaskFailed``); a Task's Lambda
call in lambda_task.py, Parallel in parallel_state.py, the Distributed Map in distributed_map.py, its records in
map_runs.py; what the runner reaches outside (Lambda, S3) in services.py; the context object, the stop signal and
JSON's encoding in execution.py; the events GetExecutionHistory answers in history.py. Step Functions' quota of
256 KiB for a state's input or output (``States.DataLimitExceeded``) and the bounds of an execution (history events,
an Express execution's duration) are kept.

Every rule a test pins cites the AWS page it follows (tests/pipeline/test_local_runner.py,
tests/local/test_own_state_machines.py).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from .asl import (
    JSONATA,
    NO_RESULT,
    Catcher,
    Choice,
    Fail,
    Machine,
    Map,
    Parallel,
    Pass,
    State,
    StatesError,
    Succeed,
    Task,
    Wait,
    parse_machine,
    parse_timestamp,
)
from .distributed_map import (  # the runner's public names (__all__), where the tests and callers find them
    READER_PROCESS_BYTES,
    ItemSource,
    ReaderProcess,
    batched,
    read_items,
    run_map,
)
from .execution import (
    EXPRESS_DURATION,
    HISTORY_LIMIT,
    Context,
    Control,
    Execution,
    Stopped,
    checked_size,
    dumps,
    matches,
    now,
    put,
    retry_delay,
    select,
    timestamp,
)
from .history import History
from .lambda_task import invoke
from .map_runs import MapRun, MapRuns
from .parallel_state import run_parallel
from .services import LambdaAnswer, LambdaInvoke, Services, direct_invoke, invoke_api
from .template import LOCAL_REGION, LOCAL_ROLE, local_arn

__all__ = ["EXPRESS_DURATION", "HISTORY_LIMIT", "READER_PROCESS_BYTES", "Context", "Control", "Execution", "ItemSource",
           "LambdaAnswer", "LambdaInvoke", "MapRun", "MapRuns", "ReaderProcess", "Services", "StateMachine", "Stopped",
           "batched", "checked_size", "direct_invoke", "dumps", "invoke_api", "matches", "now", "put", "read_items",
           "retry_delay", "run_map", "select", "timestamp"]
CAUSE_LIMIT = 32768  # characters of an event's cause


class StateMachine:
    """One state machine definition, checked (or already ``parsed``), run on ``services`` in ``region`` of the local
    account."""

    def __init__(self, definition: dict[str, Any], name: str, services: Services,
                 region: str = LOCAL_REGION, parsed: Machine | None = None) -> None:
        self.machine = parsed if parsed is not None else parse_machine(definition)
        self.definition, self.name, self.services, self.region = definition, name, services, region
        self.arn = self.arn_of(f"stateMachine:{name}")
        self.waits = True  # a Wait waits (TestState's does not)

    def arn_of(self, resource: str) -> str:
        return local_arn("states", self.region, resource)

    def execution_arn(self, name: str) -> str:
        return self.arn_of(f"execution:{self.name}:{name}")

    def context(self, execution_input: Any, name: str, control: Control | None = None,
                started: datetime.datetime | None = None, history: History | None = None) -> Context:
        return Context({"Id": self.execution_arn(name), "Input": execution_input, "Name": name,
                        "StartTime": timestamp(started or now()), "RoleArn": LOCAL_ROLE},
                       {"Id": self.arn, "Name": self.name}, control, history=history)

    def execute(self, execution_input: Any, name: str | None = None, control: Control | None = None,
                started: datetime.datetime | None = None, history: History | None = None) -> Execution:
        """Run one execution to its end (the caller waits, as for StartSyncExecution); ABORTED when ``control``
        is told to stop. Its events go to ``history`` if one is given."""
        name = name or str(uuid.uuid4())
        context = self.context(execution_input, name, control, started, history)
        arn = context.execution["Id"]
        if history is not None:
            context.event("ExecutionStarted", "executionStartedEventDetails",
                          {"input": dumps(execution_input), "roleArn": LOCAL_ROLE})
        try:
            checked_size(execution_input, "execution input")
            output = self.run(self.machine, execution_input, context)
        except StatesError as error:
            context.event("ExecutionFailed", "executionFailedEventDetails",
                          {"error": error.error[:256], "cause": error.cause[:CAUSE_LIMIT]})
            return Execution(arn, "FAILED", error=error.error, cause=error.cause)
        except Stopped:
            context.event("ExecutionAborted", "executionAbortedEventDetails", {})
            return Execution(arn, "ABORTED")
        text = dumps(output)
        context.event("ExecutionSucceeded", "executionSucceededEventDetails", {"output": text})
        return Execution(arn, "SUCCEEDED", output=text)

    def run(self, machine: Machine, data: Any, context: Context) -> Any:
        """A machine (or a branch, or a Map's item processor) from StartAt to its end: its output."""
        name = machine.start_at
        while True:
            context.count(2)  # its Entered and Exited events
            state = machine.states[name]
            context.state = {"Name": name, "EnteredTime": timestamp(now()), "RetryCount": 0}
            if context.history is not None:
                context.event(f"{type(state).__name__}StateEntered", "stateEnteredEventDetails",
                              {"name": name, "input": dumps(data)})
            following, data = self.step(state, data, context)
            if following is None:
                return data
            name = following

    def step(self, state: State, data: Any, context: Context) -> tuple[str | None, Any]:
        """One state on its input: the state to go to next (None: the machine ends) and its output."""
        if isinstance(state, Fail):
            raise self.failure(state, data, context)
        jsonata = state.language == JSONATA
        effective = data if jsonata else select(data, state.input_path, context, "InputPath")
        inspect = context.inspection
        if inspect is not None:
            inspect.update(input=data, afterInputPath=effective)
        if isinstance(state, Succeed):
            output = state.output.evaluate(context.bindings(data)) if jsonata and state.output else \
                effective if jsonata else select(effective, state.output_path, context, "OutputPath")
            return self.exited(state, None, output, {}, context)
        if isinstance(state, Choice):
            return self.choose(state, data, effective, context)
        if isinstance(state, (Pass, Wait)):
            if isinstance(state, Wait):
                self.wait(state, data, effective, context)
                result = effective
            elif jsonata:
                result = data
            else:
                result = state.parameters.evaluate(effective, context) if state.parameters else \
                    effective if state.result is NO_RESULT else state.result
                if inspect is not None and state.parameters:
                    inspect["afterParameters"] = result
            output, assigned = self.finish(state, data, result, context, selected=True)
            return self.exited(state, state.next, output, assigned, context)
        assert isinstance(state, Task)
        return self.work(state, data, effective, context)

    # ---- the data flow of both languages ----

    def finish(self, state: Pass | Wait | Task, data: Any, result: Any, context: Context,
               selected: bool = False) -> tuple[Any, dict[str, Any]]:
        """A state's output from its result (JSONPath: ResultSelector, ResultPath, OutputPath; JSONata: Output, by
        default the result, or for Pass and Wait their input), and what its Assign assigns (evaluated on the result
        with the variables as they were)."""
        inspect = context.inspection
        if state.language == JSONATA:
            bindings = context.bindings(data, **({} if selected else {"result": result}))
            assigned = state.assign.evaluate(None, context, bindings) if state.assign else {}
            output = state.output.evaluate(bindings) if state.output else result
        else:
            selector = None if selected else getattr(state, "result_selector", None)
            if selector is not None:
                result = selector.evaluate(result, context)
                if inspect is not None:
                    inspect["afterResultSelector"] = result
            assigned = state.assign.evaluate(result, context, None) if state.assign else {}
            if isinstance(state, Wait):
                output = result
            else:
                output = put(data, state.result_path, result)
                if inspect is not None:
                    inspect["afterResultPath"] = output
            output = select(output, state.output_path, context, "OutputPath")
        return checked_size(output, f"output of state {state.name}"), assigned

    def exited(self, state: State, following: str | None, output: Any, assigned: dict[str, Any],
               context: Context) -> tuple[str | None, Any]:
        """The state is done: its variables assigned, its Exited event, where the machine goes next."""
        if assigned:
            checked_size(assigned, f"Assign of state {state.name}")
            context.variables.update(assigned)
        if context.inspection is not None:
            context.inspection["variables"] = dict(context.variables)
        if context.history is not None:
            details: dict[str, Any] = {"name": state.name, "output": dumps(output)}
            if assigned:
                details["assignedVariables"] = {name: dumps(value) for name, value in assigned.items()}
            context.event(f"{type(state).__name__}StateExited", "stateExitedEventDetails", details)
        return following, output

    def failure(self, state: Fail, data: Any, context: Context) -> StatesError:
        if state.language == JSONATA:
            bindings = context.bindings(data)
            error = state.error.evaluate(bindings) if state.error is not None else "States.Fail"
            cause = state.cause.evaluate(bindings) if state.cause is not None else ""
        else:
            error = state.error_path.resolve(data, context, "ErrorPath") if state.error_path else state.error
            cause = state.cause_path.resolve(data, context, "CausePath") if state.cause_path else state.cause
        return StatesError(str(error), cause if isinstance(cause, str) else dumps(cause))

    # ---- Choice and Wait ----

    def choose(self, state: Choice, data: Any, effective: Any, context: Context) -> tuple[str | None, Any]:
        jsonata = state.language == JSONATA
        chosen = next((rule for rule in state.choices if rule.holds(effective, context)), None)
        if chosen is None and state.default is None:
            raise StatesError("States.NoChoiceMatched", f"No Choice Rules matched in state {state.name}, and no "
                                                        f"Default")
        bindings = context.bindings(data) if jsonata else None
        assigned = state.assign.evaluate(effective, context, bindings) if state.assign else {}
        if chosen is not None and chosen.assign is not None:
            assigned.update(chosen.assign.evaluate(effective, context, bindings))
        if jsonata:
            assert bindings is not None
            expression = chosen.output if chosen is not None and chosen.output is not None else state.output
            output = expression.evaluate(bindings) if expression is not None else data
        else:
            output = select(effective, state.output_path, context, "OutputPath")
        following = chosen.next if chosen is not None else state.default
        return self.exited(state, following, output, assigned, context)

    def wait(self, state: Wait, data: Any, effective: Any, context: Context) -> None:
        """How long the Wait waits: Seconds (an integer of seconds from 0) or until Timestamp (an RFC 3339 date: a
        date passed waits not at all), each given or read (amazon-states-language-wait-state.html)."""
        bindings = context.bindings(data) if state.language == JSONATA else None
        seconds, moment = state.seconds, state.timestamp
        if hasattr(seconds, "evaluate"):
            seconds = seconds.evaluate(bindings)
        if hasattr(moment, "evaluate"):
            moment = moment.evaluate(bindings)
        if state.seconds_path is not None:
            seconds = state.seconds_path.resolve(effective, context, "SecondsPath")
        if state.timestamp_path is not None:
            moment = state.timestamp_path.resolve(effective, context, "TimestampPath")
        if seconds is not None:
            if type(seconds) is not int or seconds < 0:
                raise StatesError("States.Runtime", f"The Wait state {state.name}'s seconds "
                                                    f"{dumps(seconds)[:40]} are not a non-negative integer")
            delay = float(seconds)
        else:
            when = parse_timestamp(moment)
            if when is None:
                raise StatesError("States.Runtime", f"The Wait state {state.name}'s timestamp {dumps(moment)[:60]} "
                                                    f"is not an ISO 8601 date")
            delay = max(0.0, (when - now()).total_seconds())
        if not self.waits or delay <= 0:
            return
        if self.services.sleep is not None:
            self.services.sleep(delay)
        else:
            context.pause(delay)

    # ---- Task, Parallel and Map: work, with Retry and Catch ----

    def arguments(self, state: Task, data: Any, effective: Any, context: Context) -> Any:
        """What the work is given: JSONPath's Parameters (or the effective input), JSONata's Arguments (or the
        input). A Map takes its items through its own fields."""
        if state.language == JSONATA:
            value = state.arguments.evaluate(context.bindings(data)) if state.arguments is not None else data
            key = "afterArguments"
        else:
            value = state.parameters.evaluate(effective, context) if state.parameters is not None and \
                not isinstance(state, Map) else effective
            key = "afterParameters"
        if context.inspection is not None:
            context.inspection[key] = value
        return value

    def attempt(self, state: Task, arguments: Any, context: Context) -> Any:
        """One attempt at the work: its result, or StatesError."""
        if isinstance(state, Map):
            return run_map(self, state, arguments, context)
        if isinstance(state, Parallel):
            return run_parallel(self, state, arguments, context)
        return invoke(self, state, arguments, context)

    def work(self, state: Task, data: Any, effective: Any, context: Context) -> tuple[str | None, Any]:
        try:
            arguments = self.arguments(state, data, effective, context)
            result = self.with_retries(state, arguments, context)
            if context.inspection is not None:
                context.inspection["result"] = result
            output, assigned = self.finish(state, data, result, context)
        except StatesError as error:
            caught = self.caught(state, data, error, context)
            if caught is None:
                raise
            catcher, output, assigned = caught
            return self.exited(state, catcher.next, output, assigned, context)
        return self.exited(state, state.next, output, assigned, context)

    def caught(self, state: Task, data: Any, error: StatesError,
               context: Context) -> tuple[Catcher, Any, dict[str, Any]] | None:
        """The catcher that catches ``error`` (None: none does), the output it gives and what it assigns."""
        catcher = next((catcher for catcher in state.catchers if matches(catcher.error_equals, error.error, True)),
                       None)
        if catcher is None:
            return None
        error_output = {"Error": error.error, "Cause": error.cause}
        if state.language == JSONATA:
            bindings = context.bindings(data, errorOutput=error_output)
            assigned = catcher.assign.evaluate(None, context, bindings) if catcher.assign else {}
            output = catcher.output.evaluate(bindings) if catcher.output is not None else error_output
        else:
            assigned = catcher.assign.evaluate(error_output, context, None) if catcher.assign else {}
            output = put(data, catcher.result_path, error_output)
        return catcher, output, assigned

    def with_retries(self, state: Task, arguments: Any, context: Context) -> Any:
        attempts = [0] * len(state.retriers)
        while True:
            try:
                context.count(3)  # Scheduled, Started, and Succeeded or Failed
                return self.attempt(state, arguments, context)
            except StatesError as error:
                found = next((number for number, retrier in enumerate(state.retriers)
                              if matches(retrier.error_equals, error.error, True)), None)
                if found is None:
                    raise
                retrier = state.retriers[found]
                if attempts[found] >= retrier.max_attempts:
                    raise
                delay = retry_delay(retrier, attempts[found], self.services.jitter)
                if self.services.sleep is None:
                    context.pause(delay)
                else:
                    self.services.sleep(delay)
                attempts[found] += 1
                context.state["RetryCount"] = context.state.get("RetryCount", 0) + 1
