"""The functions' handlers loaded as Lambda loads them, for tests, without the local emulator: the layer's content
(/opt/python) and the function's CodeUri (the task root) on the path, then the module the Handler names. Which
folders and handlers those are is pinned against template.yaml by tests/template/test_template.py."""

import importlib
import time
import uuid

from support import ROOT

LAYER = ROOT / "layers" / "chrf_core"
CODE = ROOT / "functions" / "chrf_components"
HANDLERS = {"ChrfComponentsFunction": "app.lambda_handler", "ScoreBatchFunction": "score_batch.lambda_handler",
            "MergeReportFunction": "merge_report.lambda_handler"}


def load(name="ChrfComponentsFunction"):
    """The function's handler (its folders are on pytest's pythonpath, as Lambda puts them on sys.path)."""
    module_name, _, attribute = HANDLERS[name].rpartition(".")
    module = importlib.import_module(module_name)
    assert CODE in __import__("pathlib").Path(module.__file__).resolve().parents, module.__file__
    return getattr(module, attribute)


class LambdaContext:
    """The attributes of Lambda's context object that Powertools and the handlers read."""

    def __init__(self, function_name="chrf-components-test", memory_mb=1024, timeout_s=10):
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "test"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self):
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def invoke(handler, event, context=None):
    """Call the handler; an exception becomes Lambda's error payload ({"errorType", "errorMessage"})."""
    try:
        return handler(event, context or LambdaContext())
    except Exception as error:
        return {"errorType": type(error).__name__, "errorMessage": str(error)}
