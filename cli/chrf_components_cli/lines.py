"""Line-aligned text files read in step, chunk by chunk: memory bounded by a chunk, not by the corpus.

Files are UTF-8 and split on ``\\n`` only (a trailing ``\\r`` is dropped, a byte order mark at the start is
skipped), so texts holding U+2028 or U+0085 stay on their line. When one file ends before the others, the rest of
the longer files is counted (not decoded) so the error can give every count, and a trailing blank line, the
usual cause, is pointed out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import BinaryIO

CHUNK_LINES = 4096
CHUNK_CHARACTERS = 1 << 22


class InputError(Exception):
    """A problem with an input file: reported in one line, exit code 2."""


class LineFile:
    """One input file ('-' is standard input), read line by line."""

    def __init__(self, name: str, label: str) -> None:
        self.name, self.label = name, label
        self.lines = 0
        self.offset = 0
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

    def read(self) -> str | None:
        """The next line, decoded; None at the end."""
        try:
            raw = self.file.readline()
        except OSError as error:
            raise InputError(f"{self.label} {self.name}: cannot read ({error.strerror or error})") from None
        if not raw:
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"{self.label} {self.name}: not UTF-8 (line {self.lines + 1}, byte {self.offset + error.start})"
            ) from None
        self.offset += len(raw)
        if self.lines == 0 and text.startswith("\ufeff"):
            text = text[1:]
        self.lines += 1
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        self.trailing_blank = self.trailing_blank + 1 if not text.strip() else 0
        return text

    def count_rest(self) -> None:
        """Count the remaining lines without decoding them (for the line-count error)."""
        while True:
            raw = self.file.readline()
            if not raw:
                return
            self.lines += 1
            self.trailing_blank = self.trailing_blank + 1 if not raw.strip() else 0

    def close(self) -> None:
        if self.file is not sys.stdin.buffer:
            self.file.close()


def aligned_chunks(files: list[LineFile]) -> Iterator[list[list[str]]]:
    """Chunks of aligned lines: each chunk is one list of lines per file, all of the same length."""
    if sum(file.name == "-" for file in files) > 1:
        raise InputError("only one input can be standard input (-)")
    chunk: list[list[str]] = [[] for _ in files]
    characters = 0
    while True:
        lines = [file.read() for file in files]
        if all(line is None for line in lines):
            break
        if any(line is None for line in lines):
            for file, line in zip(files, lines):
                if line is not None:
                    file.count_rest()
            raise InputError(_mismatch(files))
        for column, line in zip(chunk, lines):
            assert line is not None
            column.append(line)
            characters += len(line)
        if len(chunk[0]) >= CHUNK_LINES or characters >= CHUNK_CHARACTERS:
            yield chunk
            chunk, characters = [[] for _ in files], 0
    if chunk[0]:
        yield chunk
    elif files[0].lines == 0:
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
