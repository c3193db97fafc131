"""The `chrf-components` command line: explain a score, run contract requests, invoke or serve the function locally.

    chrf-components score HYP_FILE REF_FILE [settings] [--json] [--html FILE]
    chrf-components request FILE|-
    chrf-components invoke EVENT_FILE [--function LOGICAL_ID]
    chrf-components serve [--port 3000]

Errors are one line on stderr with a non-zero exit code (2: usage, files or settings; 1: invalid request).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import chrf_core
from chrf_core.corpus import corpus_counts

PROGRESS_FROM_SEGMENTS = 1000


class CommandError(Exception):
    """A problem with the command's input that ends it with one line on stderr and exit code 2."""


def read_lines(name: str, label: str) -> list[str]:
    """Lines of a UTF-8 text file ('-' is standard input): split on \\n only, a trailing \\r dropped.

    Other Unicode line separators (U+2028, U+0085, ...) stay inside their line, so files stay line-aligned.
    """
    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as error:
        raise CommandError(f"{label} {name}: cannot read ({error.strerror or error})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CommandError(f"{label} {name}: not UTF-8 (byte {error.start})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def settings_from(args: argparse.Namespace) -> chrf_core.Settings:
    request = {
        "char_order": args.char_order,
        "word_order": args.word_order,
        "beta": args.beta,
        "lowercase": args.lowercase,
        "include_whitespace": args.include_whitespace,
        "averaging": args.averaging,
    }
    try:
        return chrf_core.parse_settings(request)
    except chrf_core.InvalidInputError as error:
        raise CommandError(error.message) from None


def corpus_report(hypotheses: list[str], references: list[str], settings: chrf_core.Settings) -> dict[str, Any]:
    """The corpus report through the pipeline's chunk-and-merge path; progress on stderr for long inputs."""
    show_progress = len(hypotheses) >= PROGRESS_FROM_SEGMENTS

    def progress(done: int, total: int) -> None:
        if show_progress:
            print(f"\rscored {done}/{total} segments", end="" if done < total else "\n", file=sys.stderr, flush=True)

    try:
        return chrf_core.build_report(corpus_counts(hypotheses, references, settings, progress))
    except chrf_core.InvalidInputError as error:
        raise CommandError(error.message) from None


def command_score(args: argparse.Namespace) -> int:
    if args.hyp_file == "-" and args.ref_file == "-":
        raise CommandError("only one of HYP_FILE and REF_FILE can be standard input (-)")
    settings = settings_from(args)
    hypotheses = read_lines(args.hyp_file, "HYP_FILE")
    references = read_lines(args.ref_file, "REF_FILE")
    if len(hypotheses) != len(references):
        raise CommandError(
            f"HYP_FILE has {len(hypotheses)} lines but REF_FILE has {len(references)}; files must be line-aligned"
        )
    if not hypotheses:
        raise CommandError("HYP_FILE and REF_FILE are empty")
    report = corpus_report(hypotheses, references, settings)
    if args.html:
        from .render import html_page

        try:
            Path(args.html).write_text(html_page(report, f"chrF components: {args.hyp_file}"), encoding="utf-8")
        except OSError as error:
            raise CommandError(f"--html {args.html}: cannot write ({error.strerror or error})") from None
        print(f"wrote {args.html}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        from .render import table

        print(table(report))
    return 0


def command_request(args: argparse.Namespace) -> int:
    if args.file == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            raw = Path(args.file).read_bytes()
        except OSError as error:
            raise CommandError(f"{args.file}: cannot read ({error.strerror or error})") from None
    try:
        request = chrf_core.loads_request(raw.decode("utf-8"), source="request")
        output = chrf_core.score(request)
    except UnicodeDecodeError as error:
        print(json.dumps({"error": chrf_core.InvalidInputError(None, f"request: not UTF-8 (byte {error.start})")
                          .to_dict()}))
        return 1
    except chrf_core.InvalidInputError as error:
        print(json.dumps({"error": error.to_dict()}, ensure_ascii=False))
        return 1
    print(json.dumps(output))
    return 0


def command_invoke(args: argparse.Namespace) -> int:
    import contextlib

    from . import local_lambda

    try:
        event = json.loads(Path(args.event_file).read_text(encoding="utf-8"))
    except OSError as error:
        raise CommandError(f"{args.event_file}: cannot read ({error.strerror or error})") from None
    except ValueError as error:
        raise CommandError(f"{args.event_file}: not a JSON event ({error})") from None
    # Like `sam local invoke`: the function's logs and metrics go to stderr, the response alone to stdout.
    with contextlib.redirect_stdout(sys.stderr):
        handler = local_lambda.load_handler(args.function)
        result = local_lambda.invoke(handler, event)
    print(json.dumps(result, ensure_ascii=False))
    return 0


def command_serve(args: argparse.Namespace) -> int:
    from .server import serve

    serve(args.host, args.port)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chrf-components",
        description="Exact chrF / chrF++ components per n-gram order: explain a score, or run the service locally.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score line-aligned files and explain the score by n-gram order")
    score.add_argument("hyp_file", metavar="HYP_FILE", help="hypotheses, one segment per line ('-' for stdin)")
    score.add_argument("ref_file", metavar="REF_FILE", help="references, one segment per line ('-' for stdin)")
    score.add_argument("--char-order", type=int, default=6, help="character n-gram orders 1..N (default 6)")
    score.add_argument("--word-order", type=int, default=0, help="word n-gram orders 1..N (default 0; 2 = chrF++)")
    score.add_argument("--beta", type=int, default=2, help="recall weight (default 2)")
    score.add_argument("--lowercase", action="store_true", help="lowercase both sides first")
    score.add_argument("--include-whitespace", action="store_true", help="keep whitespace in character n-grams")
    score.add_argument("--averaging", choices=["precision_recall", "per_order_f"], default="precision_recall")
    score.add_argument("--json", action="store_true", help="print the report object (exact fractions) as JSON")
    score.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with a chart")
    score.set_defaults(run=command_score)

    request = commands.add_parser("request", help="run one contract request (JSON) and print the contract output")
    request.add_argument("file", metavar="FILE", help="a JSON request ('-' for stdin)")
    request.set_defaults(run=command_request)

    invoke = commands.add_parser("invoke", help="run the Lambda handler on an event file, like sam local invoke")
    invoke.add_argument("event_file", metavar="EVENT_FILE")
    invoke.add_argument("--function", default="ChrfComponentsFunction", help="logical id in template.yaml")
    invoke.set_defaults(run=command_invoke)

    serve = commands.add_parser("serve", help="serve the API on 127.0.0.1, like sam local start-api (no Docker)")
    serve.add_argument("--port", type=int, default=3000)
    serve.add_argument("--host", default="127.0.0.1")
    serve.set_defaults(run=command_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except CommandError as error:
        print(f"chrf-components {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
