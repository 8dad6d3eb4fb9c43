"""``answer-eval compare``: is system B better than system A on the same questions, and where do they differ."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from answer_eval.cli.common import (
    INPUT_HELP,
    MAX_RESAMPLES,
    add_evaluator_options,
    add_field_options,
    add_format_option,
    add_item_head,
    add_item_text,
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
    run_evaluators,
    show,
    show_progress,
    stdin_once,
)
from answer_eval.inputs.item_files import Items
from answer_eval.reports.scorers import get_spec, signature
from answer_eval.stats.compare import EvaluatorComparison, align, compare_scores

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["register"]

TESTS = {"mcnemar_exact": "McNemar exact", "paired_bootstrap": "paired bootstrap"}


def register(commands: Any) -> None:
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
    parser.set_defaults(handler=run)


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


def run(args: argparse.Namespace) -> int:
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
