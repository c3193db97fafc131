"""The `chrf-components` command line: explain scores, score segments, compare systems, run or call the service.

    chrf-components score HYP REF [REF ...] [settings] [--json] [--html FILE] [-b [-w N]]
    chrf-components segments HYP REF [REF ...] [settings] [--json] [--worst N]
    chrf-components compare REF BASELINE SYSTEM [SYSTEM ...] [settings] [--bootstrap N] [--randomization N]
                            [--seed S] [--json] [--html FILE]
        (each also in sacreBLEU's order: REF [REF ...] -i HYP, REF [REF ...] -i BASELINE SYSTEM ...; -m chrf,
        --chrf-word-order and sacreBLEU's other chrF flags are taken as they are)
    chrf-components request FILE|- [--url EXECUTE_URL | --function NAME_OR_ARN]
    chrf-components invoke EVENT_FILE [--function LOGICAL_ID] [--template PATH]
    chrf-components invoke [LOGICAL_ID] -e EVENT_FILE [--template PATH]          (as sam local invoke)
    chrf-components serve [--port 3000] [--template PATH]
    chrf-components pipeline run HYP REF (--stack STACK_NAME | --local) [settings] [--json]

Exit codes: 0 done; 1 invalid input (a 400 or InvalidInputError) or a failed pipeline execution; 2 a problem
with the command itself (usage, files, settings, output that cannot be written), always one line on stderr; 3 the
deployed service or AWS could not be reached or failed; 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Sequence
from typing import Any

import chrf_core
from chrf_core.contract import AVERAGINGS, NORMALIZATIONS, TOOL, VERSION

from . import research, service_commands
from .common import EXIT_USAGE, CommandError, Parser, Terminated
from .lines import InputError


def port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0..65535, got {value}")
    return value


def add_settings(parser: argparse.ArgumentParser, library: bool = True) -> None:
    """The scoring flags, each also under sacreBLEU's name (--chrf-word-order, -cw, ...); ``library``: the commands
    scored here (not by the service) also take --normalize and sacreBLEU's -m chrf."""
    defaults = chrf_core.CHRF()
    parser.add_argument("--char-order", "--chrf-char-order", "-cc", dest="char_order", type=int,
                        default=defaults.char_order,
                        help=f"character n-gram orders 1..N (default {defaults.char_order})")
    parser.add_argument("--word-order", "--chrf-word-order", "-cw", dest="word_order", type=int,
                        default=defaults.word_order,
                        help=f"word n-gram orders 1..N (default {defaults.word_order}; 2 gives chrF++)")
    parser.add_argument("--beta", "--chrf-beta", dest="beta", type=int, default=defaults.beta,
                        help=f"recall weight (default {defaults.beta})")
    parser.add_argument("--lowercase", "--chrf-lowercase", dest="lowercase", action="store_true",
                        help="lowercase both sides first")
    parser.add_argument("--include-whitespace", "--chrf-whitespace", dest="include_whitespace", action="store_true",
                        help="keep whitespace in character n-grams")
    parser.add_argument("--averaging", choices=AVERAGINGS, default=defaults.averaging,
                        help="average P and R over orders (sacreBLEU) or F per order (chrF++.py)")
    parser.add_argument("--chrf-eps-smoothing", dest="averaging", action="store_const", const=AVERAGINGS[1],
                        help=f"sacreBLEU's name for --averaging {AVERAGINGS[1]} (chrF++.py's arithmetic)")
    if library:
        parser.add_argument("--normalize", type=str.upper, choices=NORMALIZATIONS,
                            help="Unicode-normalize both sides first (recorded in the signature; not the service's)")
        parser.add_argument("-m", "--metrics", nargs="+", type=str.lower, metavar="chrf",
                            help="sacreBLEU's metric choice: chrf is the one metric this tool computes")


def add_files(parser: argparse.ArgumentParser, bare: str, several_inputs: bool = False) -> None:
    """Input files given two ways: the bare positional form ``bare`` names (hypotheses first), or sacreBLEU's,
    reference files positional and the hypotheses (or systems) with -i/--input."""
    parser.add_argument("files", metavar="FILE", nargs="+", help=f"{bare}; with -i, the reference files alone")
    parser.add_argument("-i", "--input", metavar="SYS" if several_inputs else "HYP_FILE", nargs="+", action=Once,
                        help="the hypotheses (sacreBLEU's -i), given once: then every positional file is a reference "
                             "file" + (" (the first system is the baseline)" if several_inputs else ""))


class Once(argparse.Action):
    """An option given at most once: a second -i would silently replace the first (argparse's way)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        previous = getattr(namespace, self.dest, None)
        if previous is not None:
            parser.error(f"argument {option_string}: given twice ({' '.join(previous)}, then {' '.join(values)}); "
                         "give it once, with every file it names")
        setattr(namespace, self.dest, values)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="chrf-components", description="Exact chrF / chrF++ components per n-gram order: explain "
                    "scores, score segments, compare systems, and run or call the service.")
    parser.add_argument("--version", "-V", action="version", version=f"{TOOL} {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    score = commands.add_parser(
        "score", help="score line-aligned files and explain the score by n-gram order",
        usage="%(prog)s HYP_FILE REF_FILE [REF_FILE ...] [settings] [--json] [--html FILE] [-b [-w N]]\n"
              "       %(prog)s REF_FILE [REF_FILE ...] -i HYP_FILE [settings] ...   (sacreBLEU's order)",
        description="Files are UTF-8, one segment per line ('-' for stdin); several reference files give several "
                    "references per segment, each segment scored against its best (as sacreBLEU).")
    add_files(score, "HYP_FILE then REF_FILE(s)")
    add_settings(score)
    score.add_argument("--json", action="store_true", help="print the report (exact fractions) as JSON")
    score.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report ('-': stdout)")
    score.add_argument("-b", "--score-only", action="store_true", help="print only the score (as sacreBLEU's -b)")
    score.add_argument("-w", "--width", type=int, metavar="N",
                       help="decimals of the score with -b (default 1, as sacreBLEU)")
    score.set_defaults(run=research.command_score)

    segments = commands.add_parser(
        "segments", help="score every segment on its own (sacreBLEU --sentence-level)",
        usage="%(prog)s HYP_FILE REF_FILE [REF_FILE ...] [settings] [--json] [--worst N]\n"
              "       %(prog)s REF_FILE [REF_FILE ...] -i HYP_FILE [settings] ...   (sacreBLEU's order)")
    add_files(segments, "HYP_FILE then REF_FILE(s)")
    add_settings(segments)
    segments.add_argument("--json", action="store_true", help="JSON Lines: each segment's report plus its line")
    segments.add_argument("--worst", type=int, metavar="N", help="only the N lowest-scoring segments, explained")
    segments.set_defaults(run=research.command_segments)

    compare = commands.add_parser(
        "compare", help="compare systems with a baseline: paired significance tests",
        usage="%(prog)s REF_FILE BASELINE SYSTEM [SYSTEM ...] [settings] [--bootstrap N | --randomization N]\n"
              "       %(prog)s REF_FILE [REF_FILE ...] -i BASELINE SYSTEM [SYSTEM ...] [settings] ...   "
              "(sacreBLEU's order)")
    add_files(compare, "REF_FILE then BASELINE and SYSTEM(s)", several_inputs=True)
    add_settings(compare)
    compare.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                         help="paired bootstrap resamples, for intervals and p-values (default 1000)")
    compare.add_argument("--randomization", type=int, default=0, metavar="N",
                         help="p-values from N trials of paired approximate randomization instead")
    compare.add_argument("--seed", type=int, default=12345, help="random seed (default 12345, as sacreBLEU)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON")
    compare.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report ('-': stdout)")
    compare.set_defaults(run=research.command_compare)

    request = commands.add_parser("request", help="run one contract request (JSON), locally or on a deployed stack")
    request.add_argument("file", metavar="FILE", help="a JSON request ('-' for stdin)")
    target = request.add_mutually_exclusive_group()
    target.add_argument("--url", help="the deployed API's ExecuteUrl: POST signed with SigV4 (execute-api)")
    target.add_argument("--function", help="the deployed function's name or ARN: invoke it directly")
    request.set_defaults(run=service_commands.command_request)

    invoke = commands.add_parser("invoke", help="run a Lambda handler on an event file, like sam local invoke",
                                 usage="%(prog)s EVENT_FILE [--function LOGICAL_ID] [--template PATH]\n"
                                       "       %(prog)s [LOGICAL_ID] -e EVENT_FILE [--template PATH]")
    invoke.add_argument("target", metavar="EVENT_FILE | LOGICAL_ID", nargs="?",
                        help="the event file; with -e, the function's logical id (as sam local invoke)")
    invoke.add_argument("-e", "--event", metavar="EVENT_FILE", help="the event file ('-' for stdin), as SAM's -e")
    invoke.add_argument("--function", help="logical id in the template (default ChrfComponentsFunction)")
    invoke.add_argument("--template", "-t", metavar="PATH", help=TEMPLATE_HELP)
    invoke.set_defaults(run=service_commands.command_invoke)

    serve = commands.add_parser("serve", help="serve the API on 127.0.0.1, like sam local start-api (no Docker)")
    serve.add_argument("--port", type=port, default=3000)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--template", metavar="PATH", help=TEMPLATE_HELP)
    serve.add_argument("--workers", type=int, default=4, help="function instances running at once (default 4)")
    serve.add_argument("--iam", action="store_true",
                       help="require SigV4-signed requests, checked against your AWS credentials, like the deployed "
                       "API")
    serve.add_argument("--region", help="with --iam: the region signatures must be scoped to (default: AWS_REGION "
                       "or your AWS configuration)")
    serve.add_argument("--wait", action="store_true",
                       help="serve nothing: wait until the serve on --host:--port answers, then exit 0 (exit 3 after "
                       "--timeout seconds), like localstack wait: for scripts that start serve in the background")
    serve.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="with --wait (default 60)")
    serve.set_defaults(run=service_commands.command_serve)

    pipeline = commands.add_parser("pipeline", help="the corpus pipeline, deployed or on this machine")
    pipeline_commands = pipeline.add_subparsers(dest="pipeline_command", required=True, parser_class=Parser)
    run = pipeline_commands.add_parser("run", help="score two files with the corpus pipeline and print the report",
                                       usage="%(prog)s HYP_FILE REF_FILE (--stack STACK_NAME | --local) [settings] "
                                             "[--json]\n       %(prog)s REF_FILE -i HYP_FILE (--stack STACK_NAME | "
                                             "--local) ...   (sacreBLEU's order)")
    add_files(run, "HYP_FILE then REF_FILE (one segment per line; one reference file)")
    where = run.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", help="the deployed stack's name")
    where.add_argument("--local", action="store_true",
                       help="run the template's state machine on this machine: its functions as Lambda runs them, "
                            "S3 on a local moto server, nothing deployed (see docs/deploy-and-pipelines.md)")
    run.add_argument("--template", "-t", metavar="PATH", help=f"with --local: {TEMPLATE_HELP}")
    run.add_argument("--log-file", metavar="FILE", help="with --local: write the functions' logs to FILE "
                                                         "(as sam local --log-file; default: discarded)")
    add_settings(run, library=False)
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(run=service_commands.command_pipeline_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stderr is None:  # started with stderr closed: messages and progress go nowhere, the results still out
        descriptor = os.open(os.devnull, os.O_WRONLY)  # on descriptor 2 itself, which a file opened later would take
        if descriptor != 2:
            os.dup2(descriptor, 2)
            os.close(descriptor)
        os.set_inheritable(2, True)  # os.open's descriptors are close-on-exec: the functions' workers need it
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115 (for the life of the process)
    if sys.stdout is None:  # started with stdout closed: nothing could be written, so nothing is run
        print("chrf-components: error: standard output is closed (the results would be lost)", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    prog = " ".join(["chrf-components", args.command, *([args.pipeline_command] if args.command == "pipeline" else [])])
    try:
        code: int = args.run(args)
        sys.stdout.flush()  # a full disk shows here at the latest, not at interpreter exit
        return code
    except CommandError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return error.code
    except InputError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:  # SIGTERM where a run holds children: one line, exit 143 as a shell gives for SIGTERM
        with contextlib.suppress(Exception):
            print(f"{prog}: terminated", file=sys.stderr)
        return 143
    except KeyboardInterrupt:  # Ctrl-C: one line, exit 130 as a shell gives for SIGINT
        with contextlib.suppress(Exception):
            print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _discard_standard_output()
        sys.stderr.close()  # the reader went away (| head): nothing more to say
        return 0
    except OSError as error:
        if error.errno not in OUTPUT_ERRORS:
            raise
        _discard_standard_output()
        print(f"{prog}: error: cannot write the output ({error.strerror})", file=sys.stderr)
        return EXIT_USAGE


TEMPLATE_HELP = "the SAM template (default: ./template.yaml, else the service's own, which a wheel carries)"

# What writing to standard output or a file can fail with: a full disk or quota, a file too large, a device error.
OUTPUT_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _discard_standard_output() -> None:
    """Whatever is still buffered for standard output goes nowhere, so the interpreter's last flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
