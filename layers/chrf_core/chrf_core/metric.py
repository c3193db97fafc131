"""``CHRF``: the scoring settings, checked by the contract's rules, and everything scored with them.

It is shaped like sacreBLEU's ``CHRF``: settings as keyword arguments (named and defaulted as the contract names
them), then ``corpus_score``, ``sentence_score`` and, for minimum Bayes risk decoding, ``pairwise`` and
``aggregate`` (and their ``_batch`` forms, on every core); every number is
the contract's, exact. The whole project passes settings around as a ``CHRF``.

>>> from chrf_core import CHRF
>>> hypotheses = ["The cat sat on the mat.", "A dog barked."]
>>> references = ["The cat sat on a mat.", "The dog barked loudly."]
>>> chrf = CHRF(word_order=2)
>>> result = chrf.corpus_score(hypotheses, [references])  # sacreBLEU's layout: a list of one reference stream
>>> print(result)
chrF2++ = 58.80
>>> result.score, result.exact
(58.80446480935931, Fraction(567927957436544725, 9657905386567746))
>>> result.to_dict()["score"], result.orders[6]
('58.804465', OrderScore(type='word', n=1, hypothesis_ngrams=11, reference_ngrams=12, matching_ngrams=9, beta=2))
>>> chrf.signature
'chrf-components:1.0.0|chrF2++|nc:6|nw:2|space:no|case:mixed|avg:precision_recall|hyp:all'
>>> chrf.segment_scores(hypotheses, references).round(2).tolist()
[72.66, 44.17]
>>> chrf.pairwise(["a cat", "the dog"], ["the cat", "a dog"]).tolist()
[[29.363033873343152, 12.5], [20.625, 36.85304990757856]]
>>> CHRF(beta=0)
Traceback (most recent call last):
chrf_core.errors.InvalidInputError: beta: must be an integer from 1 to 16, got 0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal, overload

from . import mbr
from .contract import AVERAGINGS, INTEGER_RANGES, NORMALIZATIONS, SETTING_KEYS, TEXT_KEYS, TOOL, VERSION
from .counts import Counts, count_segments, system_counts
from .errors import InvalidInputError, describe, unknown_key_error
from .formula import exact_score, float_scores
from .kernel import Triple
from .report import Report, json_lines, report_of, score_texts
from .streams import References, best_of, best_rows, chunks_of, present, segment_rows, sides_of
from .texts import check_chunk, check_flag, check_side, normalized

if TYPE_CHECKING:
    import numpy



class Signature(str):
    """A signature as sacreBLEU's ``get_signature()`` returns one: ``format()`` and ``str()`` give the text (which
    has no shorter form)."""

    def format(self, short: bool = False) -> str:  # type: ignore[override]
        return str(self)


class _Unset:
    """A setting left out (so that sacreBLEU's spelling of it may give it)."""

    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


@dataclass(frozen=True)
class CHRF:
    """chrF / chrF++ with the contract's settings: character orders 1..char_order, word orders 1..word_order (2 gives
    chrF++), recall weighted beta times precision, optional lowercasing and whitespace kept in character n-grams,
    and the averaging (``"precision_recall"``: sacreBLEU 2.x; ``"per_order_f"``: chrF++.py's arithmetic).

    A rule broken on construction raises :class:`InvalidInputError` (a ValueError) naming the setting; 6.0 counts as 6
    (as in JSON), a boolean never counts as a number. sacreBLEU's spellings work too, and read back: ``whitespace``
    is ``include_whitespace``, ``eps_smoothing=True`` is ``averaging="per_order_f"`` (chrF++.py's arithmetic, which
    sacreBLEU's epsilon smoothing gives) and False is ``"precision_recall"``; a spelling that contradicts the other
    is an error. Instances are immutable and hashable."""

    char_order: int = 6
    word_order: int = 0
    beta: int = 2
    lowercase: bool = False
    include_whitespace: bool = _UNSET  # False unless given (here or as whitespace)
    averaging: str = _UNSET  # "precision_recall" unless given (here or as eps_smoothing)
    normalize: str | None = None  # the library's and command line's opt-in Unicode normalization (not the contract's)
    whitespace: InitVar[bool | None] = None  # sacreBLEU's name for include_whitespace
    eps_smoothing: InitVar[bool | None] = None  # sacreBLEU's switch between the two averagings

    def __post_init__(self, whitespace: bool | None, eps_smoothing: bool | None) -> None:
        self._resolve("include_whitespace", "whitespace", whitespace, {True: True, False: False}, False)
        self._resolve("averaging", "eps_smoothing", eps_smoothing, {True: AVERAGINGS[1], False: AVERAGINGS[0]},
                      AVERAGINGS[0])
        for key, (low, high) in INTEGER_RANGES.items():
            object.__setattr__(self, key, _integer(key, getattr(self, key), low, high))
            if key == "word_order" and self.char_order == 0 and self.word_order == 0:
                raise InvalidInputError("word_order", "char_order and word_order cannot both be 0")
        for key in ("lowercase", "include_whitespace"):
            if type(getattr(self, key)) is not bool:
                raise InvalidInputError(key, f"must be a boolean (true or false), got {describe(getattr(self, key))}")
        if type(self.averaging) is not str or self.averaging not in AVERAGINGS:
            raise InvalidInputError("averaging",
                                    f"must be one of {', '.join(AVERAGINGS)}, got {describe(self.averaging)}")
        if self.normalize is not None and (type(self.normalize) is not str or self.normalize not in NORMALIZATIONS):
            raise InvalidInputError("normalize", f"must be one of {', '.join(NORMALIZATIONS)} or None, got "
                                                 f"{describe(self.normalize)}")

    def _resolve(self, key: str, alias: str, alias_value: Any, meaning: dict[bool, Any], default: Any) -> None:
        """A setting given as itself, as sacreBLEU's spelling (``alias``), both (which must agree) or neither."""
        given = getattr(self, key)
        if alias_value is None:
            if given is _UNSET:
                object.__setattr__(self, key, default)
            return
        if type(alias_value) is not bool:
            raise InvalidInputError(alias, f"must be a boolean (True or False), got {describe(alias_value)}")
        if given is not _UNSET and given != meaning[alias_value]:
            raise InvalidInputError(alias, f"sacreBLEU's {alias}={alias_value} means {key}={meaning[alias_value]!r}, "
                                           f"but {key}={given!r} was given too")
        object.__setattr__(self, key, meaning[alias_value])

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> CHRF:
        """The settings among ``values`` (a request's other keys are ignored), defaults for the missing ones."""
        return cls(**{key: values[key] for key in SETTING_KEYS if key in values})

    @classmethod
    def of_settings(cls, values: Any, subject: str = "settings") -> CHRF:
        """An object of settings alone (a pipeline execution's or batch's, a Python call's): nothing but setting
        keys, each by its rule."""
        if not isinstance(values, dict):
            raise InvalidInputError("settings", "must be an object of scoring settings")
        for key in values:
            if key not in SETTING_KEYS:
                raise unknown_key_error(key, SETTING_KEYS, subject=subject)
        return cls.of(values)

    @classmethod
    def of_keywords(cls, values: Mapping[str, Any]) -> CHRF:
        """The settings of a Python call's keywords (``corpus_report(..., word_order=2)``): the settings and
        sacreBLEU's spellings of them; any other keyword is an InvalidInputError naming the allowed ones."""
        for key in values:
            if key not in SETTING_KEYS and key not in LIBRARY_KEYWORDS:
                raise unknown_key_error(key, (*SETTING_KEYS, *LIBRARY_KEYWORDS), subject="settings")
        return cls(**values)

    def as_dict(self) -> dict[str, int | bool | str]:
        """The contract's settings as the output echoes them, in its key order."""
        return {key: getattr(self, key) for key in SETTING_KEYS}

    @property
    def orders(self) -> int:
        return self.char_order + self.word_order

    @property
    def name(self) -> str:
        """chrF2, chrF2+ (word unigrams), chrF2++ (word bigrams) as sacreBLEU names them; chrF2+w3 beyond."""
        suffix = {0: "", 1: "+", 2: "++"}.get(self.word_order, f"+w{self.word_order}")
        return f"chrF{self.beta}{suffix}" if self.char_order else f"wordF{self.beta}"

    @property
    def signature(self) -> str:
        """Every setting that changes the number, sacreBLEU-style but not to be taken for a sacreBLEU signature:
        this tool counts every hypothesis n-gram (``hyp:all``), where sacreBLEU drops those of orders a reference
        lacks."""
        return "|".join([f"{TOOL}:{VERSION}", self.name, f"nc:{self.char_order}", f"nw:{self.word_order}",
                         f"space:{'yes' if self.include_whitespace else 'no'}",
                         f"case:{'lc' if self.lowercase else 'mixed'}", f"avg:{self.averaging}", "hyp:all",
                         *([f"norm:{self.normalize}"] if self.normalize else [])])

    def get_signature(self) -> Signature:
        """:attr:`signature` under sacreBLEU's method name, as an object like sacreBLEU's ``Signature`` (a str
        with ``format(short=False)``)."""
        return Signature(self.signature)

    # ---- scoring ---------------------------------------------------------------------------------------------

    def corpus_score(self, hypotheses: Iterable[str], references: References, *,
                     references_per_segment: bool | None = None) -> Report:
        """The corpus score of line-aligned segments, with every order's counts and exact fractions; ``to_dict()``
        is the contract's JSON output (the service's and the corpus pipeline's for the same segments).

        ``references`` as sacreBLEU takes it: a list of reference streams (one per reference translation, each
        holding every segment's; ``None`` where a segment lacks that one), or one stream itself. Any iterables, of
        any length: they are read CHUNK segments at a time. With ``references_per_segment=True``, one list of
        references per segment instead (Hugging Face's and torchmetrics' layout; read whole). A list of N lists of N
        texts for N >= 2 hypotheses, which both layouts could mean, is refused unless ``references_per_segment``
        says which (False: sacreBLEU's)."""
        return report_of(*self._counted(hypotheses, references, references_per_segment))

    def corpus_counts(self, hypotheses: Iterable[str], references: References, *,
                      references_per_segment: bool | None = None) -> Counts:
        """The per-order counts behind :meth:`corpus_score`: mergeable with other segments' counts
        (:meth:`Counts.merge`), scored by :meth:`report`."""
        return self._counted(hypotheses, references, references_per_segment)[0]

    def _counted(self, hypotheses: Iterable[str], references: References,
                 references_per_segment: bool | None) -> tuple[Counts, int | str]:
        """The corpus counts and the number of references per segment (sacreBLEU's nrefs: "var" where it varies)."""
        parts = []
        reference_counts: set[int] = set()
        for hypothesis_chunk, reference_chunks in chunks_of(sides_of(hypotheses, references, references_per_segment,
                                                                   self.normalize)):
            if len(reference_chunks) == 1:
                reference_counts.add(1)
                parts.append(count_segments(hypothesis_chunk, reference_chunks[0], self))
                continue
            reference_counts.update(len(texts) - texts.count(None) for texts in zip(*reference_chunks))
            parts.append(Counts.of_array(self, len(hypothesis_chunk),
                                         best_rows(self, hypothesis_chunk, reference_chunks).sum(axis=0)))
        if not parts:
            raise InvalidInputError(TEXT_KEYS[0], "at least 1 segment, got 0")
        return Counts.merge(parts), reference_counts.pop() if len(reference_counts) == 1 else "var"

    def sentence_score(self, hypothesis: str, references: str | Sequence[str | None]) -> Report:
        """One segment's score (sacreBLEU's ``sentence_score``): ``references`` a list of its references (against
        the best one, as :meth:`corpus_score` chooses), or one reference."""
        if not isinstance(hypothesis, str):
            raise TypeError(f"hypothesis: expected a str, got {type(hypothesis).__name__}")
        if isinstance(references, str):
            return self.corpus_score([hypothesis], [references])
        check_side(TEXT_KEYS[1], references)
        if not references:
            raise InvalidInputError(TEXT_KEYS[1], "at least 1 reference, got 0")
        return self.corpus_score([hypothesis], [list(references)], references_per_segment=True)

    @overload
    def segment_scores(self, hypotheses: Iterable[str], references: References, exact: Literal[False] = False, *,
                       references_per_segment: bool | None = None) -> numpy.ndarray | Iterator[float]: ...

    @overload
    def segment_scores(self, hypotheses: Iterable[str], references: References, exact: Literal[True], *,
                       references_per_segment: bool | None = None) -> Iterator[Fraction]: ...

    def segment_scores(self, hypotheses: Iterable[str], references: References, exact: bool = False, *,
                       references_per_segment: bool | None = None
                       ) -> numpy.ndarray | Iterator[float] | Iterator[Fraction]:
        """Each segment's own score (0..100), in order: a float64 NumPy array when both sides are sequences, else
        an iterator that reads the segments as it goes; with ``exact``, an iterator of exact Fractions. The floats
        come from one vectorised formula, within 1e-12 of the exact value (which ``exact`` gives). ``references``
        and ``references_per_segment`` as for :meth:`corpus_score`."""
        sides = sides_of(hypotheses, references, references_per_segment, self.normalize)
        if check_flag("exact", exact):
            return (exact_score(self, orders) for orders in segment_rows(self, sides))
        floats = (float_scores(self, best_rows(self, *chunk)) for chunk in chunks_of(sides))
        if isinstance(sides.hypotheses, Sequence) and all(isinstance(stream, Sequence) for stream in sides.streams):
            import numpy

            parts = list(floats)
            return numpy.concatenate(parts) if parts else numpy.empty(0)
        return (score for part in floats for score in part.tolist())

    def segment_reports(self, hypotheses: Iterable[str], references: References, *,
                        references_per_segment: bool | None = None) -> Iterator[Report]:
        """Each segment's own report, in order, as the segments are read."""
        sides = sides_of(hypotheses, references, references_per_segment, self.normalize)
        return (report_of(Counts(self, 1, orders)) for orders in segment_rows(self, sides))

    def pairwise(self, hypotheses: Sequence[str], references: Sequence[str], *,
                 threads: int | None = None) -> numpy.ndarray:
        """Every hypothesis scored against every reference alone, as for minimum Bayes risk decoding: a float64
        NumPy array shaped (len(hypotheses), len(references)), each entry correctly rounded from its exact
        fraction. Each text's n-grams are counted once; the native kernel runs on ``threads`` threads (default:
        every core) without the GIL. The texts together may hold at most MAX_TEXT_LENGTH code points."""
        return mbr.pairwise(self, *mbr.checked(hypotheses, references, self.normalize), mbr.thread_count(threads))

    @overload
    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], *, exact: Literal[False] = False,
                  threads: int | None = None, weights: Any = None) -> numpy.ndarray: ...

    @overload
    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], *, exact: Literal[True],
                  threads: int | None = None, weights: Any = None) -> list[Fraction]: ...

    def aggregate(self, hypotheses: Sequence[str], references: Sequence[str], *, exact: bool = False,
                  threads: int | None = None, weights: Any = None) -> numpy.ndarray | list[Fraction]:
        """Each hypothesis scored once against the references' averaged n-gram counts (reference aggregation for
        MBR decoding, linear in the number of references): a float64 array, each entry correctly rounded from its
        exact fraction, or with ``exact`` the Fractions. With one reference it is ``pairwise``'s column. With
        ``weights`` (one number per reference, from 0; a list, a NumPy array or a tensor), the average is weighted
        by them, normalised to sum to 1 (mbrs' ``reference_lprobs`` as their softmax). See :mod:`chrf_core.mbr`
        for the exact definition.

        >>> CHRF().aggregate(["a cat", "the dog"], ["the cat", "a dog"]).round(4).tolist()
        [24.0791, 24.37]
        >>> CHRF().aggregate(["a cat", "the dog"], ["the cat", "a dog"], weights=[3, 1]).round(4).tolist()
        [28.0383, 21.5498]
        """
        return mbr.aggregate(self, *mbr.checked(hypotheses, references, self.normalize), mbr.thread_count(threads),
                             exact, weights)

    def pairwise_batch(self, hypothesis_sets: Sequence[Sequence[str]], reference_sets: Sequence[Sequence[str]], *,
                       threads: int | None = None) -> list[numpy.ndarray]:
        """:meth:`pairwise` for many candidate sets (one per source sentence) in one call, the sets spread over
        ``threads`` threads (default: every core): one matrix per set, in order."""
        return mbr.batch(self._pairwise_of, hypothesis_sets, reference_sets, mbr.thread_count(threads),
                         self.normalize, lambda hypotheses, references: hypotheses * references)

    def aggregate_batch(self, hypothesis_sets: Sequence[Sequence[str]], reference_sets: Sequence[Sequence[str]], *,
                        threads: int | None = None) -> list[numpy.ndarray]:
        """:meth:`aggregate` for many candidate sets in one call, spread over the threads: one array per set."""
        return mbr.batch(self._aggregate_of, hypothesis_sets, reference_sets, mbr.thread_count(threads),
                         self.normalize)

    def _pairwise_of(self, hypotheses: list[str], references: list[str], threads: int) -> numpy.ndarray:
        return mbr.pairwise(self, hypotheses, references, threads)

    def _aggregate_of(self, hypotheses: list[str], references: list[str], threads: int) -> numpy.ndarray:
        return mbr.aggregate(self, hypotheses, references, threads, exact=False)  # type: ignore[return-value]

    # ---- counts, and what is made of them (for the command line, the functions and other tools) ----------------

    def segment_counts(self, hypotheses: Sequence[str], references: References, *,
                       references_per_segment: bool | None = None) -> numpy.ndarray:
        """Each segment's own per-order counts: an int64 NumPy array shaped (segments, orders, 3), (hypothesis
        n-grams, reference n-grams, matches) per order, for :meth:`float_scores`, :meth:`score_texts`,
        :meth:`json_lines` or summing (:meth:`Counts.of_array`). Line-aligned texts, checked; with several
        reference streams, each segment's counts against its best reference (as :meth:`corpus_score`)."""
        import numpy

        rows = [best_rows(self, *chunk) for chunk in chunks_of(sides_of(hypotheses, references,
                                                                      references_per_segment, self.normalize))]
        if len(rows) == 1:
            return rows[0]
        return numpy.concatenate(rows) if rows else numpy.empty((0, self.orders, 3), dtype=numpy.int64)

    def system_counts(self, hypothesis_sets: Sequence[Sequence[str]], references: References, *,
                      references_per_segment: bool | None = None) -> numpy.ndarray:
        """Several systems' own segment counts against the same references: an int64 NumPy array shaped (systems,
        segments, orders, 3), for each system what :meth:`segment_counts` gives, each reference counted once per
        segment rather than once per system (comparing systems). Line-aligned texts, checked."""
        import numpy

        check_side("hypothesis_sets", hypothesis_sets)
        systems = list(hypothesis_sets)
        if not systems:
            raise InvalidInputError("hypothesis_sets", "at least 1 system, got 0")
        for index, system in enumerate(systems):
            check_side(f"hypothesis_sets[{index}]", system)
            if not isinstance(system, Sequence):  # a NumPy array, a generator: read whole
                systems[index] = system = list(system)
            if len(system) != len(systems[0]):
                raise InvalidInputError(f"hypothesis_sets[{index}]", f"must have as many segments as the first "
                                                                     f"system, {len(systems[0])}, got {len(system)}")
        parts, offset = [], 0
        for first, reference_chunks in chunks_of(sides_of(systems[0], references, references_per_segment,
                                                        self.normalize)):
            chunks = [first] + [system[offset:offset + len(first)] for system in systems[1:]]
            for index, chunk in enumerate(chunks[1:], 1):
                try:
                    check_chunk(TEXT_KEYS[0], chunk, offset)
                    chunks[index] = list(normalized(TEXT_KEYS[0], chunk, self.normalize, offset))
                except InvalidInputError as error:
                    raise InvalidInputError(f"hypothesis_sets[{index}]", error.detail, index=error.index) from None
            rows = numpy.stack([system_counts(chunks, present(stream), self) for stream in reference_chunks])
            parts.append(rows[0] if len(reference_chunks) == 1 else numpy.stack(
                [best_of(self, rows[:, system], reference_chunks) for system in range(len(chunks))]))
            offset += len(first)
        if not parts:
            return numpy.empty((len(systems), 0, self.orders, 3), dtype=numpy.int64)
        return parts[0] if len(parts) == 1 else numpy.concatenate(parts, axis=1)

    def report(self, counts: Counts) -> Report:
        """The report of counts made with these settings (:meth:`corpus_counts`, merged ones, read-back ones)."""
        if counts.settings != self:
            raise ValueError(f"report: counts made with other settings ({counts.settings.as_dict()})")
        return report_of(counts)

    def exact_score(self, orders: Sequence[Triple] | Sequence[list[int]]) -> Fraction:
        """The exact score of one set of per-order counts (a row of :meth:`segment_counts`, or summed)."""
        return exact_score(self, orders)

    def float_scores(self, counts: numpy.ndarray) -> numpy.ndarray:
        """Scores (0..100) of many count arrays at once in floating point: ``counts`` shaped (..., orders, 3)."""
        return float_scores(self, counts)

    def score_texts(self, counts: numpy.ndarray) -> list[str]:
        """Each segment's score as the contract writes it (six decimals, from the exact fraction): ``counts`` as
        :meth:`segment_counts` gives them."""
        return score_texts(self, counts)

    def json_lines(self, counts: numpy.ndarray, first_line: int = 1) -> str:
        """Each segment's report as one JSON line, ``{"line": N, ...}`` then the contract's output, numbered from
        ``first_line``: the same bytes as ``json.dumps`` of each segment's ``to_dict()``."""
        return json_lines(self, counts, first_line)

    @classmethod
    def counts_from_dict(cls, data: Any) -> Counts:
        """Counts rebuilt from :meth:`Counts.to_dict` output, every value checked (they may come from storage):
        ValueError naming what is wrong."""
        if not isinstance(data, dict) or set(data) != {"settings", "segment_count", "orders"}:
            raise ValueError("counts: expected an object with settings, segment_count and orders")
        settings_data = data["settings"]
        if not isinstance(settings_data, dict) or set(settings_data) != set(SETTING_KEYS) or any(
                type(settings_data[key]) is not int for key in INTEGER_RANGES):
            raise ValueError("counts: settings must name every setting, integers as integers")
        try:
            settings = cls.of_settings(settings_data)
        except InvalidInputError as error:
            raise ValueError(f"counts: {error.message}") from None
        return Counts.checked(settings, data["segment_count"], data["orders"])

    @classmethod
    def report_from_dict(cls, output: dict[str, Any]) -> Report:
        """The report behind a contract output (read back from storage): its counts, scored again."""
        settings = cls.of({key: output[key] for key in SETTING_KEYS})
        orders = tuple((o["hypothesis_ngrams"], o["reference_ngrams"], o["matching_ngrams"]) for o in output["orders"])
        return report_of(Counts(settings, output["segment_count"], orders))


SACREBLEU_SPELLINGS = ("whitespace", "eps_smoothing")
LIBRARY_KEYWORDS = ("normalize", *SACREBLEU_SPELLINGS)  # keywords beyond the contract's settings
# sacreBLEU's attribute names read back what they mean (CHRF(whitespace=True).whitespace is True)
for _spelling, _reading in (("whitespace", lambda self: self.include_whitespace),
                            ("eps_smoothing", lambda self: self.averaging == AVERAGINGS[1])):
    setattr(CHRF, _spelling, property(_reading))  # after @dataclass, which keeps the InitVar's default for __init__


def _integer(key: str, value: Any, low: int, high: int) -> int:
    """An integer setting under JSON Schema rules: 6.0 is the integer 6, booleans and non-finite numbers are not."""
    if type(value) is float and math.isfinite(value) and value.is_integer():
        value = int(value)
    if type(value) is not int:
        raise InvalidInputError(key, f"must be an integer from {low} to {high}, got {describe(value)}")
    if not low <= value <= high:
        shown_value = value if abs(value) < 10**15 else "a number out of range"
        raise InvalidInputError(key, f"must be an integer from {low} to {high}, got {shown_value}")
    return value
