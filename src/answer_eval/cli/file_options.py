"""The options every file command shares, for :func:`answer_eval.engine.runner.process_jsonl`.

The output, summary format, invalid lines, progress, jobs, engine, ``--resume``,
``--checkpoint-seconds``, ``--max-line-bytes`` and the added columns.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from answer_eval.cli.common import MAX_PROCESSES, add_format_option, add_progress_option, count, written_path
from answer_eval.cli.dask_run import add_engine_options
from answer_eval.engine.checkpoint_record import CHECKPOINT_SECONDS
from answer_eval.engine.columns import AddedColumns, marker_value
from answer_eval.engine.files import DEFAULT_MAX_LINE_BYTES

__all__ = ["add_column_options", "add_file_options", "add_reliability_options", "added_columns"]

MAX_LINE_BYTES_FLAG = 2**40
"""The largest ``--max-line-bytes``: a line is held in memory whole, and a 400-digit limit raised OverflowError."""


def added_columns(args: argparse.Namespace, command: str, names: Sequence[str]) -> AddedColumns:
    """The columns ``command`` adds (``names``), under ``--column-prefix``, with ``--replace-columns`` and its mark."""
    return AddedColumns(
        tuple(names), getattr(args, "column_prefix", ""), getattr(args, "replace_columns", False), marker_value(command)
    )


def add_file_options(parser: argparse.ArgumentParser, parallel: bool = True, engine: bool | None = None) -> None:
    """Options every file command shares: output, summary format, invalid lines, progress, jobs, engine.

    ``--jobs`` (``args.jobs``) is for :func:`answer_eval.engine.runner.process_jsonl`'s ``jobs``; a command
    that does not pass it on scores in one process. Without ``parallel``, ``--jobs`` is not offered;
    without ``engine`` (default: ``parallel``), nor are the engine's options (``--engine``, ``--scheduler``,
    ``--workers``, more shards): their values are the one-process defaults, so the run and its checkpoint
    record read them as before.
    """
    parser.add_argument(
        "--output", "-o", type=written_path, help="write every input row with its verdict to this .jsonl or .csv"
    )
    add_format_option(parser, "summary format (default: %(default)s)")
    parser.add_argument(
        "--skip-invalid", action="store_true", help="skip malformed lines and count them instead of stopping"
    )
    add_progress_option(parser)
    if parallel:
        parser.add_argument(
            "--jobs",
            "-j",
            type=count(1, MAX_PROCESSES),
            default=1,
            metavar="N",
            help="transform the rows in N worker processes: the same output, faster on several cores "
            "(default: %(default)s)",
        )
    add_reliability_options(parser)
    add_column_options(parser)
    if not parallel:
        parser.set_defaults(jobs=1)
    if parallel if engine is None else engine:
        add_engine_options(parser)
    else:
        parser.set_defaults(more_files=[], engine="local", scheduler=None, workers=None)


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
    """``--resume``, ``--checkpoint-seconds`` and ``--max-line-bytes``, for the row loop's checkpoints."""
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
        help="with --output, record the position for --resume at least every S seconds (0: after every batch of "
        "rows the evaluator grades together, one row for the offline ones; "
        "default: %(default)s); a run stopped by Ctrl-C or SIGTERM records it when it stops",
    )
    parser.add_argument(
        "--max-line-bytes",
        type=count(1, MAX_LINE_BYTES_FLAG),
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
