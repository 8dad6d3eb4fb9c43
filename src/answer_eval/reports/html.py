"""The HTML report: one self-contained page with scores, charts, agreement and a searchable table of items.

Everything is inline: the CSS and the vanilla JavaScript (``report_assets/``), the charts as SVG
drawn in Python (:mod:`answer_eval.reports.charts`); no fonts, images or scripts are fetched. A
Content-Security-Policy allows only that inline style and script (by their hashes), so even a
browser that is online loads nothing else. Every text from the data goes through
:func:`html.escape`: a question or an answer is shown, never run.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
from collections.abc import Iterator
from html import escape
from pathlib import Path

from answer_eval.engine.output_files import AtomicWriter
from answer_eval.evaluators.judge.guarantee import START_SHARES
from answer_eval.inputs.item_files import display_text
from answer_eval.reports.agreement_coverage import CoverageMark, SystemCoverage
from answer_eval.reports.charts import (
    CurveMark,
    IntervalRow,
    coverage_chart,
    failure_chart,
    heat_map,
    interval_chart,
)
from answer_eval.reports.data import Report, SystemReport
from answer_eval.reports.scorers import EvaluatorSpec
from answer_eval.stats.written_numbers import fixed

__all__ = ["render_html", "write_html"]

_ASSETS = Path(__file__).with_name("assets")
_TESTS = {"mcnemar_exact": "McNemar exact", "paired_bootstrap": "paired bootstrap"}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _p(value: float) -> str:
    return "&lt;0.001" if value < 0.001 else f"{value:.3f}"


def _systems_section(report: Report) -> Iterator[str]:
    yield '<section id="systems"><h2>Systems</h2><table><thead><tr><th>system</th><th>file</th>'
    yield '<th class="num">items</th><th>human label</th><th>verdicts read from the file</th></tr></thead><tbody>'
    for system in report.systems:
        labels = system.items.labels
        label = "no" if labels is None else f"yes ({sum(labels)} acceptable)"
        yield (
            f"<tr><td>{_e(system.name)}</td><td>{_e(system.items.path)}</td>"
            f'<td class="num">{len(system.items)}</td><td>{label}</td>'
            f"<td>{_e(', '.join(system.reused) or 'none: scored now')}</td></tr>"
        )
    yield "</tbody></table></section>"


def _scores_section(report: Report) -> Iterator[str]:
    yield '<section id="scores"><h2>Headline scores</h2><div class="charts"><div>'
    yield '<table class="scores"><thead><tr><th>evaluator</th>'
    yield "".join(f'<th class="num">{_e(system.name)}</th>' for system in report.systems)
    yield "</tr></thead><tbody>"
    rows: list[IntervalRow] = []
    for spec in report.evaluators:
        yield f'<tr><td title="{_e(spec.title)}">{_e(spec.name)}</td>'
        for index, system in enumerate(report.systems):
            score = system.estimates[spec.name]
            yield (
                f'<td class="num">{score.score:.3f} '
                f'<span class="interval">[{score.low:.3f}, {score.high:.3f}]</span></td>'
            )
            rows.append(IntervalRow(f"{spec.name} · {system.name}", score.score, score.low, score.high, index))
        yield "</tr>"
    yield "</tbody></table>"
    methods = "Wilson for 0/1 scores"
    if any(spec.graded for spec in report.evaluators):
        methods += f", percentile bootstrap for graded ones ({report.resamples} resamples, seed {report.seed})"
    yield f'<p class="note">Mean score and 95% interval: {_e(methods)}.</p></div>'
    caption = "Scores with 95% intervals"
    yield f"<figure><figcaption>{caption}</figcaption>{interval_chart(rows, caption)}"
    yield "</figure></div></section>"


def _differences_section(report: Report) -> Iterator[str]:
    if report.comparison_note:
        yield '<section id="differences"><h2>Differences</h2>'
        yield f'<p class="note">{_e(report.comparison_note)}</p></section>'
    if not report.comparisons:
        return
    base = report.systems[0].name
    yield f'<section id="differences"><h2>Differences against {_e(base)}</h2><table><thead><tr>'
    yield '<th>system</th><th>evaluator</th><th class="num">difference</th><th>paired test</th>'
    yield '<th class="num">p-value</th><th class="num">items up / down</th></tr></thead><tbody>'
    for name, comparison in report.comparisons:
        difference = comparison.difference
        up = sum(1 for item in comparison.changed if item.score_b > item.score_a)
        mark = ' class="num significant"' if difference.p_value < 0.05 else ' class="num"'
        interval = ""
        if difference.low is not None and difference.high is not None:
            low, high = fixed(difference.low, signed=True), fixed(difference.high, signed=True)
            interval = f' <span class="interval">[{low}, {high}]</span>'
        yield (
            f"<tr><td>{_e(name)}</td><td>{_e(comparison.evaluator)}</td>"
            f"<td{mark}>{fixed(difference.value, signed=True)}{interval}</td><td>{_TESTS[difference.test]}</td>"
            f"<td{mark}>{_p(difference.p_value)}</td>"
            f'<td class="num">{up} / {len(comparison.changed) - up}</td></tr>'
        )
    yield "</tbody></table>"
    yield (
        '<p class="note">Difference: mean score of the system minus that of '
        f"{_e(base)}, on the same questions; p-value of no difference (exact McNemar for 0/1 scores, "
        "paired bootstrap for graded ones).</p></section>"
    )


def _failures_section(report: Report) -> Iterator[str]:
    title = "Answer-contains outcome of every item, per system"
    chart = failure_chart([(system.name, system.failure_counts) for system in report.systems], title)
    yield f'<section id="failures"><h2>Failure kinds</h2><figure><figcaption>{_e(title)}</figcaption>{chart}</figure>'
    yield '<p class="note">Why each wrong answer is wrong, by the AnswerContainsEvaluator rules.</p></section>'


def _agreement_section(report: Report) -> Iterator[str]:
    matrices = [system for system in report.systems if system.matrix is not None]
    if not matrices:
        return
    yield '<section id="agreement"><h2>Evaluator agreement</h2><div class="charts">'
    for system in matrices:
        assert system.matrix is not None
        title = f"Agreement between evaluators on {system.name}"
        chart = heat_map(system.matrix.names, system.matrix.agreement, system.matrix.kappa, title)
        yield f"<figure><figcaption>{_e(system.name)}</figcaption>{chart}</figure>"
    thresholds = []
    for spec in report.evaluators:
        chosen = {(system.verdicts[spec.name].threshold, system.verdicts[spec.name].in_sample) for system in matrices}
        if not spec.graded or not chosen:
            continue
        if len(chosen) > 1 or any(in_sample for _, in_sample in chosen):
            thresholds.append(f"{spec.name} score ≥ the threshold that agrees best with each file's human label")
        else:
            thresholds.append(f"{spec.name} score ≥ {next(iter(chosen))[0]:.2f}")
    note = "Share of items on which two verdicts agree, and Cohen's kappa (κ)."
    if thresholds:
        note += " A graded score counts as right when " + "; ".join(thresholds) + "."
    yield f'</div><p class="note">{_e(note)}</p></section>'


def _coverage_table(coverage: SystemCoverage) -> Iterator[str]:
    yield '<table class="coverage"><thead><tr><th class="num">confidence ≥</th><th class="num">kept</th>'
    yield '<th class="num">share kept</th><th class="num">agreement</th>'
    yield f'<th class="num">lower bound (δ = {coverage.delta:g})</th><th></th></tr></thead><tbody>'
    for kind, row in coverage.table():
        if isinstance(row, CoverageMark):
            threshold = f"{row.threshold:.4g}"
            name = f'<td class="mark mark-{_e(kind)}">● {_e(row.label)}</td>'
        else:
            threshold = f"{row.threshold:.2f}"
            name = "<td>every verdict</td>" if row.threshold == 0.0 else "<td></td>"
        agreement = "none kept" if not row.kept else f"{row.kept_agreement:.3f}"
        bound = f"{row.lower_bound:.3f}" if math.isfinite(row.lower_bound) else "not tested"
        yield (
            f'<tr><td class="num">{threshold}</td><td class="num">{row.kept}</td>'
            f'<td class="num">{row.kept_share:.1%}</td><td class="num">{agreement}</td>'
            f'<td class="num">{bound}</td>{name}</tr>'
        )
    yield "</tbody></table>"


def _coverage_figure(system: SystemReport) -> Iterator[str]:
    coverage = system.coverage
    title = f"Agreement with people of the judge's verdicts kept at each confidence threshold, {system.name}"
    marks = [CurveMark(mark.kept_share, mark.kept_agreement, mark.label, mark.kind) for mark in coverage.marks]
    chart = coverage_chart(coverage.points, marks, title, coverage.delta)
    source = "the judged file" if coverage.source == "file" else "the judge run now"
    caption = f"{system.name}: {coverage.rows} verdicts ({source}), agreement {coverage.agreement:.3f}"
    yield f"<figure><figcaption>{_e(caption)}</figcaption>{chart}"
    yield from _coverage_table(coverage)
    yield "".join(f'<p class="note">{_e(note)}</p>' for note in coverage.notes)
    yield "</figure>"


def _coverage_section(report: Report) -> Iterator[str]:
    if not report.coverage_shown:
        return
    yield '<section id="coverage"><h2>Agreement and coverage</h2>'
    drawn = [system for system in report.systems if system.coverage.drawn]
    if drawn:
        yield '<div class="charts">'
        for system in drawn:
            yield from _coverage_figure(system)
        yield "</div>"
    reasons: dict[str, list[str]] = {}
    for system in report.systems:
        if system.coverage.reason is not None:
            reasons.setdefault(system.coverage.reason, []).append(system.name)
    for reason, names in reasons.items():
        yield f'<p class="note absent">Not drawn for {_e(", ".join(names))}: {_e(reason)}.</p>'
    if drawn:
        starts = " and the first keeping ".join(f"{share:.0%}" for share in START_SHARES)
        yield (
            '<p class="note">Keep the judge\'s verdicts whose confidence is at least a threshold: the curve gives the '
            "share kept and how often people agree with them (a verdict agrees when it equals the human label), "
            "with the lower bound on that agreement at level δ that the threshold test reads (answers to one question "
            f"count as one cluster; corrected for the thresholds tested on the way down from the first keeping {starts}"
            " of the verdicts): a threshold can promise a target agreement exactly when its bound reaches it. "
            f"Thresholds above the first keeping {START_SHARES[0]:.0%} are not tested.</p>"
        )
    yield "</section>"


def _verdict_cell(spec: EvaluatorSpec, system: SystemReport, position: int) -> str:
    score = system.runs[spec.name].scores[position]
    right = system.verdicts[spec.name].values[position]
    css = "ok" if right else "bad"
    shown = f"{score:.2f}" if spec.graded else ("✓" if right else "✗")
    label = "right" if right else "wrong"
    return f'<td class="num verdict {css}" data-sort="{score:g}" title="{label}">{shown}</td>'


def _item_rows(report: Report, several: bool, human: bool, evidence: bool) -> Iterator[str]:
    for system in report.systems:
        labels = system.items.labels
        for position in range(len(system.items)):
            items = system.items
            disagree = "1" if position in system.disagreeing else "0"
            css = ' class="disagree"' if disagree == "1" else ""
            cells = [f'<td class="system">{_e(system.name)}</td>'] if several else []
            cells.append(f'<td class="num">{items.lines[position]}</td>')
            cells.append(f'<td class="text">{_e(items.questions[position] or "")}</td>')
            cells.append(f'<td class="text">{_e(" | ".join(items.golds[position]))}</td>')
            cells.append(f'<td class="text">{_e(display_text(items.predictions[position]))}</td>')
            cells.extend(_verdict_cell(spec, system, position) for spec in report.evaluators)
            if human:
                if labels is None:
                    cells.append('<td data-sort="-1"></td>')
                else:
                    right = labels[position]
                    css, mark = ("ok", "✓") if right else ("bad", "✗")
                    cells.append(f'<td class="num verdict {css}" data-sort="{int(right)}">{mark}</td>')
            kind = system.failure_kinds[position] if position < len(system.failure_kinds) else None
            cells.append(f'<td class="kind">{_e(kind or "")}</td>')
            if evidence:
                found = system.evidence
                cells.append(f'<td class="evidence">{_e(found[position] if found else "")}</td>')
            yield f'<tr data-system="{_e(system.name)}" data-disagree="{disagree}"{css}>{"".join(cells)}</tr>'


def _items_section(report: Report) -> Iterator[str]:
    several = len(report.systems) > 1
    human = any(system.items.labels is not None for system in report.systems)
    evidence = any(system.evidence is not None for system in report.systems)
    yield '<section id="items"><h2>Items</h2><div class="controls">'
    yield '<input id="search" type="search" placeholder="Search questions, answers, evidence…"'
    yield ' aria-label="Search items">'
    if several:
        yield '<label>System <select id="system-filter"><option value="">all</option>'
        yield "".join(f'<option value="{_e(system.name)}">{_e(system.name)}</option>' for system in report.systems)
        yield "</select></label>"
    yield '<label><input id="disagree-filter" type="checkbox"> only items where the verdicts disagree (marked)</label>'
    yield '<span id="shown-count" class="note"></span></div>'
    headers: list[tuple[str, str, str]] = [("system", "text", "")] if several else []
    headers += [("line", "number", ""), ("question", "text", ""), ("gold", "text", ""), ("prediction", "text", "")]
    headers += [(spec.name, "number", spec.title) for spec in report.evaluators]
    if human:
        headers.append(("human", "number", "the human label"))
    headers.append(("failure kind", "text", "answer-contains failure kind"))
    if evidence:
        headers.append(("evidence", "text", "the judge's reason"))
    yield '<table id="items-table"><thead><tr>'
    for name, kind, tip in headers:
        css = ' class="num"' if kind == "number" else ""
        title = f' title="{_e(tip)}"' if tip else ""
        yield f'<th data-type="{kind}"{css}{title}><button type="button">{_e(name)}</button></th>'
    yield "</tr></thead><tbody>"
    yield from _item_rows(report, several, human, evidence)
    yield "</tbody></table></section>"


def _signatures(report: Report) -> str:
    """Each evaluator's signature (its options and versions), so the page says exactly what scored it."""
    from answer_eval.reports.scorers import signature

    items = "".join(f"<li><code>{_e(signature(spec.name))}</code></li>" for spec in report.evaluators)
    return f'<ul class="signatures">{items}</ul>'


def render_html(report: Report, title: str = "answer-eval report") -> str:
    """The report as one self-contained HTML page."""
    from answer_eval import __version__

    style = (_ASSETS / "report.css").read_text(encoding="utf-8")
    script = (_ASSETS / "report.js").read_text(encoding="utf-8")
    policy = f"default-src 'none'; style-src {_hash(style)}; script-src {_hash(script)}; img-src data:"
    names = ", ".join(system.name for system in report.systems)
    evaluators = ", ".join(spec.name for spec in report.evaluators)
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<link rel="icon" href="data:,">',
        f"<title>{_e(title)}: {_e(names)}</title><style>{style}</style></head><body>",
        f"<header><h1>{_e(title)}</h1>",
        f"<p>{len(report.systems)} system(s): {_e(names)} · evaluators: {_e(evaluators)}</p>",
        "</header>",
    ]
    for section in (
        _systems_section,
        _scores_section,
        _differences_section,
        _failures_section,
        _agreement_section,
        _coverage_section,
        _items_section,
    ):
        parts.extend(section(report))
    parts.append(f"<footer>Made by answer-eval {_e(__version__)}: one file, nothing loaded from the network.")
    parts.append(_signatures(report))
    parts.append("</footer>")
    parts.append(f"<script>{script}</script></body></html>\n")
    return "".join(parts)


def write_html(report: Report, path: str | os.PathLike[str], title: str = "answer-eval report") -> None:
    """Write the report to ``path`` atomically (a temporary file renamed into place when complete)."""
    with AtomicWriter(path) as writer:
        writer.write(render_html(report, title))
        writer.commit()
