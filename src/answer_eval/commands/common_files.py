"""What every file command passes on to :func:`answer_eval.runner.process_jsonl` for reliability.

``--resume``, ``--checkpoint-seconds`` and ``--max-line-bytes`` (added by
:func:`answer_eval.commands.score.add_reliability_options`)
and the options that shape the command's output, which a resumed run must repeat.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from answer_eval.checkpoint import CHECKPOINT_SECONDS, run_options
from answer_eval.columns import AddedColumns, marker_value
from answer_eval.files import DEFAULT_MAX_LINE_BYTES
from answer_eval.runner import ProcessStats, RowTransform, process_jsonl

__all__ = ["added_columns", "file_run_options", "process_file", "show_progress"]


def show_progress(args: argparse.Namespace) -> bool:
    """Whether to draw a progress bar: on a terminal, unless ``--no-progress``."""
    return not args.no_progress and sys.stderr.isatty()


def added_columns(args: argparse.Namespace, command: str, names: Sequence[str]) -> AddedColumns:
    """The columns ``command`` adds (``names``), under ``--column-prefix``, with ``--replace-columns`` and its mark."""
    return AddedColumns(
        tuple(names), getattr(args, "column_prefix", ""), getattr(args, "replace_columns", False), marker_value(command)
    )


def process_file(
    args: argparse.Namespace,
    command: str,
    transform: RowTransform,
    on_row: Callable[[dict[str, Any]], None],
    added: Sequence[str],
    **more: Any,
) -> ProcessStats:
    """Run :func:`answer_eval.runner.process_jsonl` on ``args.file`` with the shared file options.

    ``--output``, ``--skip-invalid``, the progress bar, the added columns (``added``, the names
    ``transform`` writes; see :func:`added_columns`) and the reliability options of ``command``
    come from ``args``; ``more`` goes to ``process_jsonl`` as it is (``state``, ``jobs``...).
    """
    return process_jsonl(
        args.file,
        transform,
        output=args.output,
        skip_invalid=args.skip_invalid,
        progress=show_progress(args),
        on_row=on_row,
        columns=added_columns(args, command, added),
        **file_run_options(args, command),
        **more,
    )


def file_run_options(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The keyword arguments ``resume``, ``options``, ``max_line_bytes`` and ``checkpoint_seconds``.

    For :func:`answer_eval.runner.process_jsonl` (or :func:`answer_eval.runner.score_file`).
    """
    return {
        "resume": bool(getattr(args, "resume", False)),
        "options": run_options(command, args),
        "max_line_bytes": getattr(args, "max_line_bytes", DEFAULT_MAX_LINE_BYTES),
        "checkpoint_seconds": getattr(args, "checkpoint_seconds", CHECKPOINT_SECONDS),
    }
