"""Reports as text for a terminal: the table, the signature, a plain-language diagnosis, marked segments."""

from __future__ import annotations

import json
import re
from collections import Counter
from fractions import Fraction
from typing import Any

import chrf_core

from .lines import plural

BAR_WIDTH = 20
ANSI_UNMATCHED, ANSI_RESET = "\x1b[31m", "\x1b[0m"
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def value(fraction: Fraction | None) -> float | None:
    return None if fraction is None else float(fraction)


def bar(value: float | None, width: int = BAR_WIDTH) -> str:
    if value is None:
        return "·" * width
    filled = round(value * width)
    return "█" * filled + "░" * (width - filled)


def _number(value: float | None) -> str:
    return "     -" if value is None else f"{value:6.4f}"


def files_line(inputs: Any) -> str:
    """Which file was read as what (common.Inputs), as a report names them."""
    hypotheses = ", ".join(visible(name) for name in inputs.hypotheses)
    return f"hypotheses: {hypotheses}; references: {', '.join(visible(name) for name in inputs.references)}"


def report_json(report: dict[str, Any], inputs: Any, settings: chrf_core.CHRF) -> str:
    """A corpus report as the command line prints it with --json: the contract's object, then what the signature
    says beyond it (normalization, the number of references) and which file was read as what."""
    document = {**chrf_core.Report.signed(report, settings, len(inputs.references)),
                "files": {"hypotheses": inputs.hypotheses[0], "references": list(inputs.references)}}
    return json.dumps(document, indent=2, ensure_ascii=False)


def table(report: chrf_core.Report, facts: Any = None, inputs: Any = None) -> str:
    """The report as a fixed-width table, one row per order, with an F-score bar, the files read (common.Inputs)
    and the diagnosis."""
    lines = [
        f"{report.settings.name} = {chrf_core.score_text(report.exact)}   "
        f"({plural(report.segment_count, 'segment')}, {plural(report.effective_order_count, 'effective order')})",
        "",
        f"  {'order':<8}{'hyp':>9}{'ref':>9}{'match':>9}  {'P':>6}  {'R':>6}  {'F':>6}  {'F, 0 to 1':<{BAR_WIDTH}}",
    ]
    for order in report.orders:
        precision, recall, f_score = (value(fraction) for fraction in order.fractions())
        lines.append(
            f"  {order.type + ' ' + str(order.n):<8}{order.hypothesis_ngrams:>9}{order.reference_ngrams:>9}"
            f"{order.matching_ngrams:>9}  {_number(precision)}  {_number(recall)}"
            f"  {_number(f_score)}  {bar(f_score)}"
        )
    lines += [
        "",
        f"  average precision {float(report.average_precision):.4f}, average recall "
        f"{float(report.average_recall):.4f} (over effective orders); exact fractions: --json",
        f"  signature: {report.settings.signature}",
        *([f"  {files_line(inputs)}"] if inputs is not None else []),
    ]
    notes = diagnosis(report, facts)
    if notes:
        lines += ["", "What stands out:"] + [f"  - {note}" for note in notes]
    return "\n".join(line.rstrip() for line in lines)


def _span(orders: list[chrf_core.OrderScore]) -> str:
    kind = orders[0].type
    first, last = orders[0].n, orders[-1].n
    noun = "character" if kind == "char" else "word"
    return f"{noun} {first}-grams" if first == last else f"{noun} {first}–{last}-grams"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _value(order: chrf_core.OrderScore, key: str) -> float:
    return float(order.fractions()[("precision", "recall", "f_score").index(key)] or 0)


def diagnosis(report: chrf_core.Report, facts: Any = None) -> list[str]:
    """A few plain-language observations (rules of thumb, not verdicts). ``facts`` (corpus.Facts), when known,
    says how many lines are empty, identical or without spaces, so the sentences stay true for those."""
    notes: list[str] = []
    segments = report.segment_count
    if facts is not None:
        if facts.empty_hypotheses == segments and facts.empty_references == segments:
            return ["Every line of both files is empty: there is nothing to match, so the score is 0."]
        if facts.identical == segments:
            return ["Every hypothesis is identical to its reference: every n-gram matches."]
        if facts.empty_hypotheses == segments:
            return ["Every hypothesis line is empty: there is nothing to match, so the score is 0."]
        if facts.empty_references == segments:
            return ["Every reference line is empty: there is nothing to match, so the score is 0."]
        if facts.empty_hypotheses:
            notes.append(
                f"{plural(facts.empty_hypotheses, 'hypothesis line')} of {segments} "
                f"{'is' if facts.empty_hypotheses == 1 else 'are'} empty: their references' n-grams go unmatched, "
                "which lowers recall."
            )
        if facts.empty_references:
            notes.append(
                f"{plural(facts.empty_references, 'reference line')} of {segments} "
                f"{'is' if facts.empty_references == 1 else 'are'} empty: the hypotheses' n-grams there cannot "
                "match, which lowers precision."
            )
        if facts.identical:
            notes.append(f"{facts.identical} of {plural(segments, 'segment')} are identical to their reference.")
        if report.settings.word_order and facts.unspaced * 2 >= segments - facts.identical:
            notes.append(
                f"{facts.unspaced} of {plural(segments, 'segment')} have a side without spaces, which is then one "
                "word: word n-grams match only where whole texts are identical. For Chinese, Japanese or Thai, use "
                "--word-order 0 or tokenize first."
            )
    effective = [o for o in report.orders if o.effective]
    if not effective:
        notes.append("No order has n-grams on both sides: every text is shorter than the lowest order.")
        return notes
    empty = [o for o in report.orders if not o.effective]
    if empty:
        notes.append(
            f"{plural(len(empty), 'order')} ({', '.join(o.type + str(o.n) for o in empty)}) "
            f"{'has' if len(empty) == 1 else 'have'} no n-grams on one side, as no text is that long; they count "
            "as 0 under per_order_f and are skipped under precision_recall."
        )
    imperfect = [o for o in effective if _value(o, "f_score") < 1]
    if imperfect:
        weakest = sorted(imperfect, key=lambda o: _value(o, "f_score"))[:2]
        notes.append(
            "Weakest orders: "
            + ", ".join(f"{o.type} {o.n} (F {_value(o, 'f_score'):.3f})" for o in weakest)
            + "."
        )
    chars = [o for o in effective if o.type == "char"]
    long_chars = [o for o in chars if o.n >= 4] or chars[-2:]
    if long_chars:
        precision = _mean([_value(o, "precision") for o in long_chars])
        recall = _mean([_value(o, "recall") for o in long_chars])
        span = _span(long_chars)
        if precision < 0.8 * recall and recall - precision > 0.05:
            notes.append(
                f"Precision ({precision:.2f}) is well below recall ({recall:.2f}) at {span}: the hypotheses add "
                "material the references lack (insertions, wordy or wrong words)."
            )
        elif recall < 0.8 * precision and precision - recall > 0.05:
            notes.append(
                f"Recall ({recall:.2f}) is well below precision ({precision:.2f}) at {span}: the hypotheses miss "
                "material the references have (omissions, too short an output)."
            )
    if len(chars) >= 2:
        first, last = _value(chars[0], "f_score"), _value(chars[-1], "f_score")
        if first > 0.6 and last < 0.5 * first:
            notes.append(
                f"Short character sequences match (char 1: F {first:.2f}) but long ones rarely do "
                f"(char {chars[-1].n}: F {last:.2f}): the right characters and stems, but different word forms, "
                "spelling or order."
            )
    unspaced = facts is not None and report.settings.word_order and facts.unspaced * 2 >= segments - facts.identical
    words = {o.n: o for o in effective if o.type == "word"}
    if 1 in words and 2 in words and not unspaced:
        unigram_recall, bigram_recall = _value(words[1], "recall"), _value(words[2], "recall")
        if bigram_recall < 0.1 and unigram_recall >= 0.3:
            notes.append(
                f"Word-bigram recall is near zero ({bigram_recall:.2f}) while word unigrams match "
                f"({unigram_recall:.2f}): the words are there, but word order or wording around them differs."
            )
    if 1 in words and _value(words[1], "recall") < 0.3 and not unspaced:
        notes.append(
            f"Few reference words appear in the hypotheses (word-unigram recall {_value(words[1], 'recall'):.2f}):"
            " the wording differs, even where characters overlap."
        )
    return notes


# ---- marked segments ----------------------------------------------------------------------------------------


Marked = list[tuple[str, bool]]


def marked_tokens(hypothesis: str, reference: str, lowercase: bool,
                  normalize: str | None = None) -> tuple[Marked, Marked]:
    """Each side's word tokens with whether they match a token on the other side (clipped, as word unigrams
    match, after the settings' normalization and lowercasing): the unmatched ones are what a reader should look
    at."""
    tokens_h, tokens_r = chrf_core.words(hypothesis), chrf_core.words(reference)
    keys_h, keys_r = (chrf_core.words(text, normalize, lowercase) for text in (hypothesis, reference))

    def mark(tokens: list[str], keys: list[str], other: list[str]) -> Marked:
        available = Counter(other)
        out = []
        for token, key in zip(tokens, keys):
            matched = available[key] > 0
            if matched:
                available[key] -= 1
            out.append((token, matched))
        return out

    return mark(tokens_h, keys_h, keys_r), mark(tokens_r, keys_r, keys_h)


def visible(text: str) -> str:
    """Text from input files as a terminal may show it: control characters (C0, DEL, C1) and the bidirectional
    overrides and isolates, which could hide or reorder what is shown, written as escapes (``\x1b``, ``\u202e``)."""
    return UNSAFE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def marked_text(tokens: Marked, colour: bool) -> str:
    """Tokens joined by spaces, unmatched ones in red on a terminal, else in [brackets]."""
    if colour:
        return " ".join(visible(token) if matched else f"{ANSI_UNMATCHED}{visible(token)}{ANSI_RESET}"
                        for token, matched in tokens)
    return " ".join(visible(token) if matched else f"[{visible(token)}]" for token, matched in tokens)


def worst_segments(worst: list[Any], segments: int, settings: chrf_core.CHRF, colour: bool,
                   inputs: Any = None) -> str:
    """The lowest-scoring segments (corpus.Segment), each with its unmatched words marked."""
    lines = [f"The {plural(len(worst), 'lowest-scoring segment')} of {plural(segments, 'segment')} "
             f"({settings.name}; unmatched words {'in red' if colour else 'in [brackets]'})",
             f"signature: {settings.signature}", *([files_line(inputs)] if inputs is not None else [])]
    for segment in worst:
        marked_h, marked_r = marked_tokens(segment.hypothesis, segment.reference, settings.lowercase,
                                           settings.normalize)
        lines += ["", f"line {segment.line}\tscore {chrf_core.score_text(segment.score)}",
                  f"  hypothesis: {marked_text(marked_h, colour)}", f"  reference:  {marked_text(marked_r, colour)}"]
    return "\n".join(lines)


def compare_table(systems: list[Any], baseline: chrf_core.Report, method: str,
                  references: list[str] | None = None) -> str:
    """Each system (compare.SystemResult) with its score, interval, difference from the baseline and p-value."""
    names = [visible(system["name"]) for system in systems]
    name_width = max(12, *map(len, names))
    lines = [f"{baseline.settings.name} of {plural(len(systems) - 1, 'system')} against the baseline "
             f"({plural(baseline.segment_count, 'segment')}; {method})",
             f"signature: {baseline.settings.signature}",
             *([f"references: {', '.join(visible(name) for name in references)}"] if references else []), "",
             f"  {'system':<{name_width}}  {'score':>10}  {'95% CI':^19}  {'Δ':>9}  {'p-value':>8}"]
    for name, system in zip(names, systems):
        low, high = system["ci"]
        delta = "" if system["p_value"] is None else f"{system['delta']:+9.4f}"
        p_text = "" if system["p_value"] is None else f"{system['p_value']:8.4f}"
        mark = " *" if system["p_value"] is not None and system["p_value"] < 0.05 else ""
        lines.append(f"  {name:<{name_width}}  {system['score']:>10.6f}  [{low:7.3f}, {high:7.3f}]"
                     f"  {delta:>9}  {p_text:>8}{mark}")
    lines += ["", "  * p < 0.05: unlikely to be a chance difference from the baseline"]
    return "\n".join(lines)
