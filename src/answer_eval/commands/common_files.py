"""What every file command passes on to :func:`answer_eval.runner.process_jsonl` for reliability.

``--resume``, ``--checkpoint-seconds`` and ``--max-line-bytes`` (added by
:func:`answer_eval.commands.score.add_reliability_options`)
and the options that shape the command's output, which a resumed run must repeat.
"""

from __future__ import annotations

import argparse
from typing import Any

from answer_eval.checkpoint import CHECKPOINT_SECONDS, run_options
from answer_eval.files import DEFAULT_MAX_LINE_BYTES

__all__ = ["file_run_options"]


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
