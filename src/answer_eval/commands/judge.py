"""``answer-eval judge``: the AnswerJudge cascade on a JSONL file."""

from __future__ import annotations

import argparse
import json
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from answer_eval.commands.common import add_field_options
from answer_eval.commands.common_files import process_file
from answer_eval.commands.dask_run import run_on_dask, uses_dask
from answer_eval.commands.score import add_file_options, print_summary
from answer_eval.files import InputError
from answer_eval.judge import AnswerJudge
from answer_eval.labels import acceptable_answers
from answer_eval.not_found import NOT_IN_DOCUMENT
from answer_eval.runner import FileSummary, require_fields
from answer_eval.semantic import SEMANTIC_DEPRECATION, MiniLMSimilarity, semantic_available
from answer_eval.verdicts import count_failures

__all__ = ["JUDGE_COLUMNS", "register", "report"]

JUDGE_COLUMNS = ("correct", "confidence", "acceptance", "stage", "evidence", "failure_kind", "outcome")
"""The columns ``answer-eval judge`` adds to every row."""

logger = logging.getLogger(__name__)


def register(commands: Any) -> None:
    """Add the ``judge`` sub-command."""
    parser = commands.add_parser(
        "judge",
        help="judge a JSONL file like a human grader (contains and lenient lexical stages, calibrated acceptance)",
        description=(
            "Judge one answer a line with the AnswerJudge cascade, offline. Writes correct, confidence, acceptance "
            "(the probability that a person accepts the answer), stage, evidence and failure_kind per row; prints "
            "a summary with a 95% Wilson interval."
        ),
    )
    parser.add_argument("file", help="JSONL input, one JSON object a line")
    add_field_options(parser, question=True)
    stages = parser.add_mutually_exclusive_group()
    stages.add_argument(
        "--semantic",
        action="store_true",
        help="deprecated: add the MiniLM semantic stage (changes no verdict with the shipped model; ~50x slower)",
    )
    stages.add_argument("--no-semantic", action="store_true", help="the default now; kept so old command lines work")
    parser.add_argument("--not-found-label", default=NOT_IN_DOCUMENT, help="label of unanswerable questions")
    add_file_options(parser)
    parser.set_defaults(handler=run)


def build_judge(semantic: bool, not_found_label: str = NOT_IN_DOCUMENT) -> AnswerJudge:
    """An AnswerJudge; with the deprecated semantic stage when asked for and installed (warning once otherwise)."""
    similarity = None
    if semantic:
        logger.warning("answer-eval judge: --semantic is deprecated: %s", SEMANTIC_DEPRECATION)
        if semantic_available():
            similarity = MiniLMSimilarity()
            similarity.warm_up()
        else:
            logger.warning("answer-eval judge: the 'semantic' extra is not installed; running the lexical stages only")
    try:
        return AnswerJudge(similarity=similarity, not_found_label=not_found_label)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    """Judge the file and print the summary."""
    if uses_dask(args):
        return run_on_dask(args, "judge")
    judge = build_judge(args.semantic, args.not_found_label)
    summary = FileSummary(path=str(args.file), output=args.output)
    kinds: Counter[str] = Counter()
    stages: Counter[str] = Counter()

    def transform(row: dict[str, Any], number: int) -> dict[str, Any]:
        require_fields(row, (args.answers_field, args.prediction_field))
        try:
            labels = acceptable_answers(row[args.answers_field])
        except (TypeError, ValueError) as exc:
            raise InputError(f"field {args.answers_field!r}: {exc}") from None
        question = row.get(args.question_field)
        verdict = judge.judge(row[args.prediction_field], list(labels), question if isinstance(question, str) else None)
        return {
            **row,
            "correct": verdict.correct,
            "confidence": round(verdict.confidence, 4),
            "acceptance": round(verdict.acceptance, 4),
            "stage": verdict.stage,
            "evidence": verdict.evidence,
            "failure_kind": verdict.failure_kind,
            "outcome": verdict.outcome,
        }

    def collect(result: dict[str, Any]) -> None:
        summary.correct += result["correct"]
        stages[result["stage"]] += 1
        if result["failure_kind"] is not None:
            kinds[result["failure_kind"]] += 1

    stats = process_file(args, "judge", transform, collect, JUDGE_COLUMNS)
    summary.items, summary.invalid_lines = stats.rows, stats.invalid_lines
    summary.failure_counts = count_failures(kinds.elements())
    report(summary, stages, args.format)
    return 0


def report(summary: FileSummary, stages: Mapping[str, int], output_format: str = "text") -> None:
    """Print the judge's summary: as text, or (``output_format="json"``) as one JSON object with the stages."""
    if output_format == "json":
        print(json.dumps({**summary.to_json(), "stages": dict(sorted(stages.items()))}))
        return
    print_summary(summary, command="judge")
    print("  stages")
    for stage, count in sorted(stages.items()):
        print(f"    {stage:<16} {count}")
