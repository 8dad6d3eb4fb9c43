"""``--engine dask``: the file commands (score, judge, typed, metrics, tools) on a Dask cluster.

The same command, options and summary as the local run; the input may be several JSONL or
Parquet shards (paths or quoted glob patterns) and ``--output`` is a folder that receives one
Parquet file per partition. Without ``--scheduler`` a local cluster of one single-threaded worker
process per core (or ``--workers``) is started and closed. Dask is imported only when used.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from answer_eval.cli.common import MAX_PROCESSES, count
from answer_eval.errors import InputError

if TYPE_CHECKING:
    from answer_eval.evaluators.base import Evaluator
    from answer_eval.evaluators.registry import Entry
    from answer_eval.evaluators.summaries import Summary

__all__ = ["add_engine_options", "run_on_dask", "uses_dask"]


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """More input shards, ``--engine``, ``--scheduler`` and ``--workers`` (after the command's ``file``)."""
    # A default makes argparse treat it as optional: without one, a missing FILE is reported as
    # "the following arguments are required: file, SHARD".
    parser.add_argument(
        "more_files",
        nargs="*",
        default=[],
        metavar="SHARD",
        help="more input shards (JSONL or Parquet; with --engine dask)",
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
        "--workers",
        type=count(1, MAX_PROCESSES),
        metavar="N",
        help="with --engine dask and no --scheduler: local worker processes",
    )


def uses_dask(args: argparse.Namespace) -> bool:
    """Whether to run on Dask; raises :class:`InputError` for a Dask-only option on the local engine."""
    if args.engine == "dask":
        if args.scheduler and args.workers:
            raise InputError("--workers sizes a local cluster; with --scheduler the cluster has its own workers")
        if getattr(args, "resume", None):
            raise InputError("--resume works with the local engine; --engine dask writes every shard again")
        if "-" in (args.file, *args.more_files):
            raise InputError("--engine dask reads shard files, not standard input: save the input to a file")
        if getattr(args, "input_format", None) not in (None, "jsonl", "parquet"):
            raise InputError(
                f"--engine dask reads JSONL and Parquet shards; score a {args.input_format} file with the local engine"
            )
        return True
    if args.more_files:
        raise InputError("several input files need --engine dask; the local engine scores one file")
    for option in ("scheduler", "workers"):
        if getattr(args, option):
            raise InputError(f"--{option} needs --engine dask")
    return False


def run_on_dask(
    args: argparse.Namespace,
    entry: Entry,
    evaluator: Evaluator,
    fields: Sequence[Any],
    written: Sequence[tuple[str, str]],
) -> Summary:
    """Run a file command's evaluator on Dask with the command's fields and added columns; its summary.

    ``fields`` and ``written``: the command's :class:`answer_eval.cli.file_command.RoleField`
    per role and ``(output, name written)`` per output column, before ``--column-prefix``.
    """
    from answer_eval.cli.common import show_progress
    from answer_eval.engine.row_transforms import MARKER, marker_value

    try:
        # Every package of the extra, now: the engine imports distributed only when it connects.
        for package in ("dask.dataframe", "distributed", "pyarrow.parquet"):
            importlib.import_module(package)
        from answer_eval.dask.engine import check_output_folder, connect, make_plan, score_shards
    except ImportError as exc:
        raise InputError(
            f'--engine dask needs the dask extra: pip install "answer-eval-haystack[dask]" ({exc})'
        ) from None
    from answer_eval.dask.io import expand_shards

    inputs = [args.file, *args.more_files]
    input_format = getattr(args, "input_format", None)
    shards = expand_shards(inputs, input_format)  # every check that needs no cluster, before one is started
    _refuse_side_files(evaluator, shards, args.output)
    columns = {role.role: role.fields[0] for role in fields if len(role.fields) == 1}
    prefix = args.column_prefix
    outputs = {name: prefix + name_written for name, name_written in written if prefix + name_written != name}
    mark = (prefix + MARKER, marker_value(entry.command))
    try:
        plan = make_plan(evaluator, columns, outputs, args.skip_invalid, mark=mark, replace=args.replace_columns)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None
    _refuse_clash_early(plan, evaluator, shards[0], input_format, args.max_line_bytes)
    if args.output is not None:
        check_output_folder(args.output, shards)
    with connect(args.scheduler, args.workers) as client:
        return score_shards(
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
            input_format=input_format,
        )


def _refuse_side_files(evaluator: Evaluator, shards: Sequence[str], output: str | None) -> None:
    # The files the evaluator writes besides the shards (a reply cache): never an input shard, a file
    # it reads or the output folder, as on the local engine.
    from pathlib import Path

    from answer_eval.engine.output_files import refuse_side_files

    files = {Path(name): role for name, role in evaluator.files_written().items()}
    read = {Path(name): f"{name} ({role})" for name, role in evaluator.files_read().items()}
    written = {} if output is None else {Path(output): "the output folder"}
    refuse_side_files(files, {**read, **{Path(shard): f"the input shard {shard}" for shard in shards}}, written)


def _refuse_clash_early(
    plan: Any, evaluator: Evaluator, first_shard: str, input_format: str | None, max_line_bytes: int
) -> None:
    # The first shard's columns are cheap to read: a clash there is refused before a cluster starts.
    from answer_eval.dask.io import shard_columns
    from answer_eval.engine.row_transforms import ColumnClash, clash_message

    if plan.replace:
        return
    written = plan.written(evaluator)
    present = set(shard_columns(first_shard, input_format, max_line_bytes))
    for name in written:
        if name in present:
            raise ColumnClash(clash_message(name, written, "the rows already have"), first_shard)
