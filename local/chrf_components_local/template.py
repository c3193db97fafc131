"""The template, as SAM reads it: its functions, and a function's handler loaded the way Lambda loads it.

Lambda puts a layer's content at /opt/python and the function's CodeUri at the task root, then imports the
module named by Handler. This module reads template.yaml, puts the same folders first on sys.path (a layer's
source folder, which holds the Python package and, once `make setup` has run, the host's native kernel), imports
the handler, checks that the module really came from the CodeUri (so a packaging mistake shows up locally), and
invokes it with a Lambda-like context; errors come back as ``{"errorType", "errorMessage"}``, as Lambda reports
them.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import sys
import time
import uuid
from typing import Any, NamedTuple

DEFAULT_FUNCTION = "ChrfComponentsFunction"
TEMPLATE_NAME = "template.yaml"
API_GATEWAY_PAYLOAD_LIMIT = 10 * 1024 * 1024  # bytes of request body API Gateway accepts
TEMPLATE_LIMIT = 1024 * 1024  # bytes of a template (CloudFormation's largest, uploaded to S3)
DEFINITION_LIMIT = 1024 * 1024  # bytes of a state machine definition (Step Functions' quota)
ACCOUNT = "123456789012"  # the account local functions belong to (every ARN the emulator writes)
LOCAL_REGION = "us-east-1"  # where the local functions and state machines live unless --region says otherwise
LOCAL_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}  # placeholders for loopback


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or name (only this machine reaches it)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_arn(service: str, region: str, resource: str) -> str:
    """The ARN of a local resource: ``arn:aws:SERVICE:REGION:ACCOUNT:RESOURCE`` (IAM's with no region), the one
    format every ARN the emulator writes follows."""
    return f"arn:aws:{service}:{'' if service == 'iam' else region}:{ACCOUNT}:{resource}"


LOCAL_ROLE = local_arn("iam", "", "role/local")  # the role local state machines run as


class TemplateError(Exception):
    """No template, or no such function in it: a problem the command line reports in one line."""


PACKAGED = pathlib.Path(__file__).parent / "project" / TEMPLATE_NAME  # the service's own, in a wheel (setup.py)


def find_template(explicit: str | None = None) -> pathlib.Path:
    """``explicit`` if given, else template.yaml in the working directory, else (installed from a wheel) the
    service's own template, functions and state machine that the wheel carries."""
    path = pathlib.Path(explicit) if explicit else pathlib.Path.cwd() / TEMPLATE_NAME
    if not explicit and not path.is_file() and PACKAGED.is_file():
        return PACKAGED
    if not path.is_file():
        if explicit:
            raise TemplateError(f"--template {explicit}: " + ("not a regular file" if path.exists() else
                                                              "no such file"))
        raise TemplateError(
            f"no {TEMPLATE_NAME} in {pathlib.Path.cwd()}: run this from the project folder or pass --template PATH"
        )
    return path.resolve()


class TooLarge(TemplateError):
    """A file past the bound it is read with."""


def read_bounded(path: pathlib.Path | str, limit: int, regular_only: bool = True) -> bytes:
    """A file read with a bound, refused in one line (TemplateError; TooLarge past ``limit`` bytes); never more than
    ``limit`` + 1 bytes are read. The files the emulator reads (a template, a definition, an event) must be regular
    files (``regular_only``: a FIFO would hang, /dev/zero never end)."""
    import stat

    try:
        if regular_only and not stat.S_ISREG(os.stat(path).st_mode):
            raise TemplateError(f"{path}: not a regular file")
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as error:
        raise TemplateError(f"{path}: cannot read ({error.strerror or error})") from None
    if len(data) > limit:
        raise TooLarge(f"{path}: larger than {limit} bytes")
    return data


def load_template(path: pathlib.Path) -> dict[str, Any]:
    """A template as plain data; CloudFormation tags (!Ref, !Sub, ...) become ``{"Fn::X": value}``. Read with a
    bound (TEMPLATE_LIMIT, CloudFormation's largest template); YAML aliases are refused, as CloudFormation refuses
    them (template-formats.html), so no alias can multiply what a small file makes."""
    import yaml

    class TemplateLoader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise yaml.YAMLError(f"a YAML alias (*{event.anchor}) at line {event.start_mark.line + 1}: "
                                     f"CloudFormation templates take none")
            return super().compose_node(parent, index)

    def construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
        value: Any
        if isinstance(node, yaml.ScalarNode):
            value = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            assert isinstance(node, yaml.MappingNode)
            value = loader.construct_mapping(node, deep=True)
        return {"Ref" if suffix == "Ref" else f"Fn::{suffix}": value}

    TemplateLoader.add_multi_constructor("!", construct_tag)
    text = read_bounded(path, TEMPLATE_LIMIT)
    try:
        data = yaml.load(text.decode("utf-8"), Loader=TemplateLoader)
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:
        raise TemplateError(f"{path}: not a readable template ({' '.join(str(error).split())[:300]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("Resources"), dict):
        raise TemplateError(f"{path}: not a SAM template (no Resources)")
    return data


def function_names(template: dict[str, Any]) -> list[str]:
    """Logical ids of the template's functions."""
    return sorted(name for name, resource in template["Resources"].items()
                  if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::Function")


def function_properties(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    """A function's Properties; a logical id that is not a function is a TemplateError naming the functions."""
    if logical_id not in function_names(template):
        raise TemplateError(f"no function {logical_id} in the template; it has {', '.join(function_names(template))}")
    properties: dict[str, Any] = template["Resources"][logical_id]["Properties"]
    return properties


def function_paths(
    template: dict[str, Any], logical_id: str, root: pathlib.Path
) -> tuple[pathlib.Path, str, list[pathlib.Path]]:
    """(CodeUri folder, Handler, layer content folders) of a function, as the template declares them."""
    resources = template["Resources"]
    properties = function_properties(template, logical_id)
    globals_function = template.get("Globals", {}).get("Function", {})
    layer_dirs = [(root / resources[ref["Ref"]]["Properties"]["ContentUri"]).resolve()
                  for ref in properties.get("Layers", globals_function.get("Layers", []))]
    return (root / properties["CodeUri"]).resolve(), properties["Handler"], layer_dirs


def parameter_value(template: dict[str, Any], value: Any) -> Any:
    """A value, with a ``!Ref`` to a parameter taken at the parameter's default."""
    parameters = template.get("Parameters", {})
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in parameters:
        return parameters[value["Ref"]].get("Default")
    return value


class FunctionConfig(NamedTuple):
    """What Lambda runs a function with, besides its code: the template's Timeout, MemorySize and environment."""

    timeout: int
    memory_mb: int
    environment: dict[str, str]


def function_config(template: dict[str, Any], logical_id: str) -> FunctionConfig:
    """A function's configuration, Globals merged in; an environment value that refers to a parameter takes the
    parameter's default, and one that needs the deployed stack (other intrinsics) is left out."""
    globals_function = template.get("Globals", {}).get("Function", {})
    properties = function_properties(template, logical_id)
    environment: dict[str, str] = {}
    for source in (globals_function, properties):
        for name, value in (source.get("Environment", {}).get("Variables") or {}).items():
            value = parameter_value(template, value)
            if isinstance(value, (str, int, float, bool)):
                environment[name] = str(value).lower() if isinstance(value, bool) else str(value)
    setting = {**globals_function, **properties}
    return FunctionConfig(int(setting.get("Timeout", 3)), int(setting.get("MemorySize", 128)), environment)


def load_handler(logical_id: str = DEFAULT_FUNCTION, template_path: pathlib.Path | None = None) -> Any:
    """Import the function's handler from its CodeUri, with its layers on the path, and return it."""
    path = template_path or find_template()
    code_dir, handler, layer_dirs = function_paths(load_template(path), logical_id, path.parent)
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
    """Lambda's Python context object, every attribute of it (docs.aws.amazon.com/lambda/latest/dg/python-context.html):
    ``identity`` and ``client_context`` are None unless a mobile SDK sends them, ``tenant_id`` unless the function
    has tenant isolation, which no local invocation has."""

    def __init__(self, function_name: str = "chrf-components-local", memory_mb: int = 1024, timeout_s: int = 10,
                 request_id: str | None = None):
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_mb
        region = os.environ.get("AWS_REGION") or LOCAL_REGION  # the function's, as Lambda sets it
        self.invoked_function_arn = local_arn("lambda", region, f"function:{function_name}")
        self.aws_request_id = request_id or str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self.identity: Any = None
        self.client_context: Any = None
        self.tenant_id: str | None = None
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))

