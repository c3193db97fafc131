"""The corpus pipeline's state machine as the tests run it: the local runner (chrf_components_local.states) on the
definition the template deploys (statemachine/corpus_pipeline.asl.json with its DefinitionSubstitutions, read by
chrf_components_local.definitions.load_definition), never a copy of it.

Its Lambda tasks reach the handlers in this process through the Lambda runtime's own marshalling
(runtime.run_invocation: the payload parsed from JSON bytes, the result or the error payload serialised back), one
child at a time (Powertools Metrics keeps one metric set per process, as Lambda runs one invocation per process);
S3 is moto's. `pipeline run --local` runs the same runner with the functions in `serve`'s worker processes
(tests/pipeline/test_local_pipeline.py).
"""

import json
import re
import uuid

from aws_stand_ins import RUNNER_MAP_RUNS
from support import ROOT

from chrf_components_local import definitions, runtime, states
from chrf_components_local.template import LambdaContext

TEMPLATE = ROOT / "template.yaml"
DEFINITION, NAME = definitions.load_definition(TEMPLATE)
RESULTS_BUCKET = definitions.local_buckets(definitions.sam_template.load_template(TEMPLATE))["CorpusBucket"]


def function_name(function):
    """The logical id a FunctionName (a name or an ARN) names."""
    return function.rpartition("function:")[2].partition(":")[0] if "function:" in function else function


def in_process(handlers):
    """A LambdaInvoke that runs ``handlers`` (logical id -> handler) in this process as the runtime runs them;
    ``calls`` records (logical id, payload) of every invocation."""

    def invoke(function, payload):
        name = function_name(function)
        invoke.calls.append((name, json.loads(payload)))
        request_id = str(uuid.uuid4())
        text, failed = runtime.run_invocation(handlers[name], payload, LambdaContext(name), request_id)
        return states.LambdaAnswer(text.encode("utf-8"), "Unhandled" if failed else None, request_id)

    invoke.calls = []
    return invoke


def machine(s3, invoke, definition=DEFINITION, sleep=lambda seconds: None, concurrency=1, jitter=lambda: 1.0):
    """The state machine on moto's S3 (``s3``) with its Lambda tasks through ``invoke``; retries do not wait."""
    services = states.Services(invoke, s3, RUNNER_MAP_RUNS, concurrency, sleep, jitter)
    return states.StateMachine(definition, NAME, services)


def execution_input(settings=None, bucket="corpus", key="inputs/test.jsonl"):
    return {"input": {"bucket": bucket, "key": key}, "settings": settings or {},
            "output": {"bucket": bucket, "key": "reports/test.json"}}


def error_body(execution):
    """What a failed execution says of its InvalidInputError: its cause is the contract's message itself, one
    readable line (the state machine's Choice fails it with the error and message the function answered), and the
    line it names ({message, line})."""
    assert execution.status == "FAILED" and execution.error == "InvalidInputError", execution
    assert "\n" not in execution.cause and "stackTrace" not in execution.cause, execution.cause
    found = re.match(r"line (\d+)", execution.cause)
    return {"message": execution.cause, "line": int(found.group(1)) if found else None}
