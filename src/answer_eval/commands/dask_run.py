"""``--engine dask``: the file commands (score, judge, typed, metrics, tools) on a Dask cluster.

The same command, options and summary as the local run; the input may be several JSONL or
Parquet shards (paths or quoted glob patterns) and ``--output`` is a folder that receives one
Parquet file per partition. Without ``--scheduler`` a local cluster of one single-threaded worker
process per core (or ``--workers``) is started and closed. Dask is imported only when used.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from answer_eval.commands.common import count
from answer_eval.files import InputError

__all__ = ["add_engine_options", "run_on_dask", "uses_dask"]


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """More input shards, ``--engine``, ``--scheduler`` and ``--workers`` (after the command's ``file``)."""
    parser.add_argument(
        "more_files", nargs="*", metavar="SHARD", help="more input shards (JSONL or Parquet; with --engine dask)"
    )
    engine = parser.add_argument_group("engine")
    engine.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: this process (or --jobs processes); dask: partitions on a Dask cluster, inputs may be "
        "JSONL or Parquet shards or glob patterns, --output is a folder of Parquet shards (default: %(default)s)",
    )
    engine.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: the scheduler of an existing cluster (tcp://host:8786); default: a local "
        "cluster of one worker process per core",
    )
    engine.add_argument(
        "--workers", type=count(1), metavar="N", help="with --engine dask and no --scheduler: local worker processes"
    )


def uses_dask(args: argparse.Namespace) -> bool:
    """Whether to run on Dask; raises :class:`InputError` for a Dask-only option on the local engine."""
    if args.engine == "dask":
        if args.scheduler and args.workers:
            raise InputError("--workers sizes a local cluster; with --scheduler the cluster has its own workers")
        if getattr(args, "resume", None):
            raise InputError("--resume works with the local engine; --engine dask writes every shard again")
        return True
    if args.more_files:
        raise InputError("several input files need --engine dask; the local engine scores one file")
    for option in ("scheduler", "workers"):
        if getattr(args, option):
            raise InputError(f"--{option} needs --engine dask")
    return False


def _score(args: argparse.Namespace) -> tuple[Any, dict[str, str], dict[str, str]]:
    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

    evaluator = AnswerContainsEvaluator(args.not_found_label, args.not_found_phrase)
    return evaluator, {"prediction": args.prediction_field, "answers": args.answers_field}, {}


def _judge(args: argparse.Namespace) -> tuple[Any, dict[str, str], dict[str, str]]:
    from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator

    evaluator = AnswerJudgeEvaluator(semantic=args.semantic, not_found_label=args.not_found_label)
    columns = {"prediction": args.prediction_field, "answers": args.answers_field, "question": args.question_field}
    return evaluator, columns, {}


def _typed(args: argparse.Namespace) -> tuple[Any, dict[str, str], dict[str, str]]:
    from answer_eval.commands.typed import typed_options
    from haystack_integrations.components.evaluators.answer_eval import TypedAnswerEvaluator

    evaluator = TypedAnswerEvaluator(**typed_options(args), rouge_types=args.rouge_type, default_type=args.default_type)
    columns = {"prediction": args.prediction_field, "solution": args.solution_field, "type": args.type_field}
    return evaluator, columns, {"reward": args.reward_field}


def _metrics(args: argparse.Namespace) -> tuple[Any, dict[str, str], dict[str, str]]:
    from answer_eval.commands.metrics import metric_options
    from answer_eval.reference_metrics import REFERENCE_METRICS
    from haystack_integrations.components.evaluators.answer_eval import ReferenceMetricsEvaluator

    evaluator = ReferenceMetricsEvaluator(
        metrics=list(dict.fromkeys(args.metric or REFERENCE_METRICS)), **metric_options(args)
    )
    columns = {"prediction": args.prediction_field}
    if args.reference_field is not None:
        columns["reference"] = args.reference_field
    return evaluator, columns, {}


def _tools(args: argparse.Namespace) -> tuple[Any, dict[str, str], dict[str, str]]:
    from answer_eval.tool_calls import TOOL_CALL_METRICS
    from haystack_integrations.components.evaluators.answer_eval import ToolCallEvaluator

    evaluator = ToolCallEvaluator(
        list(dict.fromkeys(args.metric or TOOL_CALL_METRICS)),
        strict=args.strict,
        calls=args.calls,
        alignment=args.alignment,
        extra_keys=args.extra_keys,
    )
    return evaluator, {"prediction": args.prediction_field, "reference": args.reference_field}, {}


_BUILDERS = {"score": _score, "judge": _judge, "typed": _typed, "metrics": _metrics, "tools": _tools}


def _print(summary: Any, args: argparse.Namespace, command: str) -> None:
    from answer_eval.commands.judge import report
    from answer_eval.commands.metrics import print_metrics_summary
    from answer_eval.commands.score import print_summary
    from answer_eval.commands.typed import print_typed_summary

    if command == "judge":
        report(summary.result, summary.stages, args.format)
    elif args.format == "json":
        print(json.dumps(summary.to_json()))
    elif command == "score":
        print_summary(summary.result)
    elif command == "typed":
        print_typed_summary(summary.result)
    else:
        print_metrics_summary(summary.result, command)


def run_on_dask(args: argparse.Namespace, command: str) -> int:
    """Run ``command`` (score, judge, typed, metrics, tools) with its parsed options on Dask and print the summary."""
    from answer_eval.commands.common_files import show_progress

    try:
        evaluator, columns, outputs = _BUILDERS[command](args)
    except (TypeError, ValueError, ImportError) as exc:
        raise InputError(str(exc)) from None
    try:
        from answer_eval.dask_engine import check_output_folder, connect, make_plan, score_shards
    except ImportError as exc:
        raise InputError(
            f'--engine dask needs the dask extra: pip install "answer-eval-haystack[dask]" ({exc})'
        ) from None
    from answer_eval.dask_io import expand_shards

    inputs = [args.file, *args.more_files]
    shards = expand_shards(inputs)  # every check that needs no cluster, before one is started
    outputs, mark = _prefixed(evaluator, outputs, args, command)
    try:
        plan = make_plan(evaluator, columns, outputs, args.skip_invalid, mark=mark, replace=args.replace_columns)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None
    _refuse_clash_early(plan, evaluator, shards[0])
    if args.output is not None:
        check_output_folder(args.output, shards)
    with connect(args.scheduler, args.workers) as client:
        summary = score_shards(
            inputs,
            evaluator,
            output=args.output,
            client=client,
            columns=columns,
            outputs=outputs,
            skip_invalid=args.skip_invalid,
            max_line_bytes=args.max_line_bytes,
            progress=show_progress(args),
            mark=mark,
            replace_columns=args.replace_columns,
        )
    _print(summary, args, command)
    return 0


def _prefixed(
    evaluator: Any, outputs: dict[str, str], args: argparse.Namespace, command: str
) -> tuple[dict[str, str], tuple[str, str]]:
    """The verdict columns under ``--column-prefix``, and the provenance mark, as the local command writes them."""
    from answer_eval.columns import MARKER, marker_value
    from answer_eval.dask_adapters import adapter_for

    adapter = adapter_for(evaluator.to_dict())
    prefix = args.column_prefix
    names = {name: prefix + outputs.get(name, name) for name in adapter.outputs(evaluator)}
    return {name: written for name, written in names.items() if written != name}, (
        prefix + MARKER,
        marker_value(command),
    )


def _refuse_clash_early(plan: Any, evaluator: Any, first_shard: str) -> None:
    # The first shard's columns are cheap to read: a clash there is refused before a cluster starts.
    from answer_eval.columns import ColumnClash, clash_message
    from answer_eval.dask_adapters import adapter_for
    from answer_eval.dask_io import shard_columns

    if plan.replace:
        return
    written = plan.written(adapter_for(plan.evaluator), evaluator)
    present = set(shard_columns(first_shard))
    for name in written:
        if name in present:
            raise ColumnClash(clash_message(name, written, "the rows already have"), first_shard)
