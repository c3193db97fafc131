"""Line-aligned text files read in step, chunk by chunk: memory bounded by a chunk and one line, not by the corpus.

Lines are read as sacreBLEU's command line reads them: UTF-8, split on ``\\n`` only (texts holding U+2028 or
U+0085 stay on their line), trailing whitespace stripped (``str.rstrip()``, so also a ``\\r``), a byte order mark
kept as the text's first character, ``.gz`` files decompressed. A line is at most MAX_LINE_BYTES (the contract's
whole request): a longer one, or an input that never ends a line (``/dev/zero``), is an error naming the file
and line, so memory stays bounded whatever the input. A chunk is about CHUNK_BYTES of the first file and the
same number of lines of the others. When one input ends before another, that is reported at once; the rest of
a longer regular file is counted (not decoded) so the error can give every count and point out a trailing
blank line, the usual cause.
"""

from __future__ import annotations

import gzip
import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

import chrf_core

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = chrf_core.MAX_TEXT_BYTES


class InputError(Exception):
    """A problem with an input file: reported in one line, exit code 2."""


class LineFile:
    """One input file ('-' is standard input), read a chunk of lines at a time."""

    def __init__(self, name: str, label: str) -> None:
        self.name, self.label = name, label
        self.lines = 0  # lines read so far
        self.offset = 0  # bytes read so far (for progress)
        self.position = 0  # bytes of the lines handed out so far (for error messages)
        self.size: int | None = None  # bytes in all, for a regular file
        self.finite = False  # a file, which ends (a pipe or device may not)
        self.trailing_blank = 0  # blank lines at the end of what was read so far
        self.pending = b""  # the start of a line whose end has not been read yet
        self.ended = False
        try:
            if name == "-":
                if sys.stdin is None:
                    raise InputError(f"{label} -: standard input is closed")
                self.file: BinaryIO = sys.stdin.buffer
            elif name.endswith(".gz"):
                self.file = gzip.open(name, "rb")  # type: ignore[assignment]  # noqa: SIM115 (closed by close())
                self.finite = os.path.isfile(name)
            else:
                self.file = open(name, "rb")  # noqa: SIM115 (closed by close())
                if os.path.isfile(name):
                    self.size, self.finite = os.path.getsize(name), True
        except OSError as error:
            raise InputError(f"{label} {name}: cannot read ({error.strerror or error})") from None

    def _more(self) -> bytes:
        try:
            data = self.file.read(CHUNK_BYTES)
        except (OSError, EOFError, gzip.BadGzipFile) as error:
            raise InputError(f"{self.label} {self.name}: cannot read ({getattr(error, 'strerror', None) or error})"
                             ) from None
        self.offset += len(data)
        return data

    def _raw_lines(self, wanted: int | None) -> list[bytes]:
        """Up to ``wanted`` complete lines (or those of about CHUNK_BYTES), without their ``\\n``."""
        lines: list[bytes] = []
        while not self.ended and (wanted is None or len(lines) < wanted):
            buffer = self.pending
            if wanted is None:
                end = buffer.rfind(b"\n")
                if end >= 0:
                    lines += buffer[:end].split(b"\n")
                    self.pending = buffer[end + 1:]
                    break
            else:
                parts = buffer.split(b"\n", wanted - len(lines))
                self.pending = parts.pop()
                lines += parts
                if len(lines) == wanted:
                    break
            if len(self.pending) > MAX_LINE_BYTES:
                raise InputError(f"{self.label} {self.name}: line {self.lines + len(lines) + 1} is longer than "
                                 f"{MAX_LINE_BYTES} bytes (the contract's whole request)")
            data = self._more()
            if not data:
                self.ended = True
                if self.pending:
                    lines.append(self.pending)
                    self.pending = b""
            else:
                self.pending += data
        for number, line in enumerate(lines, start=self.lines + 1):
            if len(line) > MAX_LINE_BYTES:
                raise InputError(f"{self.label} {self.name}: line {number} is longer than {MAX_LINE_BYTES} bytes "
                                 "(the contract's whole request)")
        return lines

    def read(self, lines: int | None = None) -> list[str]:
        """The next ``lines`` lines (or about CHUNK_BYTES' worth), decoded; [] at the end."""
        raw = self._raw_lines(lines)
        if not raw:
            return []
        data = b"\n".join(raw)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            number = self.lines + 1 + data.count(b"\n", 0, error.start)
            raise InputError(
                f"{self.label} {self.name}: not UTF-8 (line {number}, byte {self.position + error.start})"
            ) from None
        self.position += len(data) + 1
        out = [line.rstrip() for line in text.split("\n")]
        self.lines += len(out)
        blank = 0
        for line in reversed(out):
            if line:
                break
            blank += 1
        self.trailing_blank = self.trailing_blank + blank if blank == len(out) else blank
        return out

    def count_rest(self) -> bool:
        """Count the remaining lines of a regular file without decoding them (for the line-count error);
        False, reading nothing, for a pipe or device, which may never end."""
        if not self.finite:
            return False
        while lines := self._raw_lines(None):
            self.lines += len(lines)
            for line in lines:
                self.trailing_blank = self.trailing_blank + 1 if not line.strip() else 0
        return True

    def close(self) -> None:
        if self.name != "-":
            self.file.close()


def aligned_chunks(files: list[LineFile]) -> Iterator[list[list[str]]]:
    """Chunks of aligned lines: each chunk is one list of lines per file, all of the same length."""
    if sum(file.name == "-" for file in files) > 1:
        raise InputError("only one input can be standard input (-)")
    while True:
        first = files[0].read()
        chunk = [first] + [file.read(len(first)) for file in files[1:]] if first else [[] for _ in files]
        if any(len(lines) != len(first) for lines in chunk) or not first:
            if not first and all(not file.read(1) for file in files[1:]):
                break
            raise InputError(_mismatch(files))
        yield chunk
    if files[0].lines == 0:
        raise InputError(f"{' and '.join(file.label for file in files)} are empty")


def check_line_counts(files: list[LineFile]) -> None:
    """When every input is a regular file, their line counts compared before anything is read for output (so a
    command that prints as it reads prints nothing before the error); pipes are compared as they are read."""
    if not all(file.finite and file.size is not None and file.name != "-" for file in files):
        return
    counted = [LineFile(file.name, file.label) for file in files]
    try:
        for file in counted:
            file.count_rest()
        if len({file.lines for file in counted}) > 1:
            raise InputError(_mismatch(counted))
    finally:
        for file in counted:
            file.close()


def _mismatch(files: list[LineFile]) -> str:
    shortest = min(file.lines for file in files)
    counted = {id(file): file.count_rest() for file in files}
    labels = [file.label for file in files]
    named = {id(file): f"{file.label} {file.name}" if labels.count(file.label) > 1 else file.label for file in files}
    counts = ", ".join(f"{named[id(file)]} has {plural(file.lines, 'line')}" if counted[id(file)]
                       or file.lines == shortest else f"{named[id(file)]} has at least {plural(file.lines, 'line')}"
                       for file in files)
    hints = [f"the last {plural(file.trailing_blank, 'line')} of {named[id(file)]} "
             f"{'is' if file.trailing_blank == 1 else 'are'} blank"
             for file in files if counted[id(file)] and file.lines > shortest
             and file.lines - shortest <= file.trailing_blank]
    hint = f" ({'; '.join(hints)}: remove the trailing blank line?)" if hints else ""
    return f"{counts}; files must be line-aligned{hint}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def progress_size(files: list[LineFile]) -> int | None:
    """Total bytes to read, when every file is a regular file (for progress)."""
    sizes = [file.size for file in files]
    return None if any(size is None for size in sizes) else sum(size for size in sizes if size is not None)
