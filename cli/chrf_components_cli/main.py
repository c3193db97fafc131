"""The `chrf-components` command line: explain scores, score segments, compare systems, run or call the service.

    chrf-components score HYP REF [settings] [--json] [--html FILE]
    chrf-components segments HYP REF [settings] [--json] [--worst N]
    chrf-components compare REF BASELINE SYSTEM [SYSTEM ...] [settings] [--bootstrap N] [--randomization N]
                            [--seed S] [--json] [--html FILE]
    chrf-components request FILE|- [--url EXECUTE_URL | --function NAME_OR_ARN]
    chrf-components invoke EVENT_FILE [--function LOGICAL_ID] [--template PATH]
    chrf-components serve [--port 3000] [--template PATH]
    chrf-components pipeline run HYP REF --stack STACK_NAME [settings] [--json]

Exit codes: 0 done; 1 invalid input (a 400 or InvalidInputError) or a failed pipeline execution; 2 a problem
with the command itself (usage, files, settings), always one line on stderr; 3 the deployed service or AWS
could not be reached or failed; 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import chrf_core

from .lines import InputError, LineFile, aligned_chunks, plural

EXIT_INVALID, EXIT_USAGE, EXIT_REMOTE = 1, 2, 3
FLAGS = {key: "--" + key.replace("_", "-") for key in chrf_core.SETTING_KEYS}


class CommandError(Exception):
    """A problem with the command's input: one line on stderr and exit code 2 (or ``code``)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    """argparse with usage errors in one line (exit code 2), like every other error of the command line."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def settings_from(args: argparse.Namespace) -> chrf_core.Settings:
    """The scoring settings from the flags; a broken rule names the flag the user typed."""
    request = {key: getattr(args, key) for key in chrf_core.SETTING_KEYS}
    try:
        return chrf_core.parse_settings(request)
    except chrf_core.InvalidInputError as error:
        if error.field == "word_order" and "both be 0" in error.detail:
            raise CommandError("--char-order and --word-order cannot both be 0") from None
        raise CommandError(f"{FLAGS.get(error.field or '', error.field)}: {error.detail}") from None


def write_output(target: str, text: str) -> None:
    """``text`` to a file, or to standard output for '-'."""
    if target == "-":
        sys.stdout.write(text)
        return
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"--html {target}: cannot write ({error.strerror or error})") from None
    print(f"wrote {target}", file=sys.stderr)


def open_inputs(*pairs: tuple[str, str]) -> list[LineFile]:
    if sum(name == "-" for name, _ in pairs) > 1:
        raise CommandError("only one input can be standard input (-)")
    return [LineFile(name, label) for name, label in pairs]


def command_score(args: argparse.Namespace) -> int:
    from . import corpus, render

    if args.html == "-" and args.json:
        raise CommandError("--html - and --json both write to standard output; choose one")
    settings = settings_from(args)
    files = open_inputs((args.hyp_file, "HYP_FILE"), (args.ref_file, "REF_FILE"))
    progress = corpus.progress_printer(files)
    try:
        result = corpus.score_files(files[0], files[1], settings, per_segment=bool(args.html),
                                    worst=5 if args.html else 0, progress=progress)
    finally:
        corpus.finish_progress(progress)
        for file in files:
            file.close()
    report = chrf_core.build_report(result.counts)
    if args.html:
        write_output(args.html, render.score_page(report, args.hyp_file, args.ref_file, result.facts,
                                                  result.histogram, result.worst))
        if args.html == "-":
            return 0
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render.table(report, result.facts))
    return 0


def command_segments(args: argparse.Namespace) -> int:
    from . import corpus, render

    settings = settings_from(args)
    if args.worst is not None and args.worst < 1:
        raise CommandError("--worst: must be a positive number of segments")
    files = open_inputs((args.hyp_file, "HYP_FILE"), (args.ref_file, "REF_FILE"))
    width = 3 * (settings.char_order + settings.word_order)
    try:
        if args.worst:
            progress = corpus.progress_printer(files)
            try:
                result = corpus.score_files(files[0], files[1], settings, per_segment=True, worst=args.worst,
                                            progress=progress)
            finally:
                corpus.finish_progress(progress)
            report = chrf_core.build_report(result.counts)
            colour = sys.stdout.isatty()
            print(f"The {plural(len(result.worst), 'lowest-scoring segment')} of "
                  f"{plural(report['segment_count'], 'segment')} ({render.metric_name(report)}; unmatched words "
                  f"{'in red' if colour else 'in [brackets]'})")
            print(f"signature: {render.signature(report)}")
            for segment in result.worst:
                marked_h, marked_r = render.marked_tokens(segment.hypothesis, segment.reference, settings.lowercase)
                print(f"\nline {segment.line}\tscore {chrf_core.score_text(segment.score)}")
                print(f"  hypothesis: {render.marked_text(marked_h, colour)}")
                print(f"  reference:  {render.marked_text(marked_r, colour)}")
            return 0
        out = sys.stdout
        line = 1
        for hypotheses, references in aligned_chunks(files):
            rows = chrf_core.segment_rows(hypotheses, references, settings)
            for index in range(len(hypotheses)):
                orders = corpus.segment_orders(rows, index, width)
                if args.json:
                    report = chrf_core.build_report(chrf_core.Counts(settings, 1, tuple(orders)))
                    out.write(json.dumps({"line": line, **report}) + "\n")
                else:
                    out.write(f"{line}\t{chrf_core.score_text(chrf_core.exact_score(settings, orders))}\n")
                line += 1
    finally:
        for file in files:
            file.close()
    return 0


def command_compare(args: argparse.Namespace) -> int:
    import numpy as np

    from . import compare, render

    settings = settings_from(args)
    if args.html == "-" and args.json:
        raise CommandError("--html - and --json both write to standard output; choose one")
    if args.bootstrap < 1 or args.randomization < 0:
        raise CommandError("--bootstrap must be at least 1 and --randomization at least 0")
    names = [args.baseline, *args.systems]
    if len(set(names)) != len(names):
        raise CommandError("BASELINE and SYSTEM files must be different files")
    files = open_inputs(*[(name, "SYSTEM" if index else "BASELINE") for index, name in enumerate(names)],
                        (args.ref_file, "REF"))
    width = 3 * (settings.char_order + settings.word_order)
    parts: list[list[Any]] = [[] for _ in names]
    try:
        for chunk in aligned_chunks(files):
            references = chunk[-1]
            for index, hypotheses in enumerate(chunk[:-1]):
                rows = chrf_core.segment_rows(hypotheses, references, settings)
                parts[index].append(np.frombuffer(rows, dtype=np.int64).reshape(-1, width).astype(np.int32))
    finally:
        for file in files:
            file.close()
    reports, systems = compare.compare(settings, names, parts, args.bootstrap, args.randomization, args.seed)
    sig = render.signature(reports[0])
    result = {"baseline": names[0], "signature": sig, "systems": systems}
    method = (f"paired approximate randomization, {args.randomization} trials" if args.randomization
              else f"paired bootstrap resampling, {args.bootstrap} resamples") + f", seed {args.seed}"
    if args.html:
        write_output(args.html, render.compare_page(result, args.ref_file, reports, method))
        if args.html == "-":
            return 0
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    name_width = max(12, *(len(name) for name in names))
    print(f"{render.metric_name(reports[0])} of {plural(len(names) - 1, 'system')} against the baseline "
          f"({plural(reports[0]['segment_count'], 'segment')}; {method})")
    print(f"signature: {sig}\n")
    print(f"  {'system':<{name_width}}  {'score':>10}  {'95% CI':^19}  {'Δ':>9}  {'p-value':>8}")
    for system in systems:
        low, high = system["ci"]
        delta = "" if system["p_value"] is None else f"{system['delta']:+9.4f}"
        p_text = "" if system["p_value"] is None else f"{system['p_value']:8.4f}"
        mark = " *" if system["p_value"] is not None and system["p_value"] < 0.05 else ""
        print(f"  {system['name']:<{name_width}}  {system['score']:>10.6f}  [{low:7.3f}, {high:7.3f}]  {delta:>9}"
              f"  {p_text:>8}{mark}")
    print("\n  * p < 0.05: unlikely to be a chance difference from the baseline")
    return 0


def read_bounded(name: str, limit: int) -> bytes:
    """A file or standard input, refused if larger than ``limit`` bytes (read no further than that)."""
    try:
        if name == "-":
            if sys.stdin is None:
                raise CommandError("-: standard input is closed")
            data = sys.stdin.buffer.read(limit + 1)
        else:
            with open(name, "rb") as file:
                data = file.read(limit + 1)
    except OSError as error:
        raise CommandError(f"{name}: cannot read ({error.strerror or error})") from None
    if len(data) > limit:
        raise CommandError(f"{name}: larger than {limit} bytes, the API's payload limit")
    return data


def command_request(args: argparse.Namespace) -> int:
    from .local_lambda import API_GATEWAY_PAYLOAD_LIMIT

    raw = read_bounded(args.file, API_GATEWAY_PAYLOAD_LIMIT)
    if args.url or args.function:
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
        output = chrf_core.score(chrf_core.decode_request(raw, source="request"))
    except chrf_core.InvalidInputError as error:
        print(error.envelope())
        return EXIT_INVALID
    print(json.dumps(output))
    return 0


def command_invoke(args: argparse.Namespace) -> int:
    import contextlib

    from . import local_lambda

    try:
        template = local_lambda.find_template(args.template)
        event = json.loads(Path(args.event_file).read_text(encoding="utf-8"))
    except local_lambda.TemplateError as error:
        raise CommandError(str(error)) from None
    except OSError as error:
        raise CommandError(f"{args.event_file}: cannot read ({error.strerror or error})") from None
    except ValueError as error:
        raise CommandError(f"{args.event_file}: not a JSON event ({error})") from None
    # Like `sam local invoke`: the function's logs and metrics go to stderr, the response alone to stdout.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            handler = local_lambda.load_handler(args.function, template)
        except local_lambda.TemplateError as error:
            raise CommandError(str(error)) from None
        result = local_lambda.invoke(handler, event)
    print(json.dumps(result, ensure_ascii=False))
    return 0


def command_serve(args: argparse.Namespace) -> int:
    from . import local_lambda, server

    try:
        template = local_lambda.find_template(args.template)
        return server.serve(args.host, args.port, template, args.workers, args.iam, args.region)
    except (local_lambda.TemplateError, server.ServeError) as error:
        raise CommandError(str(error)) from None


def command_pipeline_run(args: argparse.Namespace) -> int:
    from . import remote

    settings = settings_from(args)
    files = open_inputs((args.hyp_file, "HYP_FILE"), (args.ref_file, "REF_FILE"))
    try:
        return remote.run_pipeline(args.stack, files, settings, as_json=args.json)
    except remote.RemoteError as error:
        raise CommandError(str(error), EXIT_REMOTE) from None
    finally:
        for file in files:
            file.close()


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0..65535, got {value}")
    return value


def add_settings(parser: argparse.ArgumentParser) -> None:
    defaults = chrf_core.DEFAULTS
    parser.add_argument("--char-order", type=int, default=defaults.char_order,
                        help=f"character n-gram orders 1..N (default {defaults.char_order})")
    parser.add_argument("--word-order", type=int, default=defaults.word_order,
                        help=f"word n-gram orders 1..N (default {defaults.word_order}; 2 gives chrF++)")
    parser.add_argument("--beta", type=int, default=defaults.beta, help=f"recall weight (default {defaults.beta})")
    parser.add_argument("--lowercase", action="store_true", help="lowercase both sides first")
    parser.add_argument("--include-whitespace", action="store_true", help="keep whitespace in character n-grams")
    parser.add_argument("--averaging", choices=chrf_core.AVERAGINGS, default=defaults.averaging,
                        help="average P and R over orders (sacreBLEU) or F per order (chrF++.py)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="chrf-components", description="Exact chrF / chrF++ components per n-gram order: explain "
                    "scores, score segments, compare systems, and run or call the service.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    score = commands.add_parser("score", help="score line-aligned files and explain the score by n-gram order")
    score.add_argument("hyp_file", metavar="HYP_FILE", help="hypotheses, one segment per line ('-' for stdin)")
    score.add_argument("ref_file", metavar="REF_FILE", help="references, one segment per line ('-' for stdin)")
    add_settings(score)
    score.add_argument("--json", action="store_true", help="print the report (exact fractions) as JSON")
    score.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report ('-': stdout)")
    score.set_defaults(run=command_score)

    segments = commands.add_parser("segments", help="score every segment on its own (sacreBLEU --sentence-level)")
    segments.add_argument("hyp_file", metavar="HYP_FILE")
    segments.add_argument("ref_file", metavar="REF_FILE")
    add_settings(segments)
    segments.add_argument("--json", action="store_true", help="JSON Lines: each segment's report plus its line")
    segments.add_argument("--worst", type=int, metavar="N", help="only the N lowest-scoring segments, explained")
    segments.set_defaults(run=command_segments)

    compare = commands.add_parser("compare", help="compare systems with a baseline: paired significance tests")
    compare.add_argument("ref_file", metavar="REF", help="references (first, as in sacreBLEU)")
    compare.add_argument("baseline", metavar="BASELINE", help="the baseline system's output")
    compare.add_argument("systems", metavar="SYSTEM", nargs="+", help="the systems to compare with it")
    add_settings(compare)
    compare.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                         help="paired bootstrap resamples, for intervals and p-values (default 1000)")
    compare.add_argument("--randomization", type=int, default=0, metavar="N",
                         help="p-values from N trials of paired approximate randomization instead")
    compare.add_argument("--seed", type=int, default=12345, help="random seed (default 12345, as sacreBLEU)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report ('-': stdout)")
    compare.set_defaults(run=command_compare)

    request = commands.add_parser("request", help="run one contract request (JSON), locally or on a deployed stack")
    request.add_argument("file", metavar="FILE", help="a JSON request ('-' for stdin)")
    target = request.add_mutually_exclusive_group()
    target.add_argument("--url", help="the deployed API's ExecuteUrl: POST signed with SigV4 (execute-api)")
    target.add_argument("--function", help="the deployed function's name or ARN: invoke it directly")
    request.set_defaults(run=command_request)

    invoke = commands.add_parser("invoke", help="run a Lambda handler on an event file, like sam local invoke")
    invoke.add_argument("event_file", metavar="EVENT_FILE")
    invoke.add_argument("--function", default="ChrfComponentsFunction", help="logical id in the template")
    invoke.add_argument("--template", metavar="PATH", help="the SAM template (default: ./template.yaml)")
    invoke.set_defaults(run=command_invoke)

    serve = commands.add_parser("serve", help="serve the API on 127.0.0.1, like sam local start-api (no Docker)")
    serve.add_argument("--port", type=port, default=3000)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--template", metavar="PATH", help="the SAM template (default: ./template.yaml)")
    serve.add_argument("--workers", type=int, default=4, help="function instances running at once (default 4)")
    serve.add_argument("--iam", action="store_true",
                       help="require SigV4-signed requests, checked against your AWS credentials, like the deployed "
                       "API")
    serve.add_argument("--region", help="with --iam: the region signatures must be scoped to (default: AWS_REGION "
                       "or your AWS configuration)")
    serve.set_defaults(run=command_serve)

    pipeline = commands.add_parser("pipeline", help="the deployed corpus pipeline")
    pipeline_commands = pipeline.add_subparsers(dest="pipeline_command", required=True, parser_class=Parser)
    run = pipeline_commands.add_parser("run", help="score two files with the deployed pipeline and print the report")
    run.add_argument("hyp_file", metavar="HYP_FILE")
    run.add_argument("ref_file", metavar="REF_FILE")
    run.add_argument("--stack", required=True, help="the deployed stack's name")
    add_settings(run)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(run=command_pipeline_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    prog = f"chrf-components {args.command}"
    try:
        code: int = args.run(args)
        return code
    except CommandError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return error.code
    except InputError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (| head): nothing more to say
        return 0


if __name__ == "__main__":
    sys.exit(main())
