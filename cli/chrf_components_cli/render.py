"""Human-facing views of reports: the table, the signature, a plain-language diagnosis, marked segments, HTML pages.

The HTML pages are self-contained (inline CSS and SVG, no scripts, no network) and every SVG element is placed
inside its viewBox, so nothing is clipped at any width.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import chrf_core

from .lines import plural

BAR_WIDTH = 20
ANSI_UNMATCHED, ANSI_RESET = "\x1b[31m", "\x1b[0m"


def as_float(fraction: str | None) -> float | None:
    return None if fraction is None else float(Fraction(fraction))


def metric_name(report: dict[str, Any]) -> str:
    """chrF2, chrF2+ (word unigrams), chrF2++ (word bigrams) as sacreBLEU names them; chrF2+w3 beyond."""
    word_order = report["word_order"]
    suffix = {0: "", 1: "+", 2: "++"}.get(word_order, f"+w{word_order}")
    return f"chrF{report['beta']}{suffix}" if report["char_order"] else f"wordF{report['beta']}"


def signature(report: dict[str, Any]) -> str:
    """Every setting that changes the number, named so it cannot be taken for a sacreBLEU signature: this tool
    counts every hypothesis n-gram (``hyp:all``), where sacreBLEU drops those of orders a reference lacks."""
    return "|".join(
        [
            f"{chrf_core.TOOL}:{chrf_core.VERSION}",
            metric_name(report),
            f"nc:{report['char_order']}",
            f"nw:{report['word_order']}",
            f"space:{'yes' if report['include_whitespace'] else 'no'}",
            f"case:{'lc' if report['lowercase'] else 'mixed'}",
            f"avg:{report['averaging']}",
            "hyp:all",
        ]
    )


def bar(value: float | None, width: int = BAR_WIDTH) -> str:
    if value is None:
        return "·" * width
    filled = round(value * width)
    return "█" * filled + "░" * (width - filled)


def _number(value: float | None) -> str:
    return "     -" if value is None else f"{value:6.4f}"


def table(report: dict[str, Any], facts: Any = None) -> str:
    """The report as a fixed-width table, one row per order, with an F-score bar, then the diagnosis."""
    lines = [
        f"{metric_name(report)} = {report['score']}   ({plural(report['segment_count'], 'segment')}, "
        f"{plural(report['effective_order_count'], 'effective order')})",
        "",
        f"  {'order':<8}{'hyp':>9}{'ref':>9}{'match':>9}  {'P':>6}  {'R':>6}  {'F':>6}  {'F, 0 to 1':<{BAR_WIDTH}}",
    ]
    for order in report["orders"]:
        f_score = as_float(order["f_score"])
        lines.append(
            f"  {order['type'] + ' ' + str(order['n']):<8}{order['hypothesis_ngrams']:>9}"
            f"{order['reference_ngrams']:>9}{order['matching_ngrams']:>9}  {_number(as_float(order['precision']))}"
            f"  {_number(as_float(order['recall']))}  {_number(f_score)}  {bar(f_score)}"
        )
    lines += [
        "",
        f"  average precision {as_float(report['average_precision']):.4f}, average recall "
        f"{as_float(report['average_recall']):.4f} (over effective orders); exact fractions: --json",
        f"  signature: {signature(report)}",
    ]
    notes = diagnosis(report, facts)
    if notes:
        lines += ["", "What stands out:"] + [f"  - {note}" for note in notes]
    return "\n".join(lines)


def _span(orders: list[dict[str, Any]]) -> str:
    kind = orders[0]["type"]
    first, last = orders[0]["n"], orders[-1]["n"]
    noun = "character" if kind == "char" else "word"
    return f"{noun} {first}-grams" if first == last else f"{noun} {first}–{last}-grams"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _value(order: dict[str, Any], key: str) -> float:
    value = as_float(order[key])
    return 0.0 if value is None else value


def diagnosis(report: dict[str, Any], facts: Any = None) -> list[str]:
    """A few plain-language observations (rules of thumb, not verdicts). ``facts`` (corpus.Facts), when known,
    says how many lines are empty, identical or without spaces, so the sentences stay true for those."""
    notes: list[str] = []
    segments = report["segment_count"]
    if facts is not None:
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
        if report["word_order"] and facts.unspaced * 2 >= segments - facts.identical:
            notes.append(
                f"{facts.unspaced} of {plural(segments, 'segment')} have a side without spaces, which is then one "
                "word: word n-grams match only where whole texts are identical. For Chinese, Japanese or Thai, use "
                "--word-order 0 or tokenize first."
            )
    effective = [o for o in report["orders"] if o["effective"]]
    if not effective:
        notes.append("No order has n-grams on both sides: every text is shorter than the lowest order.")
        return notes
    empty = [o for o in report["orders"] if not o["effective"]]
    if empty:
        notes.append(
            f"{plural(len(empty), 'order')} ({', '.join(o['type'] + str(o['n']) for o in empty)}) "
            f"{'has' if len(empty) == 1 else 'have'} no n-grams on one side, as no text is that long; they count "
            "as 0 under per_order_f and are skipped under precision_recall."
        )
    imperfect = [o for o in effective if _value(o, "f_score") < 1]
    if imperfect:
        weakest = sorted(imperfect, key=lambda o: _value(o, "f_score"))[:2]
        notes.append(
            "Weakest orders: "
            + ", ".join(f"{o['type']} {o['n']} (F {_value(o, 'f_score'):.3f})" for o in weakest)
            + "."
        )
    chars = [o for o in effective if o["type"] == "char"]
    long_chars = [o for o in chars if o["n"] >= 4] or chars[-2:]
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
                f"(char {chars[-1]['n']}: F {last:.2f}): the right characters and stems, but different word forms, "
                "spelling or order."
            )
    unspaced = facts is not None and report["word_order"] and facts.unspaced * 2 >= segments - facts.identical
    words = {o["n"]: o for o in effective if o["type"] == "word"}
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


def marked_tokens(hypothesis: str, reference: str, lowercase: bool) -> tuple[Marked, Marked]:
    """Each side's word tokens with whether they match a token on the other side (clipped, as word unigrams
    match): the unmatched ones are what a reader should look at."""
    tokens_h, tokens_r = chrf_core.words(hypothesis), chrf_core.words(reference)
    keys_h = [token.lower() for token in tokens_h] if lowercase else tokens_h
    keys_r = [token.lower() for token in tokens_r] if lowercase else tokens_r

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


def marked_text(tokens: Marked, colour: bool) -> str:
    """Tokens joined by spaces, unmatched ones in red on a terminal, else in [brackets]."""
    if colour:
        return " ".join(token if matched else f"{ANSI_UNMATCHED}{token}{ANSI_RESET}" for token, matched in tokens)
    return " ".join(token if matched else f"[{token}]" for token, matched in tokens)


def marked_html(tokens: Marked) -> str:
    return " ".join(html.escape(token) if matched else f"<mark>{html.escape(token)}</mark>"
                    for token, matched in tokens)


# ---- SVG ------------------------------------------------------------------------------------------------------

FONT = 12
COLOURS = {"precision": "#3b6fc4", "recall": "#d9822b", "f_score": "#2e8b57"}
LABELS = {"precision": "precision", "recall": "recall", "f_score": "F"}


@dataclass
class Svg:
    """An SVG drawing built from placed elements, with its viewBox given up front."""

    width: float
    height: float
    label: str

    def __post_init__(self) -> None:
        self.parts: list[str] = []

    def rect(self, x: float, y: float, width: float, height: float, fill: str, title: str = "",
             css: str = "") -> None:
        tip = f"<title>{html.escape(title)}</title>" if title else ""
        klass = f' class="{css}"' if css else ""
        self.parts.append(f'<rect{klass} x="{x:.1f}" y="{y:.1f}" width="{max(width, 0):.1f}" '
                          f'height="{max(height, 0):.1f}" fill="{fill}">{tip}</rect>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#ccc", width: float = 1) -> None:
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{stroke}" '
                          f'stroke-width="{width}"/>')

    def circle(self, x: float, y: float, radius: float, fill: str) -> None:
        self.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{fill}"/>')

    def text(self, x: float, y: float, content: str, anchor: str = "start", size: int = FONT) -> None:
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}">'
                          f"{html.escape(content)}</text>")

    def render(self) -> str:
        # Drawn at up to 1.25x its size on wide screens; on narrow ones no smaller than 560 units wide (its
        # figure scrolls sideways instead), so the labels stay readable on a phone.
        style = f"max-width:{1.25 * self.width:.0f}px;min-width:{min(self.width, 560):.0f}px"
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width:.0f} {self.height:.0f}" '
                f'style="{style}" role="img" aria-label="{html.escape(self.label)}">' + "".join(self.parts) + "</svg>")


def text_width(content: str, size: int = FONT) -> float:
    """A generous estimate of a text's width in a sans-serif font (for placement inside the viewBox)."""
    return 0.62 * size * len(content)


def order_chart(report: dict[str, Any]) -> str:
    """Grouped bars of precision, recall and F per order, on a 0..1 axis, with the legend above the plot."""
    orders = report["orders"]
    left, top, plot_height, group, bar_width = 40, 36, 180, 66, 16
    legend = sum(16 + text_width(LABELS[key]) + 18 for key in COLOURS)
    svg = Svg(left + max(group * len(orders), legend) + 12, top + plot_height + 30,
              "precision, recall and F per n-gram order")
    x: float = left
    for key in COLOURS:
        svg.rect(x, 8, 12, 12, COLOURS[key])
        svg.text(x + 16, 18, LABELS[key])
        x += 16 + text_width(LABELS[key]) + 18
    for tick in range(0, 11, 2):
        y = top + plot_height - tick / 10 * plot_height
        svg.line(left, y, svg.width - 6, y)
        svg.text(left - 6, y + 4, f"{tick / 10:.1f}", anchor="end")
    for index, order in enumerate(orders):
        x0 = left + 8 + index * group
        for offset, key in enumerate(COLOURS):
            value = as_float(order[key])
            height = (value or 0.0) * plot_height
            shown = "n/a" if value is None else f"{value:.4f}"
            svg.rect(x0 + offset * bar_width, top + plot_height - height, bar_width - 2, height, COLOURS[key],
                     f"{order['type']} {order['n']} {LABELS[key]}: {shown}", css=key)
        svg.text(x0 + 1.5 * bar_width, top + plot_height + 18, f"{order['type']} {order['n']}", anchor="middle")
    return svg.render()


def histogram_chart(histogram: Sequence[int]) -> str:
    """Segment scores in bins of 5 points."""
    left, top, plot_width, plot_height = 44, 14, 600, 160
    svg = Svg(left + plot_width + 16, top + plot_height + 40, "histogram of segment scores")
    peak = max(histogram) or 1
    bin_width = plot_width / len(histogram)
    svg.line(left, top + plot_height, left + plot_width, top + plot_height, "#888")
    svg.line(left, top, left + plot_width, top, "#eee")
    svg.text(left - 6, top + 4, str(peak), anchor="end")
    svg.text(left - 6, top + plot_height, "0", anchor="end")
    svg.text(left + 4, top + 14, "segments", size=11)
    for index, count in enumerate(histogram):
        height = count / peak * plot_height
        low = index * 100 // len(histogram)
        svg.rect(left + index * bin_width + 1, top + plot_height - height, bin_width - 2, height, "#3b6fc4",
                 f"{low}–{low + 100 // len(histogram)}: {plural(count, 'segment')}")
    for score in range(0, 101, 25):
        svg.text(left + score / 100 * plot_width, top + plot_height + 16, str(score), anchor="middle")
    svg.text(left + plot_width / 2, top + plot_height + 34, "segment score", anchor="middle")
    return svg.render()


def interval_chart(systems: Sequence[dict[str, Any]]) -> str:
    """Each system's corpus score (dot) and its 95% bootstrap interval (line), baseline first."""
    names = [_clip(system["name"], 28) for system in systems]
    left = 16 + max(text_width(name) for name in names)
    plot_width, row, top = 420, 30, 30
    low: float = min(min(s["ci"][0], s["score"]) for s in systems)
    high: float = max(max(s["ci"][1], s["score"]) for s in systems)
    span = max(high - low, 1.0)
    low, high = low - 0.08 * span, high + 0.08 * span
    svg = Svg(left + plot_width + 70, top + row * len(systems) + 16, "scores with 95% confidence intervals")

    def at(value: float) -> float:
        return left + (value - low) / (high - low) * plot_width

    for tick in nice_ticks(low, high):
        svg.line(at(tick), top - 8, at(tick), top + row * len(systems) - 8)
        svg.text(at(tick), top - 12, f"{tick:g}", anchor="middle")
    for index, (system, name) in enumerate(zip(systems, names)):
        y = top + index * row + 8
        svg.text(left - 8, y + 4, name, anchor="end")
        svg.line(at(system["ci"][0]), y, at(system["ci"][1]), y, "#3b6fc4", 3)
        svg.circle(at(system["score"]), y, 5, "#d9822b" if index else "#222")
        svg.text(left + plot_width + 8, y + 4, f"{system['score']:.3f}")
    return svg.render()


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Round tick values inside [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    import math

    span = max(high - low, 1e-9)
    for step in sorted(m * 10**e for e in range(math.floor(math.log10(span)) - 1, math.floor(math.log10(span)) + 2)
                       for m in (1, 2, 2.5, 5)):
        first = math.ceil(low / step)
        ticks = [round(k * step, 10) for k in range(first, math.floor(high / step) + 1)]
        if len(ticks) <= most:
            return ticks
    return [low, high]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


# ---- HTML -----------------------------------------------------------------------------------------------------

STYLE = """
*{box-sizing:border-box} body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;
background:#fafafa;line-height:1.45} main{max-width:1100px;margin:0 auto;padding:1rem 1.25rem 3rem}
h1{font-size:1.6rem;margin:.5rem 0 .25rem} h2{font-size:1.15rem;margin:2rem 0 .5rem}
.meta{color:#555;margin:.2rem 0} code{background:#eee;padding:.05rem .3rem;border-radius:3px;overflow-wrap:anywhere}
figure{margin:.5rem 0;background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem;overflow-x:auto}
figure svg{width:100%;height:auto;display:block} figcaption{color:#555;font-size:.9rem;margin-top:.3rem}
.scroll{overflow-x:auto} table{border-collapse:collapse;background:#fff;font-variant-numeric:tabular-nums}
td,th{border:1px solid #ddd;padding:.25rem .6rem;text-align:right;white-space:nowrap} th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left} mark{background:#ffd6d6;color:#900;padding:0 .1rem}
.segment{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.5rem .75rem;margin:.5rem 0}
.segment p{margin:.2rem 0;overflow-wrap:anywhere} .label{color:#777;display:inline-block;min-width:6.5rem}
.significant{font-weight:600}
@media (max-width:600px){main{padding:.5rem .6rem 2rem} h1{font-size:1.3rem} td,th{padding:.2rem .35rem}
.label{display:block}}
"""


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>\n")


def _f_text(order: dict[str, Any]) -> str:
    return "–" if order["f_score"] is None else f"{_value(order, 'f_score'):.4f}"


def _order_table(report: dict[str, Any]) -> str:
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in (
            f"{o['type']} {o['n']}", o["hypothesis_ngrams"], o["reference_ngrams"], o["matching_ngrams"],
            o["precision"] or "–", o["recall"] or "–", o["f_score"] or "–",
            _f_text(o))) + "</tr>"
        for o in report["orders"]
    )
    return ('<div class="scroll"><table><thead><tr><th>order</th><th>hyp n-grams</th><th>ref n-grams</th>'
            "<th>matches</th><th>precision</th><th>recall</th><th>F (exact)</th><th>F</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>")


def _worst_section(worst: Sequence[Any], lowercase: bool) -> str:
    if not worst:
        return ""
    items = []
    for segment in worst:
        marked_h, marked_r = marked_tokens(segment.hypothesis, segment.reference, lowercase)
        items.append(
            f'<div class="segment"><p><span class="label">line {segment.line}</span>'
            f"score {chrf_core.score_text(segment.score)}</p>"
            f'<p><span class="label">hypothesis</span>{marked_html(marked_h) or "<em>(empty)</em>"}</p>'
            f'<p><span class="label">reference</span>{marked_html(marked_r) or "<em>(empty)</em>"}</p></div>'
        )
    return (f"<h2>The {plural(len(worst), 'lowest-scoring segment')}</h2><p class=\"meta\">Words marked "
            "<mark>like this</mark> have no match on the other side (word unigrams, clipped).</p>" + "".join(items))


def score_page(report: dict[str, Any], hypothesis_name: str, reference_name: str, facts: Any = None,
               histogram: Sequence[int] | None = None, worst: Sequence[Any] = ()) -> str:
    """A self-contained report for one system: the score, both files, the per-order chart and table, the
    distribution of segment scores, the worst segments, and the diagnosis."""
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in diagnosis(report, facts))
    body = [
        f"<h1>{html.escape(metric_name(report))} = <span id=\"score\">{report['score']}</span></h1>",
        f'<p class="meta">hypotheses <code>{html.escape(hypothesis_name)}</code> against references '
        f"<code>{html.escape(reference_name)}</code></p>",
        f'<p class="meta">{plural(report["segment_count"], "segment")}, '
        f"{plural(report['effective_order_count'], 'effective order')}; exact score "
        f"<code>{report['score_fraction']}</code></p>",
        f'<p class="meta">signature <code>{html.escape(signature(report))}</code></p>',
        f"<h2>Precision, recall and F per order</h2><figure>{order_chart(report)}<figcaption>Bars run from 0 to 1; "
        "an order without n-grams on one side has no bars.</figcaption></figure>",
        _order_table(report),
    ]
    if histogram is not None:
        body.append(f"<h2>Segment scores</h2><figure>{histogram_chart(histogram)}<figcaption>Each segment scored "
                    "on its own, in bins of 5 points.</figcaption></figure>")
    body.append(_worst_section(worst, report["lowercase"]))
    body.append(f"<h2>What stands out</h2><ul>{notes}</ul>")
    return _page(f"{metric_name(report)} {report['score']}: {hypothesis_name}", "".join(body))


def compare_page(result: dict[str, Any], reference_name: str, reports: Sequence[dict[str, Any]],
                 method: str) -> str:
    """A self-contained comparison: the systems with their intervals, deltas and p-values, and each system's
    per-order F."""
    systems = result["systems"]
    rows = []
    for system in systems:
        delta = "–" if system["p_value"] is None else f"{system['delta']:+.4f}"
        p_value = "–" if system["p_value"] is None else f"{system['p_value']:.4f}"
        klass = ' class="significant"' if system["p_value"] is not None and system["p_value"] < 0.05 else ""
        mark = " *" if klass else ""
        rows.append(f"<tr{klass}><td>{html.escape(system['name'])}</td><td>{system['score']:.6f}</td>"
                    f"<td>{system['ci'][0]:.4f} – {system['ci'][1]:.4f}</td><td>{delta}</td>"
                    f"<td>{p_value}{mark}</td></tr>")
    labels = [f"{o['type']} {o['n']}" for o in reports[0]["orders"]]
    order_rows = "".join(
        f"<tr><td>{html.escape(system['name'])}</td>"
        + "".join(f"<td>{_f_text(o)}</td>" for o in report["orders"]) + "</tr>"
        for system, report in zip(systems, reports)
    )
    body = [
        f"<h1>{html.escape(metric_name(reports[0]))}: {plural(len(systems) - 1, 'system')} against "
        f"<code>{html.escape(result['baseline'])}</code></h1>",
        f'<p class="meta">references <code>{html.escape(reference_name)}</code>; '
        f"{plural(reports[0]['segment_count'], 'segment')}; {html.escape(method)}</p>",
        f'<p class="meta">signature <code>{html.escape(result["signature"])}</code></p>',
        f"<h2>Scores and 95% intervals</h2><figure>{interval_chart(systems)}<figcaption>Dots are corpus scores, "
        "lines the 95% bootstrap intervals; the baseline is first.</figcaption></figure>",
        '<div class="scroll"><table><thead><tr><th>system</th><th>score</th><th>95% CI</th><th>Δ vs baseline</th>'
        f"<th>p-value</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>",
        '<p class="meta">* p &lt; 0.05: the difference from the baseline is unlikely under the null hypothesis '
        "that the systems are equally good.</p>",
        '<h2>F per order</h2><div class="scroll"><table><thead><tr><th>system</th>'
        + "".join(f"<th>{label}</th>" for label in labels) + f"</tr></thead><tbody>{order_rows}</tbody></table></div>",
    ]
    return _page(f"{metric_name(reports[0])} comparison: {result['baseline']}", "".join(body))
