"""Charts for the HTML report as inline SVG strings, drawn in Python: no script, no external file.

Every text that comes from data is escaped with :func:`html.escape`, so a question or a file name
can never become markup. Charts carry ``role="img"``, an ``aria-label`` and ``<title>`` tooltips.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from answer_eval.evaluators.judge.guarantee import CurvePoint
from answer_eval.stats.written_numbers import fixed

__all__ = [
    "FAILURE_COLOURS",
    "MARK_COLOURS",
    "SYSTEM_COLOURS",
    "CurveMark",
    "IntervalRow",
    "coverage_chart",
    "failure_chart",
    "heat_map",
    "interval_chart",
]

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


MARK_COLOURS = {"run": "#dc2626", "in_sample": "#b45309"}
"""The colour of a threshold marked on the agreement-coverage curve, by kind."""

_CURVE, _BOUND = "#2563eb", "#93c5fd"
_TIP_EVERY = 5  # a hover point every fifth threshold of the curve (0.05 apart)


@dataclass(frozen=True)
class CurveMark:
    """A threshold marked on the agreement-coverage chart.

    :param share: The share of verdicts it keeps (x).
    :param agreement: Their agreement with people (y).
    :param label: What it is, in words (the legend and the tooltip).
    :param kind: ``"run"`` or ``"in_sample"`` (its colour, :data:`MARK_COLOURS`).
    """

    share: float
    agreement: float
    label: str
    kind: str


def _floor_tenth(value: float) -> float:
    return math.floor(value * 10 + 1e-9) / 10


@dataclass(frozen=True)
class _Frame:
    """Where the coverage chart's plot sits and how values map onto it."""

    left: float
    top: float
    width: float
    height: float
    floor: float  # the agreement at the foot of the y axis

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def x(self, share: float) -> float:
        return self.left + self.width * min(max(share, 0.0), 1.0)

    def y(self, value: float) -> float:
        return self.bottom - self.height * (min(max(value, self.floor), 1.0) - self.floor) / (1.0 - self.floor)


def coverage_chart(
    points: Sequence[CurvePoint], marks: Sequence[CurveMark], title: str, delta: float, width: int = 640
) -> str:
    """The agreement-coverage curve: share of verdicts kept (x) against their agreement with people (y).

    A solid line for the kept agreement, a dashed one for its corrected lower bound at ``delta``
    (the bound the threshold test reads; a point whose bound is ``nan`` is not tested and has none),
    a hover point every 0.05 of threshold, and each mark as a vertical line and a ringed dot, named
    in the legend below. The y axis starts at the tenth below the lowest agreement (and the lowest
    bound of a quarter or more of the verdicts); the bound is drawn where it is tested and above
    the axis's foot (with a handful of verdicts kept it is near 0).
    """
    drawn = [point for point in points if point.kept]
    # The axis starts at the tenth below the lowest agreement and the bound of a quarter or more of the
    # verdicts: the bound of a handful is near 0 and would flatten the rest (it is cut off there).
    shown = [point.kept_agreement for point in drawn]
    shown += [point.lower_bound for point in drawn if point.kept_share >= 0.25 and math.isfinite(point.lower_bound)]
    floor = min(0.9, _floor_tenth(min(shown, default=0.5)))
    frame = _Frame(56, 14, width - 56 - 20, 230, floor)
    legend = [("line", "kept agreement (confidence ≥ threshold)", _CURVE)]
    legend.append(("dash", f"its lower bound at δ = {delta:g}, as the threshold test reads it", _BOUND))
    legend += [("mark", mark.label, MARK_COLOURS.get(mark.kind, "#111827")) for mark in marks]
    height = round(frame.bottom) + 44 + 20 * len(legend)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart coverage-chart" role="img" '
        f'aria-label="{_attr(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        *_coverage_axes(frame),
    ]
    bound = [point for point in drawn if point.lower_bound >= floor]  # nan (not tested) is never ≥
    lines = (
        ("bound", [(p.kept_share, p.lower_bound) for p in bound], _BOUND, ' stroke-dasharray="6 4"'),
        ("agreement", [(p.kept_share, p.kept_agreement) for p in drawn], _CURVE, ""),
    )
    for css, xy, colour, dash in lines:
        if xy:
            path = " ".join(
                f"{'M' if i == 0 else 'L'}{_number(frame.x(x))} {_number(frame.y(y))}" for i, (x, y) in enumerate(xy)
            )
            parts.append(f'<path class="{css}" d="{path}" fill="none" stroke="{colour}" stroke-width="2.5"{dash}/>')
    parts.extend(_curve_tips(drawn, frame))
    for mark in marks:
        colour = MARK_COLOURS.get(mark.kind, "#111827")
        x, y = frame.x(mark.share), frame.y(mark.agreement)
        tip = f"{mark.label}: keeps {mark.share:.1%} of the verdicts, agreement {mark.agreement:.3f}"
        parts.append(
            f'<g class="mark" data-kind="{_attr(mark.kind)}"><title>{escape(tip)}</title>'
            f'<line x1="{_number(x)}" y1="{frame.top:g}" x2="{_number(x)}" y2="{frame.bottom:g}" stroke="{colour}" '
            'stroke-width="1.5" stroke-dasharray="3 3"/>'
            f'<circle cx="{_number(x)}" cy="{_number(y)}" r="6" fill="#ffffff" stroke="{colour}" stroke-width="3"/></g>'
        )
    parts.extend(_coverage_legend(legend, frame))
    parts.append("</svg>")
    return "".join(parts)


def _coverage_axes(frame: _Frame) -> list[str]:
    """The grid, the tick labels and the axis titles of the coverage chart."""
    parts = []
    right = frame.left + frame.width
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _number(frame.x(tick))
        parts.append(f'<line x1="{x}" y1="{frame.top:g}" x2="{x}" y2="{frame.bottom:g}" stroke="#e5e7eb"/>')
        parts.append(
            f'<text x="{x}" y="{frame.bottom + 16:g}" text-anchor="middle" fill="#6b7280" {_FONT}>{tick:.0%}</text>'
        )
    for step in range(round(frame.floor * 10), 11):
        y = _number(frame.y(step / 10))
        parts.append(f'<line x1="{frame.left:g}" y1="{y}" x2="{right:g}" y2="{y}" stroke="#e5e7eb"/>')
        parts.append(
            f'<text x="{frame.left - 6:g}" y="{_number(frame.y(step / 10) + 4)}" text-anchor="end" fill="#6b7280" '
            f"{_FONT}>{step / 10:.1f}</text>"
        )
    middle = frame.top + frame.height / 2
    parts.append(
        f'<text x="{frame.left + frame.width / 2:g}" y="{frame.bottom + 34:g}" text-anchor="middle" fill="#374151" '
        f"{_FONT}>share of verdicts kept</text>"
        f'<text x="14" y="{middle:g}" text-anchor="middle" fill="#374151" {_FONT} '
        f'transform="rotate(-90 14 {middle:g})">agreement with people</text>'
    )
    return parts


def _coverage_legend(legend: Sequence[tuple[str, str, str]], frame: _Frame) -> list[str]:
    """One legend line per curve and mark: a sample of its stroke and its words."""
    parts = []
    left = frame.left
    for index, (shape, text, colour) in enumerate(legend):
        y = frame.bottom + 52 + 20 * index
        if shape == "mark":
            sample = (
                f'<circle cx="{left + 12:g}" cy="{y - 4:g}" r="5" fill="#ffffff" stroke="{colour}" stroke-width="3"/>'
            )
        else:
            dash = ' stroke-dasharray="6 4"' if shape == "dash" else ""
            sample = (
                f'<line x1="{left:g}" y1="{y - 4:g}" x2="{left + 24:g}" y2="{y - 4:g}" stroke="{colour}" '
                f'stroke-width="2.5"{dash}/>'
            )
        parts.append(f'{sample}<text x="{left + 32:g}" y="{y:g}" fill="#374151" {_FONT}>{escape(text)}</text>')
    return parts


def _curve_tips(drawn: Sequence[CurvePoint], frame: _Frame) -> list[str]:
    """A small dot with a tooltip every :data:`_TIP_EVERY` thresholds (once per distinct set of kept verdicts)."""
    parts: list[str] = []
    seen: set[int] = set()
    for point in drawn:
        step = round(point.threshold * 100)
        if step % _TIP_EVERY or point.kept in seen:
            continue
        seen.add(point.kept)
        bound = f"lower bound {point.lower_bound:.3f}" if math.isfinite(point.lower_bound) else "not tested"
        tip = (
            f"confidence ≥ {point.threshold:.2f}: keeps {point.kept} ({point.kept_share:.1%}), agreement "
            f"{point.kept_agreement:.3f}, {bound}"
        )
        parts.append(
            f'<g class="point"><title>{escape(tip)}</title><circle cx="{_number(frame.x(point.kept_share))}" '
            f'cy="{_number(frame.y(point.kept_agreement))}" r="3.5" fill="{_CURVE}"/></g>'
        )
    return parts
