"""The ``answer-eval`` command line.

Exit codes: 0 when the input was scored, 2 for bad input or usage (the message names the file and
line), 1 for an unexpected failure, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from answer_eval.commands import agreement, compare, judge, metrics, report, score, tools, typed
from answer_eval.files import InputError

__all__ = ["main", "run"]

EXIT_BAD_INPUT = 2
# One module per sub-command (see answer_eval.commands); add new ones here.
COMMANDS = [score, judge, agreement, compare, report, metrics, tools, typed]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="answer-eval", description="Grade question-answering and RAG answers against acceptable answers."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    args = _parser().parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except InputError as exc:
        print(f"answer-eval: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"answer-eval: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
