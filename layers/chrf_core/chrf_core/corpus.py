"""Corpus scale: cut line-aligned segments of any number into requests within the contract's limits.

chrF counts are sums over segments, so scoring each chunk and merging the counts gives exactly the result of
scoring the whole at once; the pipeline (one chunk per Lambda batch) and the local command share this path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .request import MAX_SEGMENTS, MAX_TEXT_BYTES, InvalidInputError, Settings, check_equal_counts, utf8_size
from .statistics import Counts, merge_counts


def chunk_ranges(
    hypotheses: Sequence[str],
    references: Sequence[str],
    max_segments: int = MAX_SEGMENTS,
    max_bytes: int = MAX_TEXT_BYTES,
) -> Iterator[tuple[int, int]]:
    """Greedy [start, end) ranges of segments, each within ``max_segments`` and ``max_bytes`` of text.

    A segment whose texts alone exceed ``max_bytes`` cannot be scored: it raises, naming its 1-based line.
    """
    check_equal_counts(hypotheses, references)
    start, size = 0, 0
    for index, (hypothesis, reference) in enumerate(zip(hypotheses, references)):
        pair_size = utf8_size(hypothesis) + utf8_size(reference)
        if pair_size > max_bytes:
            raise InvalidInputError(
                None, f"line {index + 1}: its texts take {pair_size} UTF-8 bytes, more than the {max_bytes} allowed"
            )
        if index - start == max_segments or size + pair_size > max_bytes:
            yield start, index
            start, size = index, 0
        size += pair_size
    if start < len(hypotheses):
        yield start, len(hypotheses)


def chunk_request(hypotheses: Sequence[str], references: Sequence[str], settings: Settings) -> dict[str, Any]:
    """The contract request that scores these segments with these settings."""
    return {"hypotheses": list(hypotheses), "references": list(references), **settings.as_dict()}


def corpus_counts(
    hypotheses: Sequence[str],
    references: Sequence[str],
    settings: Settings,
    progress: Callable[[int, int], None] | None = None,
) -> Counts:
    """Counts of a whole corpus, computed chunk by chunk through the contract's request path and merged.

    ``progress(done, total)`` is called after each chunk, with segment counts.
    """
    from . import compute_counts  # the package's entry point, so chunks go through full validation

    if not hypotheses:
        raise InvalidInputError("hypotheses", "hypotheses: at least 1 segment, got 0")
    parts = []
    for start, end in chunk_ranges(hypotheses, references):
        try:
            parts.append(compute_counts(chunk_request(hypotheses[start:end], references[start:end], settings)))
        except InvalidInputError as error:
            raise InvalidInputError(error.field, relabel_lines(error.message, range(start + 1, end + 1))) from None
        if progress:
            progress(end, len(hypotheses))
    return merge_counts(parts)


def relabel_lines(message: str, lines: Sequence[int]) -> str:
    """Rewrite a chunk's ``hypotheses[i]: ...`` as ``line N (hypothesis): ...``, N being the corpus line of i."""
    for key, side in (("hypotheses", "hypothesis"), ("references", "reference")):
        prefix = f"{key}["
        if message.startswith(prefix) and "]" in message:
            index_text, rest = message[len(prefix) :].split("]", 1)
            if index_text.isdigit() and int(index_text) < len(lines):
                return f"line {lines[int(index_text)]} ({side}){rest}"
    return message
