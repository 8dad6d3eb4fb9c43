"""``answer-eval agreement``: how evaluators agree with each other and, when the file has one, with a human label."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from answer_eval.cli.options_and_output import (
    INPUT_HELP,
    add_evaluator_options,
    add_field_options,
    add_format_option,
    add_item_head,
    add_item_text,
    add_label_options,
    add_progress_option,
    add_show_option,
    fixed,
    item_grid,
    items_from_args,
    make_console,
    more_hint,
    run_evaluators,
    show,
    show_progress,
)
from answer_eval.cli.ratings import add_rating_options, run_ratings
from answer_eval.inputs.item_files import DEFAULT_LABEL_FIELD, Items, display_text
from answer_eval.reports.scorers import EvaluatorRun, Verdicts, get_spec, signature, unavailable, verdicts
from answer_eval.stats.rater_agreement import (
    HUMAN,
    AgreementMatrix,
    agreement,
    agreement_matrix,
    cohen_kappa,
    disagreements,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["AGREEMENT_EVALUATORS", "AgreementRow", "register", "run_agreement"]

AGREEMENT_EVALUATORS = ("exact", "sas", "contains", "judge")
"""The evaluators ``agreement`` runs when none is named (``--no-semantic`` leaves out SAS)."""


@dataclass(frozen=True)
class AgreementRow:
    """One evaluator's agreement with the human labels.

    :param evaluator: The evaluator's name.
    :param agreement: Share of answers on which it agrees with the label.
    :param kappa: Cohen's kappa against the label.
    :param positive_rate: Share of answers it calls right.
    :param answers_per_second: Throughput of its ``run`` on the file (model loading excluded); ``None`` when
        the run took no time the clock could measure.
    :param note: How a graded score became a verdict, or why the evaluator was left out.
    :param name: Its registry name (``--evaluator NAME``).
    """

    evaluator: str
    agreement: float | None
    kappa: float | None
    positive_rate: float | None
    answers_per_second: float | None
    note: str = ""
    name: str = ""


def register(commands: Any) -> None:
    """Add the ``agreement`` sub-command."""
    parser = commands.add_parser(
        "agreement",
        help="agreement between evaluators, and with a human label column when the file has one",
        description=(
            "Run Haystack's AnswerExactMatchEvaluator and SASEvaluator and this package's evaluators on one file "
            "and print, when it has a human label, each one's agreement with it, Cohen's kappa, the share they call "
            "right and their throughput; then the agreement matrix and Cohen's kappa between every pair (the label "
            "included) and the answers on which they disagree."
        ),
    )
    parser.add_argument(
        "file", help=f"the input, with a prediction, acceptable answers and (optionally) a human label: {INPUT_HELP}"
    )
    add_label_options(
        parser, f"human verdict field; default: {DEFAULT_LABEL_FIELD!r} when the first row has it (no label otherwise)"
    )
    add_field_options(parser, question=True)
    add_evaluator_options(parser, AGREEMENT_EVALUATORS)
    add_show_option(parser, "answers with disagreement to print")
    add_format_option(parser)
    add_progress_option(parser)
    add_rating_options(parser)
    parser.set_defaults(handler=run)


def _note(name: str, verdict: Verdicts) -> str:
    parts = ["best over golds"] if name in ("exact", "sas") else []
    if verdict.threshold is not None:
        where = "the best threshold on this file (in-sample)" if verdict.in_sample else "the default threshold"
        parts.append(f"score >= {verdict.threshold:.3f}, {where}")
    return "; ".join(parts)


def answers_per_second(answers: int, seconds: float) -> float | None:
    """``answers / seconds``; ``None`` (printed ``-``) for a run too quick for the clock to time: never ``inf``.

    An infinite speed would print as ``inf`` and be written as ``Infinity``, which is no JSON.
    """
    return answers / seconds if seconds > 0 else None


def run_agreement(
    items: Items, names: Sequence[str], semantic: bool, progress: bool = False
) -> tuple[list[AgreementRow], dict[str, Verdicts]]:
    """Run each evaluator on the items: one row per evaluator and the verdicts of those that ran.

    A graded score becomes a verdict at the threshold that agrees best with the human label when
    there is one, else at the evaluator's default (:func:`answer_eval.reports.scorers.verdicts`).
    An evaluator that cannot run here gets a row saying why.
    """
    ready = [name for name in names if unavailable(name, semantic) is None]
    runs = run_evaluators(ready, [items], semantic=semantic, progress=progress)
    rows: list[AgreementRow] = []
    found: dict[str, Verdicts] = {}
    for name in names:
        spec = get_spec(name)
        if name not in runs:
            rows.append(AgreementRow(spec.title, None, None, None, None, unavailable(name, semantic) or "", name))
            continue
        run: EvaluatorRun = runs[name][0]
        verdict = verdicts(spec, run.scores, items.labels)
        found[name] = verdict
        speed = answers_per_second(len(items), run.seconds)
        values = verdict.values
        rows.append(
            AgreementRow(
                spec.title,
                None if items.labels is None else agreement(values, items.labels),
                None if items.labels is None else cohen_kappa(values, items.labels),
                sum(values) / len(values),
                speed,
                _note(name, verdict),
                name,
            )
        )
    return rows, found


def _print_rows(rows: list[AgreementRow], items: Items) -> None:
    labelled = items.labels is not None
    who = f"{sum(items.labels)} acceptable to people" if items.labels is not None else "no human label"
    print(f"answer-eval agreement: {items.path} ({len(items)} answers, {who})")
    label_columns = f" {'agreement':>9} {'kappa':>7}" if labelled else ""
    print(f"  {'evaluator':<42}{label_columns} {'says right':>10} {'answers/s':>10}")
    for row in rows:
        if row.positive_rate is None:
            blanks = f" {'-':>9} {'-':>7}" if labelled else ""
            print(f"  {row.evaluator:<42}{blanks} {'-':>10} {'-':>10}  {row.note}")
            continue
        cells = (
            f" {fixed(row.agreement):>9} {fixed(row.kappa):>7}"
            if row.agreement is not None and row.kappa is not None
            else ""
        )
        print(
            f"  {row.evaluator:<42}{cells} {fixed(row.positive_rate):>10} "
            + ("         -" if row.answers_per_second is None else f"{row.answers_per_second:>10.0f}")
            + (f"  {row.note}" if row.note else "")
        )


def _columns(found: dict[str, Verdicts], items: Items) -> dict[str, Sequence[bool]]:
    columns: dict[str, Sequence[bool]] = {name: verdict.values for name, verdict in found.items()}
    if items.labels is not None:
        columns[HUMAN] = items.labels
    return columns


def _print_matrix(console: Console, matrix: AgreementMatrix) -> None:
    from rich import box
    from rich.table import Table

    for title, values in (("agreement", matrix.agreement), ("Cohen's kappa", matrix.kappa)):
        table = Table(box=box.SIMPLE_HEAD, show_edge=False)
        table.add_column(title, no_wrap=True)
        for name in matrix.names:
            table.add_column(name, justify="right", no_wrap=True)
        for name, row in zip(matrix.names, values, strict=True):
            table.add_row(name, *(fixed(value) for value in row))
        show(console, "", table)


def _print_disagreements(console: Console, items: Items, columns: dict[str, Sequence[bool]], limit: int) -> None:
    positions = disagreements(columns)
    shown = min(limit, len(positions))
    listed = "" if shown == len(positions) or shown == 0 else f"; the first {shown}"
    show(
        console,
        f"{len(positions)} of {len(items)} answers on which they disagree{listed}{more_hint(shown, len(positions))}",
    )
    if limit <= 0 or not positions:
        return
    grid = item_grid()
    for position in positions[:limit]:
        right = [name for name, column in columns.items() if column[position]]
        wrong = [name for name, column in columns.items() if not column[position]]
        add_item_head(grid, items.lines[position], items.questions[position], items.golds[position])
        add_item_text(grid, "answer", display_text(items.predictions[position]))
        grid.add_row("", "right", ", ".join(right) or "-")
        grid.add_row("", "wrong", ", ".join(wrong) or "-")
    show(console, grid)


def _names(args: argparse.Namespace) -> list[str]:
    if args.evaluator:
        return list(dict.fromkeys(args.evaluator))
    return [name for name in AGREEMENT_EVALUATORS if not (args.no_semantic and name == "sas")]


def run(args: argparse.Namespace) -> int:
    """Compare the evaluators with each other and with the human label, and print the tables."""
    if args.rating_field is not None:
        return run_ratings(args)
    items = items_from_args(args.file, args, _names(args))
    semantic = not args.no_semantic
    rows, found = run_agreement(items, _names(args), semantic, show_progress(args))
    columns = _columns(found, items)
    matrix = agreement_matrix(columns) if columns else None
    if args.format == "json":
        print(
            json.dumps(
                {
                    "path": items.path,
                    "items": len(items),
                    "acceptable": None if items.labels is None else sum(items.labels),
                    "evaluators": [{**asdict(row), "signature": signature(row.name)} for row in rows],
                    "matrix": None if matrix is None else matrix.to_json(),
                    "disagreements": [
                        {
                            "line": items.lines[position],
                            "question": items.questions[position],
                            "golds": list(items.golds[position]),
                            "prediction": display_text(items.predictions[position]),
                            "verdicts": {name: bool(column[position]) for name, column in columns.items()},
                        }
                        for position in disagreements(columns)
                    ],
                },
                ensure_ascii=False,
                allow_nan=False,  # for other programs: every figure is finite or None, never NaN or Infinity
            )
        )
        return 0
    _print_rows(rows, items)
    if matrix is not None and len(matrix.names) > 1:
        console = make_console()
        _print_matrix(console, matrix)
        show(console, "")
        _print_disagreements(console, items, columns, args.show)
    return 0
