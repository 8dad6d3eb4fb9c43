"""``answer-eval compare`` and ``answer-eval report``: systems compared on the same questions, in a terminal or a page.

``compare``: is system B better than system A on the same questions, and where do they differ.
``report``: one self-contained HTML page comparing systems and evaluators. With human labels and
the judge's verdicts (a judged file, or the judge run now) the page also draws the judge's
agreement-coverage curve (:mod:`answer_eval.reports.agreement_coverage`); ``--target-agreement`` marks the
threshold chosen on those labels, in-sample.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from answer_eval.cli.options_and_output import (
    INPUT_HELP,
    MAX_RESAMPLES,
    add_evaluator_options,
    add_field_options,
    add_format_option,
    add_item_head,
    add_item_text,
    add_label_options,
    add_progress_option,
    add_show_option,
    count,
    evaluator_names,
    fixed,
    format_p,
    item_grid,
    items_from_args,
    make_console,
    more_hint,
    probability,
    run_evaluators,
    show,
    show_progress,
    stdin_once,
    written_path,
)
from answer_eval.engine.output_files import check_output_path
from answer_eval.engine.row_transforms import find_marked
from answer_eval.errors import InputError
from answer_eval.inputs.item_files import DEFAULT_LABEL_FIELD, Items
from answer_eval.reports.agreement_coverage import IN_SAMPLE, NO_JUDGE, NO_LABEL, SystemCoverage
from answer_eval.reports.data import Report, build_report, results_run
from answer_eval.reports.scorers import EvaluatorRun, get_spec, signature
from answer_eval.stats.compare import EvaluatorComparison, align, compare_scores

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register_compare", "register_report"]


TESTS = {"mcnemar_exact": "McNemar exact", "paired_bootstrap": "paired bootstrap"}


def register_compare(commands: Any) -> None:
    """Add the ``compare`` sub-command."""
    parser = commands.add_parser(
        "compare",
        help="compare two systems' answers to the same questions: scores, intervals, paired test, changed items",
        description=(
            "Score two files of answers to the same questions (rows in the same order) with each evaluator and "
            "print each system's score with a 95% interval (Wilson for 0/1 scores, percentile bootstrap for graded "
            "ones), the difference B - A with its paired test (exact McNemar for 0/1 scores, paired bootstrap for "
            "graded ones) and the items whose verdict changed."
        ),
    )
    parser.add_argument("a", metavar="A", help=f"system A's answers (the baseline): {INPUT_HELP}")
    parser.add_argument("b", metavar="B", help="system B's answers to the same questions, in the same order")
    add_evaluator_options(parser)
    add_field_options(parser, question=True)
    add_show_option(parser, "changed items to print per evaluator")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: %(default)s)")
    parser.add_argument(
        "--resamples",
        type=count(1, MAX_RESAMPLES),
        default=10_000,
        help="bootstrap resamples for graded scores (default: %(default)s)",
    )
    add_format_option(parser, "default: %(default)s")
    add_progress_option(parser)
    parser.set_defaults(handler=run_compare)


def _interval(low: float, high: float) -> str:
    return f"[{fixed(low)}, {fixed(high)}]"


def _summary(console: Console, comparisons: list[EvaluatorComparison], a: Items, b: Items, args: Any) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    show(console, f"answer-eval compare: {len(a)} questions\n  A  {a.path}\n  B  {b.path}")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=True, show_edge=False)
    for header in ("evaluator", "A", "B", "B - A", "paired test", "p-value", "up / down"):
        right = header in ("B - A", "p-value", "up / down")
        table.add_column(
            header, justify="right" if right else "left", no_wrap=header in ("evaluator", "B - A", "p-value")
        )
    for comparison in comparisons:
        up = sum(1 for item in comparison.changed if item.score_b > item.score_a)
        difference = comparison.difference
        significant = difference.p_value < 0.05
        colour = "green" if difference.value > 0 else "red"
        table.add_row(
            comparison.evaluator,
            f"{fixed(comparison.a.score)} {_interval(comparison.a.low, comparison.a.high)}",
            f"{fixed(comparison.b.score)} {_interval(comparison.b.low, comparison.b.high)}",
            Text(fixed(difference.value, signed=True), style=colour if significant else ""),
            TESTS[difference.test],
            Text(format_p(difference.p_value), style="bold" if significant else ""),
            f"{up} / {len(comparison.changed) - up}",
        )
    show(console, table)
    graded = any(comparison.graded for comparison in comparisons)
    note = "  95% intervals: Wilson for 0/1 scores"
    if graded:
        note += f", percentile bootstrap for graded ones ({args.resamples} resamples, seed {args.seed})"
    show(console, note + ".\n  up / down: items B scores higher / lower than A.")


def _changed(console: Console, comparison: EvaluatorComparison, limit: int) -> None:
    if not comparison.changed or limit <= 0:
        return
    shown = comparison.changed[:limit]
    kind = "whose score moved most" if comparison.graded else "that changed verdict"
    total = len(comparison.changed)
    counted = f"{len(shown)} of {total} items" if len(shown) < total else f"{total} item{'' if total == 1 else 's'}"
    show(console, f"\n{comparison.evaluator}: {counted} {kind}{more_hint(len(shown), total)}")
    grid = item_grid()
    for item in shown:
        if comparison.graded:
            mark_a, mark_b = fixed(item.score_a, 2), fixed(item.score_b, 2)
        else:
            mark_a, mark_b = ("right" if item.score_a else "wrong"), ("right" if item.score_b else "wrong")
        add_item_head(grid, item.line_b, item.question, item.golds)
        add_item_text(grid, f"A {mark_a}", item.prediction_a)
        add_item_text(grid, f"B {mark_b}", item.prediction_b)
    show(console, grid)


def run_compare(args: argparse.Namespace) -> int:
    """Compare the two files and print the result."""
    names = evaluator_names(args)
    stdin_once([args.a, args.b])
    a, b = items_from_args(args.a, args, names), items_from_args(args.b, args, names)
    align(a, b)
    runs = run_evaluators(names, [a, b], semantic=not args.no_semantic, progress=show_progress(args))
    comparisons = [
        compare_scores(
            get_spec(name), a, b, runs[name][0].scores, runs[name][1].scores, seed=args.seed, n_resamples=args.resamples
        )
        for name in names
    ]
    if args.format == "json":
        print(
            json.dumps(
                {
                    "a": a.path,
                    "b": b.path,
                    "items": len(a),
                    "confidence": 0.95,
                    "seed": args.seed,
                    "resamples": args.resamples,
                    "evaluators": [
                        {**comparison.to_json(), "signature": signature(name)}
                        for name, comparison in zip(names, comparisons, strict=True)
                    ],
                },
                ensure_ascii=False,
                allow_nan=False,  # for other programs: every figure is finite or None, never NaN or Infinity
            )
        )
        return 0
    console = make_console()
    _summary(console, comparisons, a, b, args)
    # Written as they are: a signature is one token that must not be wrapped or cut to the width.
    console.file.write("".join(f"  signature  {signature(name)}\n" for name in names))
    for comparison in comparisons:
        _changed(console, comparison, args.show)
    return 0


def register_report(commands: Any) -> None:
    """Add the ``report`` sub-command."""
    parser = commands.add_parser(
        "report",
        help="write a self-contained HTML report: scores, failure kinds, evaluator agreement, every item",
        description=(
            "Score each FILE (a system's predictions, or a results file of 'answer-eval score --output' or "
            "'answer-eval judge --output', whose verdicts are reused) with the evaluators and write one HTML page "
            "with no external resources: headline scores with 95% intervals, differences against the first system, "
            "a chart of failure kinds, the evaluator agreement matrix as a heat map, the judge's agreement-coverage "
            "curve (with a human label column: the share of verdicts kept at each confidence threshold and their "
            "agreement with people) and a searchable, sortable table of the items."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help=f"one file per system: {INPUT_HELP}")
    parser.add_argument("--html", required=True, metavar="PATH", type=written_path, help="the HTML file to write")
    parser.add_argument("--title", default="answer-eval report", help="the page title (default: %(default)s)")
    add_evaluator_options(parser)
    add_field_options(parser, question=True)
    add_label_options(parser, f"human verdict field; default: {DEFAULT_LABEL_FIELD!r} when a file's first row has it")
    parser.add_argument(
        "--target-agreement",
        type=probability,
        metavar="A",
        help=(
            "mark on the agreement-coverage curve the lowest confidence threshold whose kept verdicts agree with the "
            f"labels at least A of the time, with probability 1 - delta ({IN_SAMPLE}); a judged file with an "
            "'abstained' column has its run's threshold marked without it"
        ),
    )
    parser.add_argument(
        "--delta",
        type=probability,
        default=0.1,
        help=(
            "level of the curve's lower bound (the one the threshold test reads) and of --target-agreement's choice "
            "(default: %(default)s)"
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: %(default)s)")
    parser.add_argument(
        "--resamples", type=count(1, MAX_RESAMPLES), default=10_000, help="bootstrap resamples (default: %(default)s)"
    )
    add_format_option(parser, "summary format")
    add_progress_option(parser)
    parser.set_defaults(handler=run_report)


def _check_target(args: argparse.Namespace, systems: Sequence[Items], names: Sequence[str]) -> None:
    """Refuse ``--target-agreement`` when no file can have a curve to mark (before any evaluator runs)."""
    if args.target_agreement is None:
        return
    if all(items.labels is None for items in systems):
        raise InputError(f"--target-agreement chooses a threshold on human labels, and there are none: {NO_LABEL}")
    if "judge" not in names and all(find_marked(items.rows, "judge") is None for items in systems):
        raise InputError(f"--target-agreement marks the judge's agreement-coverage curve, and there are {NO_JUDGE}")


def _summary_json(report: Report, html: str) -> dict[str, Any]:
    return {
        "html": html,
        "evaluators": [spec.name for spec in report.evaluators],
        "signatures": {spec.name: signature(spec.name) for spec in report.evaluators},
        "systems": [
            {
                "name": system.name,
                "path": system.items.path,
                "items": len(system.items),
                "reused": list(system.reused),
                "scores": {
                    name: {"score": value.score, "interval": [value.low, value.high], "method": value.method}
                    for name, value in system.estimates.items()
                },
                "failure_counts": system.failure_counts,
                "agreement": None if system.matrix is None else system.matrix.to_json(),
                "coverage": system.coverage.to_json() if system.coverage.applies else None,
            }
            for system in report.systems
        ],
        "differences": [
            {
                "system": name,
                "evaluator": comparison.evaluator,
                "difference": comparison.difference.value,
                "test": comparison.difference.test,
                "p_value": comparison.difference.p_value,
            }
            for name, comparison in report.comparisons
        ],
        "comparison_note": report.comparison_note,
    }


def _print_summary(report: Report, html: str) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = make_console()
    table = Table(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("evaluator", no_wrap=True)
    for system in report.systems:
        table.add_column(Text(system.name), no_wrap=True)
    for spec in report.evaluators:
        cells = []
        for system in report.systems:
            value = system.estimates[spec.name]
            cells.append(f"{fixed(value.score)} [{fixed(value.low)}, {fixed(value.high)}]")
        table.add_row(spec.name, *cells)
    show(console, f"answer-eval report: {len(report.systems)} system(s), scores with 95% intervals", table)
    if report.coverage_shown:
        for system in report.systems:
            show(console, f"agreement-coverage curve, {system.name}: {_coverage_line(system.coverage)}")
    show(console, f"wrote {html}")


def _coverage_line(coverage: SystemCoverage) -> str:
    """One system's curve in a line: not drawn and why, or its marks."""
    if coverage.reason is not None:
        return f"not drawn: {coverage.reason}"
    marks = [
        f"confidence >= {mark.threshold:.4g} keeps {mark.kept_share:.1%} at agreement {fixed(mark.kept_agreement)}"
        + (" (in-sample)" if mark.kind == "in_sample" else " (the run's)")
        for mark in coverage.marks
    ]
    return "; ".join(
        [f"drawn, {coverage.rows} verdicts at agreement {fixed(coverage.agreement)}", *marks, *coverage.notes]
    )


def _failure_runs(runs: dict[str, list[EvaluatorRun]], names: Sequence[str], systems: int) -> list[EvaluatorRun]:
    """Per system, the run of the first evaluator that gives failure kinds (an empty run when none does)."""
    for name in names:
        if all(run.failure_kinds is not None for run in runs[name]):
            return runs[name]
    return [EvaluatorRun("none", (), 0.0) for _ in range(systems)]


def run_report(args: argparse.Namespace) -> int:
    """Score the files and write the report."""
    target = Path(args.html)
    if target.suffix.lower() not in (".html", ".htm"):
        raise InputError(f"--html {target} must end in .html")
    check_output_path(target, [Path(path) for path in args.files if path != "-"], stdin="-" in args.files)
    names = evaluator_names(args)
    stdin_once(args.files)
    systems = [items_from_args(path, args, names) for path in args.files]
    _check_target(args, systems, names)
    # The chart's failure kinds are the answer-contains ones, where the files hold acceptable answers;
    # otherwise the first evaluator's that gives failure kinds (typed, tools).
    answers = any(get_spec(name).needs_answers for name in names)
    wanted = names if "contains" in names or not answers else [*names, "contains"]
    reused: list[list[str]] = [[] for _ in systems]

    def reuse(name: str, items: Items) -> EvaluatorRun | None:
        found = results_run(name, items)
        if found is not None:
            reused[next(i for i, system in enumerate(systems) if system is items)].append(name)
        return found

    runs = run_evaluators(wanted, systems, semantic=not args.no_semantic, progress=show_progress(args), reuse=reuse)
    report = build_report(
        systems,
        runs,
        names,
        runs["contains"] if answers else _failure_runs(runs, names, len(systems)),
        reused=reused,
        seed=args.seed,
        resamples=args.resamples,
        target_agreement=args.target_agreement,
        delta=args.delta,
    )
    from answer_eval.reports.html import write_html

    write_html(report, target, args.title)
    if args.format == "json":
        print(json.dumps(_summary_json(report, str(target)), ensure_ascii=False, allow_nan=False))
    else:
        _print_summary(report, str(target))
    return 0
