"""Minimum Bayes risk decoding: many candidates scored against many pseudo-references, on every core.

``pairwise`` scores every hypothesis against every reference; ``aggregate`` scores each hypothesis once against the
references' n-gram counts averaged (reference aggregation, Vamvas and Sennrich 2024: cost linear, not quadratic, in
the number of samples), defined exactly: with R references, per order, matches = the sum over n-grams g of
min(R h_g, S_g) where S_g sums g's counts over the references, precision = matches / (R x the hypothesis' n-grams),
recall = matches / (all the references' n-grams), then the contract's averaging. Every float is correctly rounded
from its exact fraction. The batch forms take one candidate set per source sentence and spread the sets over the
threads; a single set is spread by rows. The native kernel runs without the GIL.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from .contract import TEXT_KEYS, Settings
from .errors import InvalidInputError, describe
from .formula import exact_score
from .kernel import chosen
from .texts import MAX_TEXT_LENGTH, check_encodable, check_flag, check_strings, not_one_text

if TYPE_CHECKING:
    import numpy

MAX_THREADS = 256
Result = TypeVar("Result")


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def thread_count(threads: Any) -> int:
    """``threads`` checked (an integer from 1 to MAX_THREADS), or every available core when None."""
    if threads is None:
        return min(available_cores(), MAX_THREADS)
    if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
        raise InvalidInputError("threads", f"must be an integer from 1 to {MAX_THREADS} (or None: every core), got "
                                           f"{describe(threads)}")
    return threads


def checked(hypotheses: Sequence[str], references: Sequence[str],
            keys: tuple[str, str] = TEXT_KEYS) -> tuple[list[str], list[str]]:
    """Both sides as lists of valid texts: at least one each, strings, encodable, MAX_TEXT_LENGTH together."""
    sides = []
    for key, texts in zip(keys, (hypotheses, references)):
        not_one_text(key, texts)
        listed = list(texts)
        if not listed:
            raise InvalidInputError(key, "at least 1 segment, got 0")
        check_strings(key, listed)
        check_encodable(key, listed)
        sides.append(listed)
    total = sum(map(len, sides[0])) + sum(map(len, sides[1]))
    if total > MAX_TEXT_LENGTH:
        raise InvalidInputError(None, f"at most {MAX_TEXT_LENGTH} code points in all texts together, got {total}",
                                subject="texts")
    return sides[0], sides[1]


def pairwise(settings: Settings, hypotheses: list[str], references: list[str], threads: int) -> numpy.ndarray:
    """Every (checked) hypothesis against every reference: float64, shaped (hypotheses, references)."""
    return chosen().pairwise(hypotheses, references, settings, partial(exact_score, settings), threads)


def aggregate(settings: Settings, hypotheses: list[str], references: list[str], threads: int,
              exact: bool) -> numpy.ndarray | list[Fraction]:
    """Each (checked) hypothesis against the references' averaged n-gram counts: float64 scores, or exact
    Fractions."""
    check_flag("exact", exact)
    scores, counts = chosen().aggregate(hypotheses, references, settings, partial(exact_score, settings), threads)
    if exact:
        return [exact_score(settings, orders) for orders in counts.tolist()]
    return scores


def batch(score_set: Callable[[list[str], list[str], int], Result], hypothesis_sets: Iterable[Sequence[str]],
          reference_sets: Iterable[Sequence[str]], threads: int) -> list[Result]:
    """score_set over every (checked) candidate set and its references, in order: the sets spread over the threads
    (each set on one), a single set over them by rows."""
    given_sets = []
    for key, given in (("hypothesis_sets", hypothesis_sets), ("reference_sets", reference_sets)):
        not_one_text(key, given)
        listed = list(given)  # any iterable of sets, a generator included
        if listed and isinstance(listed[0], str):
            raise TypeError(f"{key}: expected a sequence of sets of texts (one set per source sentence), got a "
                            "sequence of str")
        given_sets.append(listed)
    if len(given_sets[0]) != len(given_sets[1]):
        raise InvalidInputError("reference_sets", f"must have as many sets as hypothesis_sets "
                                                  f"({len(given_sets[0])}), got {len(given_sets[1])}")
    sets = [checked(hypotheses, references, (f"hypothesis_sets[{k}]", f"reference_sets[{k}]"))
            for k, (hypotheses, references) in enumerate(zip(*given_sets))]
    if len(sets) <= 1 or threads == 1 or not chosen().threaded:
        return [score_set(hypotheses, references, threads) for hypotheses, references in sets]
    from concurrent.futures import ThreadPoolExecutor  # here: not on the service's import path

    with ThreadPoolExecutor(max_workers=min(threads, len(sets))) as pool:
        return list(pool.map(lambda pair: score_set(pair[0], pair[1], 1), sets))
