"""Line-aligned text files read in step, chunk by chunk: memory bounded by a chunk, not by the corpus.

Files are UTF-8 and split on ``\\n`` only (a trailing ``\\r`` is dropped, a byte order mark at the start is
skipped), so texts holding U+2028 or U+0085 stay on their line. A chunk is about CHUNK_BYTES of the first file
and the same number of lines of the others, decoded at once. When one file ends before the others, the rest of
the longer files is counted (not decoded) so the error can give every count, and a trailing blank line, the
usual cause, is pointed out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from itertools import islice
from typing import BinaryIO

CHUNK_BYTES = 1 << 20


class InputError(Exception):
    """A problem with an input file: reported in one line, exit code 2."""


class LineFile:
    """One input file ('-' is standard input), read a chunk of lines at a time."""

    def __init__(self, name: str, label: str) -> None:
        self.name, self.label = name, label
        self.lines = 0  # lines read so far
        self.offset = 0  # bytes read so far
        self.size: int | None = None
        self.trailing_blank = 0  # blank lines at the end of what was read so far
        try:
            if name == "-":
                self.file: BinaryIO = sys.stdin.buffer
            else:
                self.file = open(name, "rb")  # noqa: SIM115 (closed by close())
                if os.path.isfile(name):
                    self.size = os.path.getsize(name)
        except OSError as error:
            raise InputError(f"{label} {name}: cannot read ({error.strerror or error})") from None

    def read(self, lines: int | None = None) -> list[str]:
        """The next ``lines`` lines (or about CHUNK_BYTES' worth), decoded; [] at the end."""
        try:
            raw = list(islice(self.file, lines)) if lines is not None else self.file.readlines(CHUNK_BYTES)
        except OSError as error:
            raise InputError(f"{self.label} {self.name}: cannot read ({error.strerror or error})") from None
        if not raw:
            return []
        data = b"".join(raw)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            number = self.lines + 1 + data.count(b"\n", 0, error.start)
            raise InputError(
                f"{self.label} {self.name}: not UTF-8 (line {number}, byte {self.offset + error.start})"
            ) from None
        if self.lines == 0 and text.startswith("\ufeff"):
            text = text[1:]
        out = text.split("\n")
        if out[-1] == "":
            out.pop()  # the newline that ends the last line
        if "\r" in text:
            out = [line[:-1] if line.endswith("\r") else line for line in out]
        self.offset += len(data)
        self.lines += len(out)
        blank = 0
        for line in reversed(out):
            if line.strip():
                break
            blank += 1
        self.trailing_blank = self.trailing_blank + blank if blank == len(out) else blank
        return out

    def count_rest(self) -> None:
        """Count the remaining lines without decoding them (for the line-count error)."""
        for raw in self.file:
            self.lines += 1
            self.trailing_blank = self.trailing_blank + 1 if not raw.strip() else 0

    def close(self) -> None:
        if self.file is not sys.stdin.buffer:
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
            for file in files:
                file.count_rest()
            raise InputError(_mismatch(files))
        yield chunk
    if files[0].lines == 0:
        raise InputError(f"{' and '.join(file.label for file in files)} are empty")


def _mismatch(files: list[LineFile]) -> str:
    counts = ", ".join(f"{file.label} has {plural(file.lines, 'line')}" for file in files)
    shortest = min(file.lines for file in files)
    hints = [f"the last {plural(file.trailing_blank, 'line')} of {file.label} "
             f"{'is' if file.trailing_blank == 1 else 'are'} blank"
             for file in files if file.lines > shortest and file.lines - shortest <= file.trailing_blank]
    hint = f" ({'; '.join(hints)}: remove the trailing blank line?)" if hints else ""
    return f"{counts}; files must be line-aligned{hint}"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def progress_size(files: list[LineFile]) -> int | None:
    """Total bytes to read, when every file is a regular file (for progress)."""
    sizes = [file.size for file in files]
    return None if any(size is None for size in sizes) else sum(size for size in sizes if size is not None)
