"""The template's state machines as the local emulator reads them: each definition file with the template's
DefinitionSubstitutions applied (a function's ``!GetAtt X.Arn`` becomes the local ARN `serve` answers to, the
bucket's ``!Ref`` the local bucket), checked by the local runner (states.py) before anything starts; what the
Step Functions API (stepfunctions.py), `serve` (server.py) and `pipeline run --local` (pipeline.py) read."""

from __future__ import annotations

import json
import os
import pathlib
import re
import threading
from typing import Any

from . import asl
from . import template as sam_template
from .template import ACCOUNT

STATE_MACHINE = "CorpusPipeline"  # the template's logical id
STACK_NAME = "local"  # what ${AWS::StackName} stands for
REGION = sam_template.LOCAL_REGION  # `pipeline run --local`'s stack lives there
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


DEPTH_LIMIT = 200  # levels of a definition the local runner walks (recursively): deeper is refused at start


def depth(value: Any) -> int:
    """How deeply a JSON value nests (without recursion: it may be nested deeper than Python recurses)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        current, level = pending.pop()
        if isinstance(current, (dict, list)):
            deepest = max(deepest, level)
            pending.extend((item, level + 1) for item in (current.values() if isinstance(current, dict) else current))
    return deepest


class PipelineError(Exception):
    """The template or its definition cannot be run locally: one line, before anything starts."""


def _resolved(template: dict[str, Any], value: Any, where: str, buckets: dict[str, str], region: str = REGION) -> str:
    """A substitution's value as the deployed stack would give it, for this machine."""
    resources = template["Resources"]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, dict) and len(value) == 1:
        (function, argument), = value.items()
        if function == "Fn::GetAtt":
            name, attribute = "", ""
            if isinstance(argument, str):
                name, _, attribute = argument.partition(".")
            elif isinstance(argument, list) and len(argument) == 2:
                name, attribute = argument
            kind = resources.get(name, {}).get("Type") if isinstance(name, str) else None
            if attribute == "Arn" and kind == "AWS::Serverless::Function":
                return sam_template.local_arn("lambda", region, f"function:{name}")
        if function == "Ref":
            if argument in buckets:
                return buckets[argument]
            if argument in template.get("Parameters", {}):
                return str(template["Parameters"][argument].get("Default", ""))
        if function == "Fn::Sub" and isinstance(argument, str):
            pseudo = {"AWS::StackName": STACK_NAME, "AWS::Region": region, "AWS::AccountId": ACCOUNT,
                      "AWS::Partition": "aws"}
            unknown = [name for name in PLACEHOLDER.findall(argument) if name not in pseudo]
            if not unknown:
                return PLACEHOLDER.sub(lambda match: pseudo[match.group(1)], argument)
    raise PipelineError(f"{where}: the local runner does not resolve {json.dumps(value)}")


def local_buckets(template: dict[str, Any]) -> dict[str, str]:
    """A local S3 bucket name for each bucket the template declares (its logical id, lower-cased)."""
    return {name: name.lower() for name, resource in template["Resources"].items()
            if isinstance(resource, dict) and resource.get("Type") == "AWS::S3::Bucket"}


def state_machine_ids(template_path: pathlib.Path) -> dict[str, str]:
    """The template's state machines: logical id and type (STANDARD unless the template says EXPRESS)."""
    resources = sam_template.load_template(template_path)["Resources"]
    return {name: str(resource.get("Properties", {}).get("Type", "STANDARD")).upper()
            for name, resource in resources.items()
            if isinstance(resource, dict) and resource.get("Type") == "AWS::Serverless::StateMachine"}


def load_definition(template_path: pathlib.Path, logical_id: str = STATE_MACHINE,
                    region: str = REGION) -> tuple[dict[str, Any], str]:
    """The state machine's definition as SAM deploys it (DefinitionUri's file, or Definition, with the
    DefinitionSubstitutions applied) and its name; checked by the local runner."""
    definition, name, _ = load_parsed(template_path, logical_id, region)
    return definition, name


LOADED_KEPT = 8  # definitions kept parsed (load_parsed)
_loaded: dict[tuple[Any, ...], tuple[dict[str, Any], str, asl.Machine]] = {}
_loaded_lock = threading.Lock()


def load_parsed(template_path: pathlib.Path, logical_id: str = STATE_MACHINE,
                region: str = REGION) -> tuple[dict[str, Any], str, asl.Machine]:
    """load_definition's definition and name, and the definition parsed (asl.Machine): parsed once for as long as
    the template and the definition's file are unchanged (`pipeline run --local` and the serve it starts read the
    same machine; its runners share the parsed states, which nothing changes once parsed)."""

    def stamp(path: pathlib.Path) -> tuple[Any, ...]:
        try:
            status = os.stat(path)
        except OSError:
            return (str(path),)
        return str(path.resolve()), status.st_mtime_ns, status.st_size, status.st_ino

    template = sam_template.load_template(template_path)
    resource = template["Resources"].get(logical_id)
    uri = resource.get("Properties", {}).get("DefinitionUri") if isinstance(resource, dict) else None
    key = (stamp(template_path), stamp(template_path.parent / uri) if isinstance(uri, str) else None, logical_id,
           region)
    with _loaded_lock:
        found = _loaded.get(key)
    if found is None:
        found = _load_definition(template, template_path, logical_id, region)
        with _loaded_lock:
            _loaded[key] = found
            while len(_loaded) > LOADED_KEPT:
                del _loaded[next(iter(_loaded))]
    return found


def _load_definition(template: dict[str, Any], template_path: pathlib.Path, logical_id: str,
                     region: str) -> tuple[dict[str, Any], str, asl.Machine]:
    resource = template["Resources"].get(logical_id)
    if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::StateMachine":
        raise PipelineError(f"{template_path}: no AWS::Serverless::StateMachine {logical_id}")
    properties = resource.get("Properties", {})
    where = f"{logical_id}.Properties"
    if "DefinitionUri" in properties:
        if not isinstance(properties["DefinitionUri"], str):
            raise PipelineError(f"{where}.DefinitionUri: the local runner reads a file of the project only")
        path = template_path.parent / properties["DefinitionUri"]
        try:
            text = sam_template.read_bounded(path, sam_template.DEFINITION_LIMIT).decode("utf-8")
        except sam_template.TemplateError as error:
            raise PipelineError(f"{where}.DefinitionUri {error}") from None
        except UnicodeDecodeError:
            raise PipelineError(f"{where}.DefinitionUri {path}: not UTF-8 text") from None
    elif isinstance(properties.get("Definition"), dict):
        text = json.dumps(properties["Definition"])
    else:
        raise PipelineError(f"{where}: no DefinitionUri or Definition")
    buckets = local_buckets(template)
    substitutions = {key: _resolved(template, value, f"{where}.DefinitionSubstitutions.{key}", buckets, region)
                     for key, value in (properties.get("DefinitionSubstitutions") or {}).items()}
    missing = sorted({name for name in PLACEHOLDER.findall(text) if name not in substitutions})
    if missing:
        raise PipelineError(f"{where}: the definition's ${{{missing[0]}}} has no DefinitionSubstitutions entry")
    text = PLACEHOLDER.sub(lambda match: json.dumps(substitutions[match.group(1)])[1:-1], text)
    try:
        definition = json.loads(text)
    except ValueError as error:
        raise PipelineError(f"{where}: the definition is not JSON ({error})") from None
    except RecursionError:
        raise PipelineError(f"{where}: the definition is JSON nested too deeply") from None
    name = _resolved(template, properties.get("Name", logical_id), f"{where}.Name", buckets, region)
    if depth(definition) > DEPTH_LIMIT:
        raise PipelineError(f"{where}: the definition is nested too deeply for the local runner (more than "
                            f"{DEPTH_LIMIT} levels)")
    try:
        parsed = asl.parse_machine(definition)
    except asl.NotImplementedByRunner as error:
        raise PipelineError(str(error)) from None
    except RecursionError:  # e.g. Parameters nested hundreds deep: read by the parser, too deep to walk
        raise PipelineError(f"{where}: the definition is nested too deeply for the local runner") from None
    return definition, name, parsed
