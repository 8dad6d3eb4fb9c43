"""Charts for the HTML report as inline SVG strings, drawn in Python: no script, no external file.

Every text that comes from data is escaped with :func:`html.escape`, so a question or a file name
can never become markup. Charts carry ``role="img"``, an ``aria-label`` and ``<title>`` tooltips.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from answer_eval.reports.formatting import fixed

__all__ = ["FAILURE_COLOURS", "SYSTEM_COLOURS", "IntervalRow", "failure_chart", "heat_map", "interval_chart"]

SYSTEM_COLOURS = ("#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#4b5563", "#be185d")
"""One colour per system, in order (repeats after eight)."""

FAILURE_COLOURS = {
    "correct": "#16a34a",
    "wrong": "#dc2626",
    "not_in_document": "#f59e0b",
    "refusal": "#a855f7",
    "budget_stop": "#0ea5e9",
    "parse_failure": "#64748b",
    "error": "#111827",
}
"""The colour of each answer-contains outcome; other kinds get grey."""

_FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def _attr(value: object) -> str:
    return escape(str(value), quote=True)


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class IntervalRow:
    """One row of the interval chart: a score with its interval.

    :param label: The row's label (evaluator and system).
    :param score: The score, in [0, 1].
    :param low: Lower end of the interval.
    :param high: Upper end of the interval.
    :param colour_index: Which system colour to draw it in.
    """

    label: str
    score: float
    low: float
    high: float
    colour_index: int = 0


def interval_chart(rows: Sequence[IntervalRow], title: str, width: int = 640) -> str:
    """Scores with their intervals on a 0 to 1 axis, one row each: a dot and a whisker."""
    left, right, top, row_height = 230, 70, 28, 24
    plot = width - left - right
    height = top + row_height * len(rows) + 26
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart interval-chart" role="img" '
        f'aria-label="{_attr(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
    ]
    bottom = top + row_height * len(rows)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = left + plot * tick
        parts.append(
            f'<line x1="{_number(x)}" y1="{top - 6}" x2="{_number(x)}" y2="{bottom}" '
            'stroke="#e5e7eb" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{_number(x)}" y="{bottom + 16}" text-anchor="middle" fill="#6b7280" {_FONT}>{tick:g}</text>'
        )
    for index, row in enumerate(rows):
        y = top + row_height * index + row_height / 2
        colour = SYSTEM_COLOURS[row.colour_index % len(SYSTEM_COLOURS)]
        x_low, x_high, x_score = (left + plot * min(max(value, 0.0), 1.0) for value in (row.low, row.high, row.score))
        tip = f"{row.label}: {row.score:.3f} [{row.low:.3f}, {row.high:.3f}]"
        parts.append(f'<g class="interval"><title>{escape(tip)}</title>')
        parts.append(
            f'<text x="{left - 10}" y="{_number(y + 4)}" text-anchor="end" fill="#111827" {_FONT}>'
            f"{escape(row.label)}</text>"
        )
        parts.append(
            f'<line x1="{_number(x_low)}" y1="{_number(y)}" x2="{_number(x_high)}" y2="{_number(y)}" '
            f'stroke="{colour}" stroke-width="3" stroke-linecap="round"/>'
        )
        parts.append(f'<circle cx="{_number(x_score)}" cy="{_number(y)}" r="5" fill="{colour}"/>')
        parts.append(
            f'<text x="{width - right + 8}" y="{_number(y + 4)}" fill="#374151" {_FONT}>{row.score:.3f}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def failure_chart(systems: Sequence[tuple[str, Mapping[str, int]]], title: str, width: int = 720) -> str:
    """One stacked bar per system: its right answers and each failure kind, as shares of its items."""
    left, right, top, bar_height, gap = 170, 20, 10, 26, 12
    plot = width - left - right
    kinds = list(dict.fromkeys(kind for _, counts in systems for kind, count in counts.items() if count))
    legend_top = top + (bar_height + gap) * len(systems) + 6
    legend: list[tuple[str, int, int]] = []  # kind, x, line
    x_legend, line = left, 0
    for kind in kinds:
        room = 30 + 7 * len(kind)
        if x_legend + room > width and x_legend > left:
            x_legend, line = left, line + 1
        legend.append((kind, x_legend, line))
        x_legend += room
    height = legend_top + 24 * (line + 1) + 6
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart failure-chart" role="img" '
        f'aria-label="{_attr(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
    ]
    for index, (name, counts) in enumerate(systems):
        y = top + (bar_height + gap) * index
        total = sum(counts.values()) or 1
        parts.append(
            f'<text x="{left - 10}" y="{y + bar_height / 2 + 4:g}" text-anchor="end" fill="#111827" {_FONT}>'
            f"{escape(name)}</text>"
        )
        x = float(left)
        for kind in kinds:
            count = counts.get(kind, 0)
            if not count:
                continue
            span = plot * count / total
            colour = FAILURE_COLOURS.get(kind, "#9ca3af")
            tip = f"{name}: {kind} {count} of {total} ({count / total:.1%})"
            parts.append(
                f'<g class="segment" data-kind="{_attr(kind)}"><title>{escape(tip)}</title>'
                f'<rect x="{_number(x)}" y="{y}" width="{_number(span)}" height="{bar_height}" fill="{colour}"/>'
            )
            if span >= 28:
                ink = "#ffffff" if kind != "not_in_document" else "#111827"
                parts.append(
                    f'<text x="{_number(x + span / 2)}" y="{y + bar_height / 2 + 4:g}" text-anchor="middle" '
                    f'fill="{ink}" {_FONT}>{count}</text>'
                )
            parts.append("</g>")
            x += span
    for kind, x, row in legend:
        y = legend_top + 24 * row
        parts.append(
            f'<rect x="{x}" y="{y}" width="12" height="12" fill="{FAILURE_COLOURS.get(kind, "#9ca3af")}"/>'
            f'<text x="{x + 17}" y="{y + 10}" fill="#374151" {_FONT}>{escape(kind)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _heat(value: float) -> str:
    """White at agreement 0.5 or below, deep blue at 1."""
    t = min(max((value - 0.5) / 0.5, 0.0), 1.0)
    low, high = (255, 255, 255), (29, 78, 216)
    red, green, blue = (round(a + (b - a) * t) for a, b in zip(low, high, strict=True))
    return f"#{red:02x}{green:02x}{blue:02x}"


def heat_map(
    names: Sequence[str], agreement: Sequence[Sequence[float]], kappa: Sequence[Sequence[float]], title: str
) -> str:
    """The agreement matrix as a heat map: each cell the share of items two verdict lists agree on, and kappa."""
    cell, left, top = 64, 90, 70
    size = len(names)
    width, height = left + cell * size + 10, top + cell * size + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart heat-map" role="img" aria-label="{_attr(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
    ]
    for index, name in enumerate(names):
        x = left + cell * index + cell / 2
        parts.append(
            f'<text x="{_number(x)}" y="{top - 10}" text-anchor="start" '
            f'transform="rotate(-35 {_number(x)} {top - 10})" '
            f'fill="#111827" {_FONT}>{escape(name)}</text>'
        )
        parts.append(
            f'<text x="{left - 8}" y="{_number(top + cell * index + cell / 2 + 4)}" text-anchor="end" '
            f'fill="#111827" {_FONT}>{escape(name)}</text>'
        )
    for row in range(size):
        for column in range(size):
            value = agreement[row][column]
            x, y = left + cell * column, top + cell * row
            ink = "#ffffff" if value >= 0.8 else "#111827"
            tip = f"{names[row]} and {names[column]}: agree on {value:.1%}, Cohen's kappa {fixed(kappa[row][column])}"
            parts.append(
                f'<g class="cell"><title>{escape(tip)}</title>'
                f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{_heat(value)}" stroke="#e5e7eb"/>'
                f'<text x="{x + cell / 2 - 1:g}" y="{y + cell / 2 - 2:g}" text-anchor="middle" fill="{ink}" '
                f'font-family="system-ui, sans-serif" font-size="14" font-weight="600">{value:.2f}</text>'
                f'<text x="{x + cell / 2 - 1:g}" y="{y + cell / 2 + 14:g}" text-anchor="middle" fill="{ink}" '
                f'font-family="system-ui, sans-serif" font-size="10">κ {fixed(kappa[row][column], 2)}</text></g>'
            )
    parts.append("</svg>")
    return "".join(parts)
