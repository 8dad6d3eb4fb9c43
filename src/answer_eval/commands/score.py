"""``answer-eval score``: the answer-contains rules on a JSONL file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from answer_eval.checkpoint import CHECKPOINT_SECONDS
from answer_eval.commands.common import add_field_options, count
from answer_eval.commands.common_files import added_columns, file_run_options, show_progress
from answer_eval.commands.dask_run import add_engine_options, run_on_dask, uses_dask
from answer_eval.files import DEFAULT_MAX_LINE_BYTES, InputError
from answer_eval.not_found import NOT_IN_DOCUMENT
from answer_eval.runner import SCORE_COLUMNS, FileSummary, score_file
from answer_eval.verdicts import AnswerContainsScorer

__all__ = ["add_file_options", "register"]


def add_file_options(parser: argparse.ArgumentParser) -> None:
    """Options every file command shares: output, summary format, invalid lines, progress, jobs, engine.

    ``--jobs`` (``args.jobs``) is for :func:`answer_eval.runner.process_jsonl`'s ``jobs``; a command
    that does not pass it on scores in one process.
    """
    parser.add_argument("--output", "-o", help="write every input row with its verdict to this .jsonl or .csv")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="summary format (default: %(default)s)"
    )
    parser.add_argument(
        "--skip-invalid", action="store_true", help="skip malformed lines and count them instead of stopping"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    parser.add_argument(
        "--jobs",
        "-j",
        type=count(1),
        default=1,
        metavar="N",
        help="transform the rows in N worker processes: the same output, faster on several cores; a command "
        "that runs in one process ignores it (default: %(default)s)",
    )
    add_reliability_options(parser)
    add_column_options(parser)
    add_engine_options(parser)


def add_column_options(parser: argparse.ArgumentParser) -> None:
    """``--column-prefix`` and ``--replace-columns``: what to do when a row already has a column the command adds."""
    columns = parser.add_argument_group("added columns")
    columns.add_argument(
        "--column-prefix",
        default="",
        metavar="PREFIX",
        help="write the columns this command adds under PREFIX+name (e.g. ae_correct), so that columns the rows "
        "already have with those names are kept; without it such a row is refused (exit 2)",
    )
    columns.add_argument(
        "--replace-columns",
        action="store_true",
        help="overwrite the columns the rows already have with the names this command adds, instead of refusing",
    )


def add_reliability_options(parser: argparse.ArgumentParser) -> None:
    """``--resume``, ``--checkpoint-seconds`` and ``--max-line-bytes``, for :func:`answer_eval.runner.process_jsonl`.

    Pass them on with :func:`answer_eval.commands.common_files.file_run_options`.
    """
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run from its checkpoint (the hidden .NAME.partial file beside --output), "
        "with the same options and input; the output is the one an uninterrupted run writes",
    )
    parser.add_argument(
        "--checkpoint-seconds",
        type=_seconds,
        default=CHECKPOINT_SECONDS,
        metavar="S",
        help="with --output, record the position for --resume at least every S seconds (0: after every row; "
        "default: %(default)s); a run stopped by Ctrl-C or SIGTERM records it when it stops",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=count(1),
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="refuse a JSONL line longer than N bytes as an invalid line, naming it (default: %(default)s, 64 MiB)",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds, 0 or more, got {text}")
    return value


def register(commands: Any) -> None:
    """Add the ``score`` sub-command."""
    parser = commands.add_parser(
        "score",
        help="score a JSONL file with the answer-contains rules",
        description=(
            "Score one answer a line: right when the folded answer contains an acceptable answer, "
            "numbers matched whole. Prints a summary with a 95% Wilson interval and the failure kinds."
        ),
    )
    parser.add_argument("file", help="JSONL input, one JSON object a line")
    add_field_options(parser)
    add_file_options(parser)
    parser.add_argument(
        "--not-found-label", default=NOT_IN_DOCUMENT, help="label of unanswerable questions (default: %(default)s)"
    )
    parser.add_argument(
        "--not-found-phrase",
        action="append",
        default=[],
        metavar="PHRASE",
        help="another phrase that reports the answer is not in the document (repeatable)",
    )
    parser.set_defaults(handler=run)


def print_summary(summary: FileSummary, command: str = "score") -> None:
    """Print a file summary as aligned text."""
    low, high = summary.interval()
    lines = [
        f"answer-eval {command}: {summary.path}",
        f"  items            {summary.items}",
        f"  correct          {summary.correct}",
        f"  score            {summary.score:.4f}   95% CI [{low:.4f}, {high:.4f}] (Wilson)",
    ]
    if summary.invalid_lines:
        lines.append(f"  invalid lines    {summary.invalid_lines} (skipped)")
    lines.append("  failure kinds")
    lines.extend(f"    {kind:<16} {count}" for kind, count in summary.failure_counts.items())
    if summary.output:
        lines.append(f"  output           {summary.output}")
    print("\n".join(lines))


def run(args: argparse.Namespace) -> int:
    """Score the file and print the summary."""
    try:
        scorer = AnswerContainsScorer(args.not_found_label, args.not_found_phrase)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if uses_dask(args):
        return run_on_dask(args, "score")
    summary = score_file(
        args.file,
        scorer,
        prediction_field=args.prediction_field,
        answers_field=args.answers_field,
        output=args.output,
        skip_invalid=args.skip_invalid,
        progress=show_progress(args),
        jobs=args.jobs,
        columns=added_columns(args, "score", SCORE_COLUMNS),
        **file_run_options(args, "score"),
    )
    if args.format == "json":
        print(json.dumps(summary.to_json()))
    else:
        print_summary(summary)
    return 0
