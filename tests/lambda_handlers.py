"""The functions' handlers loaded as Lambda loads them, for tests, without the local emulator: the layer's content
(/opt/python) and the function's CodeUri (the task root) on the path, then the module the Handler names. Which
folders and handlers those are is pinned against template.yaml by tests/template/test_template.py."""

import importlib

from support import ROOT

from chrf_components_local.answers import function_error  # the emulator's: one error payload
from chrf_components_local.template import LambdaContext  # and one context

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


def invoke(handler, event, context=None):
    """Call the handler in this process; an exception becomes Lambda's error payload instead of escaping."""
    try:
        return handler(event, context or LambdaContext())
    except Exception as error:
        return function_error(type(error).__name__, str(error))


__all__ = ["CODE", "HANDLERS", "LAYER", "LambdaContext", "invoke", "load"]
