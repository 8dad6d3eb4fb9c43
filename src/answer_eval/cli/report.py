"""``answer-eval report``: one self-contained HTML page comparing systems and evaluators.

With human labels and the judge's verdicts (a judged file, or the judge run now) the page also
draws the judge's agreement-coverage curve (:mod:`answer_eval.reports.coverage`);
``--target-agreement`` marks the threshold chosen on those labels, in-sample.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from answer_eval.cli.common import (
    INPUT_HELP,
    MAX_RESAMPLES,
    add_evaluator_options,
    add_field_options,
    add_format_option,
    add_label_options,
    add_progress_option,
    count,
    evaluator_names,
    fixed,
    items_from_args,
    make_console,
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
from answer_eval.reports.coverage import IN_SAMPLE, NO_JUDGE, NO_LABEL, SystemCoverage
from answer_eval.reports.data import Report, build_report, results_run
from answer_eval.reports.scorers import EvaluatorRun, get_spec, signature

__all__ = ["register"]


def register(commands: Any) -> None:
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
    parser.set_defaults(handler=run)


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


def run(args: argparse.Namespace) -> int:
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
