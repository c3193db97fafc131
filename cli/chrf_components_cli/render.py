"""Human-facing views of a report: the table, the signature, a plain-language diagnosis, and an HTML page."""

from __future__ import annotations

import html
from fractions import Fraction
from typing import Any

BAR_WIDTH = 20
VERSION = "1.0.0"


def as_float(fraction: str | None) -> float | None:
    return None if fraction is None else float(Fraction(fraction))


def metric_name(report: dict[str, Any]) -> str:
    """chrF2, chrF2+ (word unigrams), chrF2++ (word bigrams) as sacreBLEU names them; chrF2+w3 beyond."""
    word_order = report["word_order"]
    suffix = {0: "", 1: "+", 2: "++"}.get(word_order, f"+w{word_order}")
    name = f"chrF{report['beta']}{suffix}"
    return name if report["char_order"] else f"wordF{report['beta']}"


def signature(report: dict[str, Any]) -> str:
    """A sacreBLEU-style signature of every setting that changes the number."""
    return "|".join(
        [
            metric_name(report),
            f"nc:{report['char_order']}",
            f"nw:{report['word_order']}",
            f"space:{'yes' if report['include_whitespace'] else 'no'}",
            f"case:{'lc' if report['lowercase'] else 'mixed'}",
            f"avg:{report['averaging']}",
            f"version:{VERSION}",
        ]
    )


def bar(value: float | None, width: int = BAR_WIDTH) -> str:
    if value is None:
        return "·" * width
    filled = round(value * width)
    return "█" * filled + "░" * (width - filled)


def _number(value: float | None) -> str:
    return "     -" if value is None else f"{value:6.4f}"


def table(report: dict[str, Any]) -> str:
    """The report as a fixed-width table, one row per order, with an F-score bar."""
    lines = [
        f"{metric_name(report)} = {report['score']}   ({report['segment_count']} segments, "
        f"{report['effective_order_count']} effective orders)",
        "",
        f"  {'order':<8}{'hyp':>9}{'ref':>9}{'match':>9}  {'P':>6}  {'R':>6}  {'F':>6}  F",
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
    notes = diagnosis(report)
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


def diagnosis(report: dict[str, Any]) -> list[str]:
    """A few plain-language observations about the weakest orders (rules of thumb, not verdicts)."""
    notes: list[str] = []
    effective = [o for o in report["orders"] if o["effective"]]
    if not effective:
        return ["No order has n-grams on both sides: the texts are too short for these orders."]
    empty = [o for o in report["orders"] if not o["effective"]]
    if empty:
        notes.append(
            f"{len(empty)} order(s) have no n-grams on one side ({', '.join(o['type'] + str(o['n']) for o in empty)}): "
            "segments are shorter than n; they count as 0 under per_order_f and are skipped under precision_recall."
        )
    weakest = sorted(effective, key=lambda o: as_float(o["f_score"]) or 0.0)[:2]
    notes.append(
        "Weakest orders: "
        + ", ".join(f"{o['type']} {o['n']} (F {as_float(o['f_score']):.3f})" for o in weakest)
        + "."
    )
    chars = [o for o in effective if o["type"] == "char"]
    long_chars = [o for o in chars if o["n"] >= 4] or chars[-2:]
    if long_chars:
        precision = _mean([as_float(o["precision"]) for o in long_chars])
        recall = _mean([as_float(o["recall"]) for o in long_chars])
        span = _span(long_chars)
        if precision < 0.8 * recall and recall - precision > 0.05:
            notes.append(
                f"Precision ({precision:.2f}) is well below recall ({recall:.2f}) at {span}: the hypothesis adds "
                "material the reference lacks (insertions, wordy or wrong words)."
            )
        elif recall < 0.8 * precision and precision - recall > 0.05:
            notes.append(
                f"Recall ({recall:.2f}) is well below precision ({precision:.2f}) at {span}: the hypothesis misses "
                "material the reference has (omissions, too short an output)."
            )
    if len(chars) >= 2:
        first, last = as_float(chars[0]["f_score"]), as_float(chars[-1]["f_score"])
        if first > 0.6 and last < 0.5 * first:
            notes.append(
                f"Short character sequences match (char 1: F {first:.2f}) but long ones rarely do "
                f"(char {chars[-1]['n']}: F {last:.2f}): the right characters and stems, but different word forms, "
                "spelling or order."
            )
    words = {o["n"]: o for o in effective if o["type"] == "word"}
    if 1 in words and 2 in words:
        unigram_recall, bigram_recall = as_float(words[1]["recall"]), as_float(words[2]["recall"])
        if bigram_recall < 0.1 and unigram_recall >= 0.3:
            notes.append(
                f"Word-bigram recall is near zero ({bigram_recall:.2f}) while word unigrams match "
                f"({unigram_recall:.2f}): the words are there, but word order or wording around them differs."
            )
    if 1 in words and as_float(words[1]["recall"]) < 0.3:
        notes.append(
            f"Few reference words appear in the hypothesis (word-unigram recall {as_float(words[1]['recall']):.2f}):"
            " the wording differs, even where characters overlap."
        )
    return notes


def html_page(report: dict[str, Any], title: str = "chrF components") -> str:
    """A self-contained HTML report: an inline SVG chart of P, R and F per order, and the table."""
    orders = report["orders"]
    series = [("precision", "#3b7dd8"), ("recall", "#e08a2e"), ("f_score", "#2f9e55")]
    group, bar_width, height, top = 3 * 16 + 20, 16, 220, 20
    width = 60 + group * len(orders)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 60}" role="img" '
        f'aria-label="precision, recall and F per order">',
    ]
    for tick in range(0, 11, 2):
        y = top + height - tick / 10 * height
        parts.append(f'<line x1="40" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="34" y="{y + 4:.1f}" text-anchor="end" font-size="11">{tick / 10:.1f}</text>')
    for index, order in enumerate(orders):
        x0 = 50 + index * group
        for offset, (key, color) in enumerate(series):
            value = as_float(order[key])
            bar_height = (value or 0.0) * height
            label = f"{order['type']} {order['n']} {key}: {'n/a' if value is None else f'{value:.4f}'}"
            parts.append(
                f'<rect class="{key}" x="{x0 + offset * bar_width}" y="{top + height - bar_height:.1f}" '
                f'width="{bar_width - 2}" height="{bar_height:.1f}" fill="{color}"><title>{label}</title></rect>'
            )
        parts.append(
            f'<text x="{x0 + 1.5 * bar_width:.0f}" y="{top + height + 16}" text-anchor="middle" font-size="12">'
            f"{order['type'][0]}{order['n']}</text>"
        )
    legend_x = 50
    for key, color in series:
        parts.append(f'<rect x="{legend_x}" y="{top + height + 30}" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{legend_x + 16}" y="{top + height + 41}" font-size="12">{key}</text>')
        legend_x += 90
    parts.append("</svg>")
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(cell))}</td>"
            for cell in (
                f"{o['type']} {o['n']}", o["hypothesis_ngrams"], o["reference_ngrams"], o["matching_ngrams"],
                o["precision"] or "–", o["recall"] or "–", o["f_score"] or "–",
                "–" if o["f_score"] is None else f"{as_float(o['f_score']):.4f}",
            )
        )
        + "</tr>"
        for o in orders
    )
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in diagnosis(report))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; color: #222; }}
table {{ border-collapse: collapse; margin-top: 1rem; }}
td, th {{ border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; font-variant-numeric: tabular-nums; }}
th {{ background: #f3f3f3; }} code {{ background: #f3f3f3; padding: 0.1rem 0.3rem; }}
</style></head><body>
<h1>{html.escape(metric_name(report))} = <span id="score">{report['score']}</span></h1>
<p>{report['segment_count']} segments, {report['effective_order_count']} effective orders;
exact score <code>{report['score_fraction']}</code>; signature <code>{html.escape(signature(report))}</code></p>
{''.join(parts)}
<table><thead><tr><th>order</th><th>hyp n-grams</th><th>ref n-grams</th><th>matches</th><th>precision</th>
<th>recall</th><th>F (exact)</th><th>F</th></tr></thead><tbody>{rows}</tbody></table>
<h2>What stands out</h2><ul>{notes}</ul>
</body></html>
"""
