"""What every command shares: exit codes, the one-line error, settings from flags, inputs and outputs."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, NoReturn

import chrf_core
from chrf_core.contract import SETTING_KEYS

from .lines import LineFile

EXIT_INVALID, EXIT_USAGE, EXIT_REMOTE = 1, 2, 3
FLAGS = {key: "--" + key.replace("_", "-") for key in SETTING_KEYS}


class CommandError(Exception):
    """A problem with the command's input: one line on stderr and exit code 2 (or ``code``)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


class Terminated(KeyboardInterrupt):
    """SIGTERM, ending a run as Ctrl-C does (its children stopped), with the shell's exit code 143."""


@contextlib.contextmanager
def signals_end_the_run() -> Iterator[None]:
    """SIGINT and SIGTERM interrupt the main thread while a run holds children (the functions' environments),
    so they are stopped, not orphaned: also where SIGINT came ignored (a process started in the background by a
    shell without job control inherits it so, and Python leaves it so), as serve does. Once one has come, both are
    ignored until the run is wound up, so a second cannot cut its clean-up short."""

    def stop(number: int, _frame: object) -> None:
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, signal.SIG_IGN)
        raise Terminated() if number == signal.SIGTERM else KeyboardInterrupt()

    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


class Parser(argparse.ArgumentParser):
    """argparse with usage errors in one line (exit code 2), like every other error of the command line."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(EXIT_USAGE)


def settings_from(args: argparse.Namespace) -> chrf_core.CHRF:
    """The scoring settings from the flags; a broken rule names the flags the user typed where it names settings."""
    try:
        values = vars(args)
        return chrf_core.CHRF(**{key: values[key] for key in (*SETTING_KEYS, "normalize") if key in values})
    except chrf_core.InvalidInputError as error:
        detail = error.detail
        for key, flag in FLAGS.items():
            detail = re.sub(rf"\b{key}\b", flag, detail)
        flag = FLAGS.get(error.field or "", error.field or "settings")
        raise CommandError(detail if flag in detail else f"{flag}: {detail}") from None


class Inputs(NamedTuple):
    """The files of a research command by role: the hypotheses (one file, or the systems of ``compare``, the
    baseline first) and the reference files."""

    hypotheses: list[str]
    references: list[str]


def input_roles(args: argparse.Namespace, systems: bool = False) -> Inputs:
    """Which file is read as what, from either spelling: the bare positional form (``HYP REF...``; ``compare``:
    ``REF BASELINE SYSTEM...``) or sacreBLEU's (``REF... -i HYP``, ``REF... -i BASELINE SYSTEM...``)."""
    metrics = getattr(args, "metrics", None)  # -m: the research commands' (sacreBLEU's) flag
    if metrics is not None and metrics != ["chrf"]:
        raise CommandError(f"-m {' '.join(metrics)}: this tool computes chrF only (-m chrf)")
    if args.input is not None:
        hypotheses, references = args.input, args.files
        given = {same_file_key(name) for name in hypotheses}
        for name in references:
            if same_file_key(name) in given:
                raise CommandError(f"{name} is given with -i and as a positional file, which with -i is a reference "
                                   f"file: write HYP REF, or REF -i HYP")
    elif systems:
        hypotheses, references = args.files[1:], args.files[:1]
    else:
        hypotheses, references = args.files[:1], args.files[1:]
    if systems and len(hypotheses) < 2:
        raise CommandError("compare needs a baseline and at least one system: REF BASELINE SYSTEM [SYSTEM ...], or "
                           "REF [REF ...] -i BASELINE SYSTEM [SYSTEM ...]")
    if not systems and len(hypotheses) != 1:
        raise CommandError("give one hypothesis file: -i HYP_FILE (compare takes several systems)")
    if not references:
        raise CommandError("give at least one reference file: HYP_FILE REF_FILE [REF_FILE ...], or REF_FILE "
                           "[REF_FILE ...] -i HYP_FILE")
    return Inputs(hypotheses, references)


def refuse_over_inputs(flag: str, target: str, inputs: Iterable[str], what: str = "an input file") -> None:
    """A file the command line writes is never one it reads (an input, the template, a definition): the same file by
    device and inode, however it is named (another relative path, a symbolic or a hard link), is refused in one line
    before anything is written."""
    if target == "-":
        return
    key = same_file_key(target)
    for name in inputs:
        if name != "-" and same_file_key(name) == key:
            shown_name = "" if os.path.abspath(name) == os.path.abspath(target) else f" ({name})"
            raise CommandError(f"{flag} {target}: is {what}{shown_name}; writing there would overwrite it")


def write_output(target: str, text: str, inputs: Iterable[str] = ()) -> None:
    """``text`` to a file, or to standard output for '-'; never over one of ``inputs`` (:func:`refuse_over_inputs`,
    checked again here: the file may have been made a link to an input since the command started)."""
    if target == "-":
        sys.stdout.write(text)
        return
    refuse_over_inputs("--html", target, inputs)
    try:
        Path(target).write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"--html {target}: cannot write ({error.strerror or error})") from None
    print(f"wrote {target}", file=sys.stderr)


def same_file_key(name: str) -> object:
    """What names one file however it is reached (a hard or symbolic link, another relative path): its device and
    inode when it exists, else the name itself."""
    if name == "-":
        return name
    try:
        found = os.stat(name)
    except OSError:
        return os.path.abspath(name)
    return (found.st_dev, found.st_ino)


def open_inputs(*pairs: tuple[str, str]) -> list[LineFile]:
    """The input files (read in step by lines.aligned_chunks, which also refuses standard input twice)."""
    return [LineFile(name, label) for name, label in pairs]


AWS_EXTRA = {"aws_lambda_powertools": "aws-lambda-powertools", "yaml": "pyyaml", "boto3": "boto3",
             "waitress": "waitress", "moto": "moto"}  # module -> the package the aws extra installs


SERVICE_MODULES = ("aws_lambda_powertools", "yaml", "boto3", "waitress")  # what running the functions needs


def need_aws_extra(command: str, modules: tuple[str, ...] = SERVICE_MODULES) -> None:
    """The service's commands need the aws extra: say which, in one line, when it is not installed."""
    import importlib.util

    def installed(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except ImportError:  # there, but it cannot be imported: as good as missing
            return False

    missing = [AWS_EXTRA[module] for module in modules if not installed(module)]
    if missing:
        raise CommandError(f"{command} needs {', '.join(missing)}: pip install 'chrf-components[aws]'")
