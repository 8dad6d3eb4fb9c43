"""``answer-eval tools``: tool-call metrics of every row of a JSONL file against its reference call."""

from __future__ import annotations

import argparse
import json
from typing import Any

from answer_eval.commands.common import add_field_options
from answer_eval.commands.common_files import process_file
from answer_eval.commands.dask_run import run_on_dask, uses_dask
from answer_eval.commands.metrics import MetricsSummary, print_metrics_summary
from answer_eval.commands.score import add_file_options
from answer_eval.files import InputError
from answer_eval.runner import require_fields
from answer_eval.tool_calls import TOOL_CALL_METRICS, ToolCallScorer, read_tool_calls

__all__ = ["register"]


def register(commands: Any) -> None:
    """Add the ``tools`` sub-command."""
    parser = commands.add_parser(
        "tools",
        help="tool-call metrics of each predicted call against the reference call",
        description=(
            "Score one predicted tool call a line against the reference call: tool_call_valid, "
            "tool_name_match, tool_parameter_key_match, tool_parameter_kv_match. A call is a JSON string "
            'or object {"content": ..., "tool_calls": [{"name": ..., "arguments": {...}}]} or a list of '
            "calls. An invalid prediction scores 0 (parse_failure); an invalid reference is bad input."
        ),
    )
    parser.add_argument("file", help="JSONL input, one JSON object a line")
    parser.add_argument(
        "--metric",
        action="append",
        choices=TOOL_CALL_METRICS,
        help="a metric to compute (repeatable; default: all four)",
    )
    add_field_options(parser, answers=False, prediction="the predicted call")
    parser.add_argument(
        "--reference-field", default="reference", help="field holding the reference call (default: %(default)s)"
    )
    add_file_options(parser)
    parser.add_argument("--strict", action="store_true", help="compare argument values exactly, not normalised")
    parser.add_argument(
        "--calls", choices=("first", "all"), default="first", help="calls inspected (default: %(default)s)"
    )
    parser.add_argument(
        "--alignment",
        choices=("order", "name"),
        default="order",
        help="with --calls all, how calls are paired (default: %(default)s)",
    )
    parser.add_argument(
        "--extra-keys",
        choices=("ignore", "penalize"),
        default="ignore",
        help="whether parameters the reference lacks count against the prediction (default: %(default)s)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Score the file and print the summary."""
    names = list(dict.fromkeys(args.metric or TOOL_CALL_METRICS))
    scorer = ToolCallScorer(
        names, strict=args.strict, calls=args.calls, alignment=args.alignment, extra_keys=args.extra_keys
    )
    if uses_dask(args):
        return run_on_dask(args, "tools")
    summary = MetricsSummary(path=str(args.file), metrics=scorer.metrics, output=args.output)

    def transform(row: dict[str, Any], number: int) -> dict[str, Any]:
        require_fields(row, (args.reference_field, args.prediction_field))
        try:
            reference = scorer.reference_calls(row[args.reference_field])
        except ValueError as exc:
            raise InputError(f"field {args.reference_field!r}: {exc}") from None
        verdict = scorer.score_calls(read_tool_calls(row[args.prediction_field]), reference)
        return {**row, **verdict.scores, "failure_kind": verdict.failure_kind, "problem": verdict.problem}

    result = process_file(args, "tools", transform, summary.add, (*scorer.metrics, "failure_kind", "problem"))
    summary.invalid_lines = result.invalid_lines
    if args.format == "json":
        print(json.dumps(summary.to_json()))
    else:
        print_metrics_summary(summary, "tools")
    return 0
