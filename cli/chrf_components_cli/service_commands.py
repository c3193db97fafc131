"""The service's commands: `request` (one contract request, locally or on a deployed stack), `invoke` and `serve`
(the template's function run locally, as Lambda and API Gateway run it), `pipeline run` (the deployed pipeline)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import chrf_core

from .common import (
    EXIT_INVALID,
    EXIT_REMOTE,
    SERVICE_MODULES,
    CommandError,
    input_roles,
    need_aws_extra,
    open_inputs,
    refuse_over_inputs,
    settings_from,
    signals_end_the_run,
)


def read_bounded(name: str, limit: int, regular_only: bool = False, which: str = "") -> bytes:
    """A file (the emulator's bounded read; ``regular_only``: no FIFO or device) or standard input, refused in one
    line if larger than ``limit`` bytes (``which`` limit, said after it), read no further than that."""
    from chrf_components_local.template import TemplateError, TooLarge
    from chrf_components_local.template import read_bounded as read_file

    if name != "-":
        try:
            return read_file(name, limit, regular_only)  # the name as typed, in any message
        except TooLarge as error:
            raise CommandError(f"{error}{which}") from None
        except TemplateError as error:
            raise CommandError(str(error)) from None
    if sys.stdin is None:
        raise CommandError("-: standard input is closed")
    try:
        data = sys.stdin.buffer.read(limit + 1)
    except OSError as error:
        raise CommandError(f"-: cannot read ({error.strerror or error})") from None
    if len(data) > limit:
        raise CommandError(f"-: larger than {limit} bytes{which}")
    return data


def command_request(args: argparse.Namespace) -> int:
    from chrf_components_local.template import API_GATEWAY_PAYLOAD_LIMIT

    for flag, value in (("--url", args.url), ("--function", args.function)):
        if value is not None and not value.strip():  # e.g. a stack lookup that found nothing: never a local score
            raise CommandError(f"{flag} is empty: give the deployed {'API' if flag == '--url' else 'function'}'s "
                               f"{'ExecuteUrl' if flag == '--url' else 'name or ARN'}, or leave {flag} out to score "
                               f"here")
    raw = read_bounded(args.file, API_GATEWAY_PAYLOAD_LIMIT, which=", the API's payload limit")
    if args.url is not None or args.function is not None:
        need_aws_extra("request --url/--function", ("boto3",))
        from . import remote

        try:
            if args.url:
                status, body = remote.post_signed(args.url, raw)
                print(body)
                return 0 if 200 <= status < 300 else EXIT_INVALID if status == 400 else EXIT_REMOTE
            payload, failed = remote.invoke_function(args.function, raw)
        except remote.RemoteError as error:
            raise CommandError(str(error), EXIT_REMOTE) from None
        print(json.dumps(payload, ensure_ascii=False))
        if failed:
            return EXIT_INVALID if payload.get("errorType") == "InvalidInputError" else EXIT_REMOTE
        return 0
    try:
        output = chrf_core.score(chrf_core.service.decode_request(raw, source="request"))
    except chrf_core.InvalidInputError as error:
        print(error.envelope())
        return EXIT_INVALID
    print(json.dumps(output))
    return 0


def invoke_target(args: argparse.Namespace) -> tuple[str, str]:
    """(event file, function logical id) from either spelling: ``invoke EVENT_FILE [--function ID]`` or SAM's
    ``invoke [ID] -e EVENT_FILE``."""
    from chrf_components_local.template import DEFAULT_FUNCTION

    if args.event is None:
        if args.target is None:
            raise CommandError("give the event file: invoke EVENT_FILE, or invoke [LOGICAL_ID] -e EVENT_FILE")
        return args.target, args.function or DEFAULT_FUNCTION
    if args.target is not None and args.function is not None:
        raise CommandError("name the function once: invoke LOGICAL_ID -e EVENT_FILE, or --function LOGICAL_ID")
    return args.event, args.target or args.function or DEFAULT_FUNCTION


def command_invoke(args: argparse.Namespace) -> int:
    need_aws_extra("invoke", ("aws_lambda_powertools", "yaml"))

    from chrf_components_local import template as sam_template
    from chrf_components_local.runtime import invoke_once

    event_file, function = invoke_target(args)
    try:
        template = sam_template.find_template(args.template)
        body = read_bounded(event_file, sam_template.API_GATEWAY_PAYLOAD_LIMIT, regular_only=True)
        json.loads(body)
    except sam_template.TemplateError as error:
        raise CommandError(str(error)) from None
    except OSError as error:
        raise CommandError(f"{event_file}: cannot read ({error.strerror or error})") from None
    except ValueError as error:
        raise CommandError(f"{event_file}: not a JSON event ({error})") from None
    # Like `sam local invoke`: the function runs in an execution environment of its own (serve's runtime), its logs
    # and metrics on stderr, the response alone on stdout, as the runtime serialises it.
    try:
        invocation = invoke_once(template, function, body)
    except sam_template.TemplateError as error:
        raise CommandError(str(error)) from None
    print(invocation.payload)
    return 0


def command_serve(args: argparse.Namespace) -> int:
    if args.wait:
        return wait_for_serve(args.host, args.port, args.timeout)
    need_aws_extra("serve")
    from chrf_components_local import server
    from chrf_components_local import template as sam_template

    try:
        template = sam_template.find_template(args.template)
        return server.serve(args.host, args.port, template, args.workers, args.iam, args.region)
    except (sam_template.TemplateError, server.ServeError) as error:
        raise CommandError(str(error)) from None


def wait_for_serve(host: str, port: int, timeout: float) -> int:
    """`serve --wait`: poll host:port until a `serve` answers there (its Server header, not just any listener), at
    most ``timeout`` seconds; exit 0 once it does, else exit 3."""
    import http.client
    import time

    if not 0 < timeout <= 3600:
        raise CommandError(f"--timeout must be more than 0 and at most 3600 seconds, got {timeout:g}")
    deadline = time.monotonic() + timeout
    while True:
        connection = http.client.HTTPConnection(host, port, timeout=2)
        try:
            connection.request("GET", "/")
            response = connection.getresponse()
            response.read()
            if response.getheader("Server", "").startswith("chrf-components-local"):
                return 0
        except (OSError, http.client.HTTPException):
            pass
        finally:
            connection.close()
        if time.monotonic() >= deadline:
            raise CommandError(f"no serve answers on {host}:{port} after {timeout:g} s", EXIT_REMOTE)
        time.sleep(0.1)


def check_log_file(name: str, inputs: list[str], template: Path | None = None) -> None:
    """A log file the functions can append to, checked before anything runs: not an input file, the template or a
    definition it names (their lines would be appended to), a regular file or /dev/null (not a directory, a device
    that refuses writes, a FIFO), in a folder that exists and can be written to (it is created if missing)."""
    refuse_over_inputs("--log-file", name, inputs, "an input file")
    if template is not None:
        refuse_over_inputs("--log-file", name, [str(path) for path in project_files(template)],
                           "the template or a file it names")
    if os.path.exists(name) and not os.path.isfile(name) and os.path.realpath(name) != os.devnull:
        kind = "a directory" if os.path.isdir(name) else "not a regular file"
        raise CommandError(f"--log-file {name}: is {kind}")
    try:
        with open(name, "a", encoding="utf-8"):
            pass
    except OSError as error:
        raise CommandError(f"--log-file {name}: cannot write ({error.strerror or error})") from None


def project_files(template: Path) -> list[Path]:
    """The template and the files of the project it names that the local run reads: the state machines'
    definitions (DefinitionUri) and the functions' code (CodeUri folders' Python files)."""
    from chrf_components_local import template as sam_template

    files = [template]
    try:
        resources = sam_template.load_template(template).get("Resources", {})
    except sam_template.TemplateError:
        return files  # the run refuses it in its own words
    for resource in resources.values() if isinstance(resources, dict) else ():
        properties = resource.get("Properties", {}) if isinstance(resource, dict) else {}
        if not isinstance(properties, dict):
            continue
        if isinstance(properties.get("DefinitionUri"), str):
            files.append(template.parent / properties["DefinitionUri"])
        if isinstance(properties.get("CodeUri"), str) and (template.parent / properties["CodeUri"]).is_dir():
            files += sorted((template.parent / properties["CodeUri"]).glob("*.py"))
    return files


def command_pipeline_run(args: argparse.Namespace) -> int:
    if args.local:
        need_aws_extra("pipeline run --local", (*SERVICE_MODULES, "moto"))
    else:
        need_aws_extra("pipeline run", ("boto3",))
        for flag, value in (("--template", args.template), ("--log-file", args.log_file)):
            if value is not None:
                raise CommandError(f"{flag} goes with --local (a deployed stack has its own template and logs)")
    from . import remote

    settings = settings_from(args)
    template = None
    if args.local:
        from chrf_components_local import template as sam_template

        try:
            template = sam_template.find_template(args.template)
        except sam_template.TemplateError as error:
            raise CommandError(str(error)) from None
    roles = input_roles(args)
    if len(roles.references) != 1:
        raise CommandError(f"the corpus pipeline takes one reference file, got {len(roles.references)} (score takes "
                           "several)")
    if args.log_file is not None:
        check_log_file(args.log_file, [roles.hypotheses[0], roles.references[0]], template)
    files = open_inputs((roles.hypotheses[0], "HYP_FILE"), (roles.references[0], "REF_FILE"))
    try:
        if template is not None:
            with signals_end_the_run():
                return remote.run_local_pipeline(files, settings, template, as_json=args.json, log=args.log_file)
        return remote.run_pipeline(args.stack, files, settings, as_json=args.json)
    except chrf_core.InvalidInputError as error:  # a line no pipeline batch can hold, found before the upload
        print(f"chrf-components pipeline run: InvalidInputError: {error.message}", file=sys.stderr)
        return EXIT_INVALID
    except remote.RemoteError as error:
        raise CommandError(str(error), EXIT_REMOTE) from None
    finally:
        for file in files:
            file.close()


