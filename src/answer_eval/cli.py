"""The ``answer-eval`` command line.

Exit codes: 0 when the input was scored, 2 for bad input or usage (the message names the file and
line), 1 for an unexpected failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from answer_eval.files import InputError
from answer_eval.not_found import NOT_IN_DOCUMENT
from answer_eval.runner import FileSummary, score_file
from answer_eval.verdicts import AnswerContainsScorer

__all__ = ["main"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="answer-eval", description="Grade question-answering and RAG answers against acceptable answers."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score = commands.add_parser(
        "score",
        help="score a JSONL file with the answer-contains rules",
        description=(
            "Score one answer a line: right when the folded answer contains an acceptable answer, "
            "numbers matched whole. Prints a summary with a 95%% Wilson interval and the failure kinds."
        ),
    )
    score.add_argument("file", help="JSONL input, one JSON object a line")
    score.add_argument(
        "--prediction-field", default="prediction", help="field holding the answer (default: %(default)s)"
    )
    score.add_argument(
        "--answers-field", default="answers", help="field holding the acceptable answer(s) (default: %(default)s)"
    )
    score.add_argument(
        "--output", "-o", help="write every row with correct, failure_kind, outcome to this .jsonl or .csv"
    )
    score.add_argument(
        "--format", choices=("text", "json"), default="text", help="summary format (default: %(default)s)"
    )
    score.add_argument(
        "--skip-invalid", action="store_true", help="skip malformed lines and count them instead of stopping"
    )
    score.add_argument(
        "--not-found-label", default=NOT_IN_DOCUMENT, help="label of unanswerable questions (default: %(default)s)"
    )
    score.add_argument(
        "--not-found-phrase",
        action="append",
        default=[],
        metavar="PHRASE",
        help="another phrase that reports the answer is not in the document (repeatable)",
    )
    score.add_argument("--no-progress", action="store_true", help="no progress bar, even on a terminal")
    return parser


def _print_summary(summary: FileSummary) -> None:
    low, high = summary.interval()
    lines = [
        f"answer-eval score: {summary.path}",
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


def _score(args: argparse.Namespace) -> int:
    try:
        scorer = AnswerContainsScorer(args.not_found_label, args.not_found_phrase)
    except ValueError as exc:
        print(f"answer-eval: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    summary = score_file(
        args.file,
        scorer,
        prediction_field=args.prediction_field,
        answers_field=args.answers_field,
        output=args.output,
        skip_invalid=args.skip_invalid,
        progress=not args.no_progress and sys.stderr.isatty(),
    )
    if args.format == "json":
        print(json.dumps(summary.to_json()))
    else:
        _print_summary(summary)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    args = _parser().parse_args(argv)
    try:
        return _score(args)
    except InputError as exc:
        print(f"answer-eval: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"answer-eval: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
