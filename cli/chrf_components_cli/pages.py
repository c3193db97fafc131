"""Reports as self-contained HTML pages (inline CSS and SVG, no scripts, no network): every SVG element is placed
inside its viewBox, so nothing is clipped at any width."""

from __future__ import annotations

import html
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chrf_core

from .lines import plural
from .text import diagnosis, marked_tokens, value


def marked_html(tokens: list[tuple[str, bool]]) -> str:
    return " ".join(html.escape(token) if matched else f"<mark>{html.escape(token)}</mark>"
                    for token, matched in tokens)




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
        # Drawn at up to 1.25x its size on wide screens; on narrow ones at no less than 3/4 of it, so that text
        # stays at 9 px or more (a figure wider than the screen then scrolls sideways).
        style = f"max-width:{1.25 * self.width:.0f}px;min-width:{0.75 * self.width:.0f}px"
        return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.width:.0f} {self.height:.0f}" '
                f'style="{style}" role="img" aria-label="{html.escape(self.label)}">' + "".join(self.parts) + "</svg>")


def text_width(content: str, size: int = FONT) -> float:
    """A generous estimate of a text's width in a sans-serif font (for placement inside the viewBox)."""
    return 0.62 * size * len(content)


def order_chart(report: chrf_core.Report) -> str:
    """Grouped bars of precision, recall and F per order, on a 0..1 axis, with the legend above the plot."""
    orders = report.orders
    left, top, plot_height, group, bar_width = 34, 36, 180, 48, 13
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
            number = value(order.fractions()[offset])
            height = (number or 0.0) * plot_height
            shown = "n/a" if number is None else f"{number:.4f}"
            svg.rect(x0 + offset * bar_width, top + plot_height - height, bar_width - 2, height, COLOURS[key],
                     f"{order.type} {order.n} {LABELS[key]}: {shown}", css=key)
        svg.text(x0 + 1.5 * bar_width, top + plot_height + 18, f"{order.type} {order.n}", anchor="middle")
    return svg.render()


def histogram_chart(histogram: Sequence[int]) -> str:
    """Segment scores in bins of 5 points."""
    left, top, plot_width, plot_height = 34, 14, 380, 160
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
    """Each system's corpus score (dot) and its 95% bootstrap interval (line), baseline first; each name above
    its line, so long file names take no width from the plot."""
    left, plot_width, row, top = 12, 320, 40, 30
    low: float = min(min(s["ci"][0], s["score"]) for s in systems)
    high: float = max(max(s["ci"][1], s["score"]) for s in systems)
    span = max(high - low, 1.0)
    low, high = low - 0.08 * span, high + 0.08 * span
    svg = Svg(left + plot_width + 56, top + row * len(systems), "scores with 95% confidence intervals")

    def at(value: float) -> float:
        return left + (value - low) / (high - low) * plot_width

    for tick in nice_ticks(low, high):
        svg.line(at(tick), top - 8, at(tick), top + row * len(systems) - 8)
        svg.text(at(tick), top - 12, f"{tick:g}", anchor="middle")
    for index, system in enumerate(systems):
        y = top + index * row + 22
        prefix = "baseline: " if index == 0 else f"{index}: "
        svg.text(left, y - 9, prefix + _clip(system["name"], int((plot_width + 50) / text_width("x")) - len(prefix)))
        svg.line(at(system["ci"][0]), y, at(system["ci"][1]), y, "#3b6fc4", 3)
        svg.circle(at(system["score"]), y, 5, "#d9822b" if index else "#222")
        svg.text(left + plot_width + 8, y + 4, f"{system['score']:.3f}")
    return svg.render()


def nice_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Round tick values inside [low, high]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    span = max(high - low, 1e-9)
    for step in sorted(m * 10**e for e in range(math.floor(math.log10(span)) - 1, math.floor(math.log10(span)) + 2)
                       for m in (1, 2, 2.5, 5)):
        first = math.ceil(low / step)
        ticks = [round(k * step, 10) for k in range(first, math.floor(high / step) + 1)]
        if len(ticks) <= most:
            return ticks
    return [low, high]


def _clip(text: str, limit: int) -> str:
    """The end of a text (a path's file name) when it is longer than ``limit``."""
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
td.name{white-space:normal;overflow-wrap:anywhere;min-width:6rem;text-align:left}
@media (max-width:600px){main{padding:.5rem .6rem 2rem} h1{font-size:1.3rem} table{font-size:.8rem}
td,th{padding:.15rem .25rem} th{white-space:normal} .wide{display:none} .label{display:block}}
"""


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body><main>{body}</main></body></html>\n")


def _decimal(fraction: Any) -> str:
    return "–" if fraction is None else f"{float(fraction):.4f}"


def _exact(fraction: Any) -> str:
    return "–" if fraction is None else chrf_core.fraction_text(fraction)


def _order_table(report: chrf_core.Report) -> str:
    """Counts and scores per order; the exact fractions in columns a narrow screen leaves out."""
    rows = "".join(
        f"<tr><td>{o.type} {o.n}</td><td>{o.hypothesis_ngrams}</td><td>{o.reference_ngrams}</td>"
        f"<td>{o.matching_ngrams}</td>" + "".join(f"<td>{_decimal(value)}</td>" for value in o.fractions())
        + "".join(f'<td class="wide">{_exact(value)}</td>' for value in o.fractions()) + "</tr>"
        for o in report.orders
    )
    return ('<div class="scroll"><table><thead><tr><th>order</th><th title="hypothesis n-grams">hyp</th>'
            '<th title="reference n-grams">ref</th><th title="matching n-grams (clipped)">match</th>'
            '<th>P</th><th>R</th><th>F</th><th class="wide">P (exact)</th>'
            '<th class="wide">R (exact)</th><th class="wide">F (exact)</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>")


def _worst_section(worst: Sequence[Any], settings: Any) -> str:
    if not worst:
        return ""
    items = []
    for segment in worst:
        marked_h, marked_r = marked_tokens(segment.hypothesis, segment.reference, settings.lowercase,
                                           settings.normalize)
        items.append(
            f'<div class="segment"><p><span class="label">line {segment.line}</span>'
            f"score {chrf_core.score_text(segment.score)}</p>"
            f'<p><span class="label">hypothesis</span>{marked_html(marked_h) or "<em>(empty)</em>"}</p>'
            f'<p><span class="label">reference</span>{marked_html(marked_r) or "<em>(empty)</em>"}</p></div>'
        )
    return (f"<h2>The {plural(len(worst), 'lowest-scoring segment')}</h2><p class=\"meta\">Words marked "
            "<mark>like this</mark> have no match on the other side (word unigrams, clipped).</p>" + "".join(items))


def score_page(report: chrf_core.Report, hypothesis_name: str, reference_name: str, facts: Any = None,
               histogram: Sequence[int] | None = None, worst: Sequence[Any] = ()) -> str:
    """A self-contained report for one system: the score, both files, the per-order chart and table, the
    distribution of segment scores, the worst segments, and the diagnosis."""
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in diagnosis(report, facts))
    score = chrf_core.score_text(report.exact)
    body = [
        f"<h1>{html.escape(report.settings.name)} = <span id=\"score\">{score}</span></h1>",
        f'<p class="meta">hypotheses <code>{html.escape(hypothesis_name)}</code> against references '
        f"<code>{html.escape(reference_name)}</code></p>",
        f'<p class="meta">{plural(report.segment_count, "segment")}, '
        f"{plural(report.effective_order_count, 'effective order')}; exact score "
        f"<code>{chrf_core.fraction_text(report.exact)}</code></p>",
        f'<p class="meta">signature <code>{html.escape(report.settings.signature)}</code></p>',
        f"<h2>Precision, recall and F per order</h2><figure>{order_chart(report)}<figcaption>Bars run from 0 to 1; "
        "an order without n-grams on one side has no bars.</figcaption></figure>",
        _order_table(report),
    ]
    if histogram is not None:
        body.append(f"<h2>Segment scores</h2><figure>{histogram_chart(histogram)}<figcaption>Each segment scored "
                    "on its own, in bins of 5 points.</figcaption></figure>")
    body.append(_worst_section(worst, report.settings))
    body.append(f"<h2>What stands out</h2><ul>{notes}</ul>")
    return _page(f"{report.settings.name} {score}: {hypothesis_name}", "".join(body))


def compare_page(result: dict[str, Any], reference_name: str, reports: Sequence[chrf_core.Report],
                 method: str) -> str:
    """A self-contained comparison: the systems with their intervals, deltas and p-values, and each system's
    per-order F."""
    systems = result["systems"]
    rows: list[str] = []
    for system in systems:
        delta = "–" if system["p_value"] is None else f"{system['delta']:+.4f}"
        p_value = "–" if system["p_value"] is None else f"{system['p_value']:.4f}"
        klass = ' class="significant"' if system["p_value"] is not None and system["p_value"] < 0.05 else ""
        mark = " *" if klass else ""
        label = "baseline" if not rows else f"{len(rows)}"
        rows.append(f'<tr{klass}><td class="name" title="{html.escape(system["name"])}">{label}: '
                    f"{html.escape(os.path.basename(system['name']) or system['name'])}</td>"
                    f"<td>{system['score']:.6f}</td><td class=\"wide\">{system['ci'][0]:.3f} – "
                    f"{system['ci'][1]:.3f}</td><td>{delta}</td><td>{p_value}{mark}</td></tr>")
    labels = ["baseline", *map(str, range(1, len(systems)))]
    files = "".join(f"<li>{label}: <code>{html.escape(system['name'])}</code></li>"
                    for label, system in zip(labels, systems))
    order_rows = "".join(  # one row per order, one column per system: as narrow as the systems are few
        f"<tr><td>{order.type} {order.n}</td>"
        + "".join(f"<td>{_decimal(report.orders[index].fractions()[2])}</td>" for report in reports) + "</tr>"
        for index, order in enumerate(reports[0].orders)
    )
    body = [
        f"<h1>{html.escape(reports[0].settings.name)}: {plural(len(systems) - 1, 'system')} against the "
        "baseline</h1>",
        f'<ul class="meta">{files}<li>references: <code>{html.escape(reference_name)}</code></li></ul>',
        f'<p class="meta">{plural(reports[0].segment_count, "segment")}; {html.escape(method)}</p>',
        f'<p class="meta">signature <code>{html.escape(result["signature"])}</code></p>',
        f"<h2>Scores and 95% intervals</h2><figure>{interval_chart(systems)}<figcaption>Dots are corpus scores, "
        "lines the 95% bootstrap intervals; the baseline is first.</figcaption></figure>",
        '<div class="scroll"><table><thead><tr><th>system</th><th>score</th><th class="wide">95% CI</th>'
        "<th>Δ vs baseline</th>"
        f"<th>p-value</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>",
        '<p class="meta">* p &lt; 0.05: the difference from the baseline is unlikely under the null hypothesis '
        "that the systems are equally good.</p>",
        '<h2>F per order</h2><div class="scroll"><table><thead><tr><th>order</th>'
        + "".join(f"<th>{label}</th>" for label in labels) + f"</tr></thead><tbody>{order_rows}</tbody></table></div>",
    ]
    return _page(f"{reports[0].settings.name} comparison: {result['baseline']}", "".join(body))
