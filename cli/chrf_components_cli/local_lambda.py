"""Run the template's Lambda functions locally the way Lambda loads them, without Docker.

Lambda puts a layer's content at /opt/python and the function's CodeUri at the task root, then imports the
module named by Handler. This module reads template.yaml, puts the same folders first on sys.path, imports the
handler, checks that the module really came from the CodeUri (so a packaging mistake shows up locally), and
invokes it with a Lambda-like context; errors come back as ``{"errorType", "errorMessage"}``, as Lambda reports
them.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
import time
import uuid
from typing import Any

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "template.yaml"
DEFAULT_FUNCTION = "ChrfComponentsFunction"


def load_template(path: pathlib.Path = TEMPLATE) -> dict[str, Any]:
    """template.yaml as plain data; CloudFormation tags (!Ref, !Sub, ...) become ``{"Fn::X": value}``."""
    import yaml

    class TemplateLoader(yaml.SafeLoader):
        pass

    def construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
        return {name: value}

    TemplateLoader.add_multi_constructor("!", construct_tag)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=TemplateLoader)


def function_paths(template: dict[str, Any], logical_id: str) -> tuple[pathlib.Path, str, list[pathlib.Path]]:
    """(CodeUri folder, Handler, layer content folders) of a function, as the template declares them."""
    resources = template["Resources"]
    properties = resources[logical_id]["Properties"]
    code_dir = (TEMPLATE.parent / properties["CodeUri"]).resolve()
    globals_function = template.get("Globals", {}).get("Function", {})
    layer_refs = properties.get("Layers", globals_function.get("Layers", []))
    layer_dirs = []
    for ref in layer_refs:
        layer = resources[ref["Ref"]]
        assert layer["Metadata"]["BuildMethod"].startswith("python"), "layers are built by SAM's python builder"
        layer_dirs.append((TEMPLATE.parent / layer["Properties"]["ContentUri"]).resolve())
    return code_dir, properties["Handler"], layer_dirs


def load_handler(logical_id: str = DEFAULT_FUNCTION, template: dict[str, Any] | None = None) -> Any:
    """Import the function's handler from its CodeUri, with its layers on the path, and return it."""
    code_dir, handler, layer_dirs = function_paths(template or load_template(), logical_id)
    module_name, _, attribute = handler.rpartition(".")
    for folder in [code_dir, *layer_dirs][::-1]:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    module = importlib.import_module(module_name)
    module_file = pathlib.Path(module.__file__ or "").resolve()
    if code_dir not in module_file.parents:
        raise ImportError(f"{handler} was imported from {module_file}, not from CodeUri {code_dir}")
    return getattr(module, attribute)


class LambdaContext:
    """The attributes of Lambda's context object that Powertools and handlers read."""

    def __init__(self, function_name: str = "chrf-components-local", memory_mb: int = 1024, timeout_s: int = 10):
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def invoke(handler: Any, event: Any, context: LambdaContext | None = None) -> Any:
    """Call the handler; an exception becomes Lambda's error payload instead of escaping."""
    try:
        return handler(event, context or LambdaContext())
    except Exception as error:
        return {"errorType": type(error).__name__, "errorMessage": str(error)}


def comparable(result: Any) -> dict[str, Any]:
    """A handler result in the form stored beside each sample event (events/*.expected.json).

    HTTP responses keep status, headers (REST v1's multiValueHeaders folded in) and the body parsed as JSON;
    Lambda errors keep errorType and the parsed errorMessage; anything else is the direct output.
    """
    if isinstance(result, dict) and "statusCode" in result:
        headers = dict(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers[name] = ", ".join(values)
        return {"statusCode": result["statusCode"], "headers": headers, "body": _json_or_text(result.get("body"))}
    if isinstance(result, dict) and set(result) == {"errorType", "errorMessage"}:
        return {"errorType": result["errorType"], "errorMessage": _json_or_text(result["errorMessage"])}
    return {"output": result}


def _json_or_text(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text
