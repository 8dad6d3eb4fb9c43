"""The file commands (``score``, ``judge``, ``typed``, ``metrics``, ``tools``): one driver, built from the registry.

Each registered evaluator becomes ``answer-eval <command> FILE``: its input fields from its roles
(``--<role>-field``), its options from its options dataclass (each field of
:class:`answer_eval.evaluators.base.Options` one flag, its metadata from
:func:`answer_eval.evaluators.base.option`, the parsed flags read back into the options, so a
command has no option code of its own), and the options every file command shares: ``--output``,
``--format json``, ``--skip-invalid``, ``--jobs N``, ``--resume``, ``--checkpoint-seconds``,
``--max-line-bytes``, added columns and progress. The rows go through the evaluator's column-wise
``score`` (:func:`answer_eval.engine.runner.run_file`), the summary is the evaluator's own, and the
checkpoint of ``--resume`` records the evaluator's signature.

``--engine dask`` runs the same command, options and summary on a Dask cluster: the input may be
several JSONL or Parquet shards (paths or quoted glob patterns) and ``--output`` is a folder that
receives one Parquet file per partition. Without ``--scheduler`` a local cluster of one
single-threaded worker process per core (or ``--workers``) is started and closed. Dask is imported
only when used.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
from collections.abc import Collection, Sequence
from typing import Any

from answer_eval.cli.batch_runs import BATCH_FLAGS, add_batch_options, run_batch
from answer_eval.cli.dry_run_estimate import (
    DRY_RUN_FLAGS,
    add_dry_run_options,
    dry_run_args,
    offers_dry_run,
    print_estimate,
    recording,
)
from answer_eval.cli.options_and_output import (
    INPUT_HELP,
    MAX_PROCESSES,
    add_format_option,
    add_input_format_option,
    add_progress_option,
    count,
    show_progress,
    written_path,
)
from answer_eval.engine.checkpoint import CHECKPOINT_SECONDS, run_options
from answer_eval.engine.row_transforms import AddedColumns, RoleField, default_fields, marker_value
from answer_eval.engine.runner import run_file
from answer_eval.errors import InputError, NothingGraded, OptionError
from answer_eval.evaluators.base import Evaluator, Options, Role
from answer_eval.evaluators.registry import EVALUATORS, Entry
from answer_eval.evaluators.summaries import Summary
from answer_eval.inputs.jsonl import DEFAULT_MAX_LINE_BYTES

__all__ = ["add_option_flags", "added_columns", "flag_of", "register_all", "resume_options"]


NONE_SUFFIX = "__none"
"""The suffix of the destination of an option's ``none_flag`` (``--no-rounding``: ``decimals__none``)."""


def flag_of(item: dataclasses.Field[Any]) -> str:
    """The command-line flag of an options field."""
    return str(item.metadata.get("flag") or "--" + item.name.replace("_", "-"))


def _value_type(item: dataclasses.Field[Any]) -> type:
    annotation = str(item.type)
    if "float" in annotation:
        return float
    if "int" in annotation:
        return int
    return str


def add_role_flags(parser: argparse.ArgumentParser, evaluator: type[Evaluator], group: Any = None) -> None:
    """``--<role>-field`` for every input role, and ``--<output>-field`` for every output that may be renamed."""
    target = group or parser
    for role in evaluator.roles:
        _add_role(target, role)
    for name, help_text in evaluator.renamable.items():
        target.add_argument(f"--{name}-field", default=name, help=f"{help_text} (default: %(default)s)")


def _add_role(target: Any, role: Role) -> None:
    if role.fallbacks:
        target.add_argument(f"--{role.name}-field", help=f"field holding {role.help}")
    else:
        target.add_argument(
            f"--{role.name}-field", default=role.field, help=f"field holding {role.help} (default: %(default)s)"
        )


def add_option_flags(
    parser: argparse.ArgumentParser, options: type[Options], only: Collection[str] | None = None
) -> None:
    """One flag per field of ``options`` that the command line offers (``only``: of these fields alone)."""
    for item in dataclasses.fields(options):
        meta = item.metadata
        if not meta.get("cli", True) or (only is not None and item.name not in only):
            continue
        flag, help_text = flag_of(item), meta.get("help")
        if isinstance(item.default, bool) and meta.get("off_flag"):
            pair = parser.add_mutually_exclusive_group()
            pair.add_argument(flag, dest=item.name, action="store_true", default=item.default, help=help_text)
            pair.add_argument(
                meta["off_flag"], dest=item.name, action="store_false", default=item.default, help=meta.get("off_help")
            )
        elif isinstance(item.default, bool):
            action = "store_false" if meta.get("negate") else "store_true"
            parser.add_argument(flag, dest=item.name, action=action, help=help_text)
        elif meta.get("repeat") or meta.get("panel"):
            parser.add_argument(
                flag,
                dest=item.name,
                action="append",
                choices=meta.get("choices"),
                metavar=meta.get("metavar"),
                help=help_text,
            )
        else:
            parser.add_argument(
                flag,
                dest=item.name,
                type=_value_type(item),
                default=item.default,
                choices=meta.get("choices"),
                metavar=meta.get("metavar"),
                help=help_text,
            )
        if meta.get("none_flag"):
            parser.add_argument(
                meta["none_flag"], dest=item.name + NONE_SUFFIX, action="store_true", help=meta.get("none_help")
            )


def options_from_args(evaluator: type[Evaluator], args: argparse.Namespace) -> Options:
    """The options the parsed flags set (the others at their defaults).

    :raises InputError: For options that do not go together, naming the flag.
    """
    options = evaluator.options_type
    values: dict[str, Any] = {}
    for item in dataclasses.fields(options):
        if not item.metadata.get("cli", True) or not hasattr(args, item.name):
            continue
        value = flag_value(item, getattr(args, item.name), args)
        if getattr(args, item.name + NONE_SUFFIX, False):
            value = None
        values[item.name] = value
    try:
        return options(**values)
    except OptionError as exc:
        raise as_input_error(exc, options) from None
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None


def flag_value(item: dataclasses.Field[Any], value: Any, args: argparse.Namespace) -> Any:
    """The option's value from its parsed flag: a repeated list deduplicated, a jury's values as given.

    A ``panel`` option (:func:`~answer_eval.evaluators.base.option`): once per judge in order, kept as
    given (a tuple); given once, the value itself; with one judge named, a flag given twice keeps its last value.
    """
    if item.metadata.get("repeat"):
        return item.default if value is None else tuple(dict.fromkeys(value))
    lead = item.metadata.get("panel")
    if not lead or not isinstance(value, list):
        return item.default if lead and value is None else value
    judges = len(getattr(args, lead, None) or ())
    return value[-1] if len(value) == 1 or judges <= 1 else tuple(value)


def as_input_error(error: OptionError, options: type[Options]) -> InputError:
    """An option error as the command line says it: naming the flag rather than the field."""
    for item in dataclasses.fields(options):
        if item.name == error.option:
            return InputError(f"{flag_of(item)} {error.detail}")
    return InputError(str(error))


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

    ``fields`` and ``written``: the command's :class:`answer_eval.cli.file_commands.RoleField`
    per role and ``(output, name written)`` per output column, before ``--column-prefix``.
    """
    from answer_eval.cli.options_and_output import show_progress
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


# Flags the record of a run already holds in the form the run resolved them to (the engine's own
# part of the record: skip_invalid, max_line_bytes, the input's format, the added columns).
_RESOLVED = frozenset({"skip_invalid", "max_line_bytes", "input_format", "column_prefix", "replace_columns"})


def role_fields(evaluator: Evaluator, args: argparse.Namespace) -> tuple[RoleField, ...]:
    """Where each role is read, from the ``--<role>-field`` flags."""
    chosen = {role.name: getattr(args, f"{role.name}_field", None) for role in evaluator.roles}
    return default_fields(evaluator, {name: field for name, field in chosen.items() if field is not None})


def written_names(evaluator: Evaluator, args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """Each output column and the name it is written under (``--<output>-field`` for a renamable one)."""
    # Only a renamable output has a flag: any other output name is never looked up among the flags.
    renamed = {name: getattr(args, f"{name}_field", None) for name in evaluator.renamable}
    return tuple((name, renamed.get(name) or name) for name in evaluator.outputs())


def resume_options(entry: Entry, evaluator: Evaluator, args: argparse.Namespace) -> dict[str, Any]:
    """The flags of a file command that go into its checkpoint record besides what the run resolves them to.

    Every flag except the neutral ones (``--format``, ``--jobs``, ``--checkpoint-seconds`` ...:
    :data:`answer_eval.engine.checkpoint.NEUTRAL_OPTIONS`) and those the record holds
    otherwise: the evaluator's options (the signed ones in its signature; the others cannot
    change a result), the input and output fields (as read and written) and the engine's own
    (:data:`_RESOLVED`). A flag added later is recorded unless declared neutral, so a ``--resume``
    with it changed is refused rather than mixing two kinds of rows.
    """
    options = {item.name for item in dataclasses.fields(evaluator.options_type)}
    elsewhere = {
        *_RESOLVED,
        *options,
        *(name + NONE_SUFFIX for name in options),
        *(f"{role.name}_field" for role in evaluator.roles),
        *(f"{name}_field" for name in evaluator.renamable),
        *DRY_RUN_FLAGS,
        *BATCH_FLAGS,
    }
    return run_options(entry.command, args, elsewhere)


def build_evaluator(entry: Entry, args: argparse.Namespace) -> Evaluator:
    """The command's evaluator with the options its flags set; ``InputError`` naming a bad flag."""
    cls = entry.load()
    try:
        options = options_from_args(cls, args)
        return cls(options)
    except OptionError as exc:
        raise as_input_error(exc, cls.options_type) from None
    except (TypeError, ValueError, ImportError, LookupError) as exc:
        raise InputError(str(exc)) from None


def register_all(commands: Any) -> None:
    """Add one sub-command per registered evaluator."""
    for entry in EVALUATORS.values():
        _register(commands, entry)


def _register(commands: Any, entry: Entry) -> None:
    cls = entry.load()
    parser = commands.add_parser(entry.command, help=entry.help, description=entry.description)
    parser.add_argument("file", help=f"the input: {INPUT_HELP}")
    group = parser.add_argument_group("fields")
    add_role_flags(parser, cls, group)
    add_input_format_option(group)
    # An evaluator that runs in one process only (the LLM grader) is offered no --jobs; --engine if Dask runs it.
    add_file_options(parser, parallel=cls.local_only is None, engine=cls.local_only is None or cls.on_dask)
    add_option_flags(parser.add_argument_group("scoring"), cls.options_type)
    if offers_dry_run(cls):
        add_dry_run_options(parser)
        add_batch_options(parser)
    parser.set_defaults(handler=lambda args: run(entry, args))


def run(entry: Entry, args: argparse.Namespace) -> int:
    """Run one file command: score the file (here, in ``--jobs`` workers, or on Dask) and print the summary."""
    dry = dry_run_args(args)
    if dry is not None:
        return _dry_run(entry, args, dry)
    if getattr(args, "batch", False):
        return run_batch(entry, args, _built, lambda *built: lambda at: _run_here(entry, at, *built))
    if getattr(args, "finish_live", False):
        raise InputError("--finish-live goes with --batch --resume: it sends live what a batch left unanswered")
    evaluator, fields, written = _built(entry, args)
    if uses_dask(args):
        summary = run_on_dask(args, entry, evaluator, fields, written)
    else:
        summary = _run_here(entry, args, evaluator, fields, written)
    summary.finish()
    print(json.dumps(summary.to_json(), allow_nan=False) if args.format == "json" else summary.text(entry.command))
    failure = evaluator.run_failure(summary)
    if failure is not None:
        kept = f"; the output {summary.output} is written, each row with its failure" if summary.output else ""
        raise NothingGraded(f"{failure}{kept}")
    return 0


def _built(
    entry: Entry, args: argparse.Namespace
) -> tuple[Evaluator, tuple[RoleField, ...], tuple[tuple[str, str], ...]]:
    """The command's evaluator, where it reads each role and the names it writes; refused as a run refuses them."""
    evaluator = build_evaluator(entry, args)
    fields, written = role_fields(evaluator, args), written_names(evaluator, args)
    evaluator.check_fields({role.role: role.fields[0] for role in fields}, [name for _, name in written])
    _check_one_process(entry, evaluator, args)
    return evaluator, fields, written


def _check_one_process(entry: Entry, evaluator: Evaluator, args: argparse.Namespace) -> None:
    refused = evaluator.dask_refusal()
    if uses_dask(args) and refused is not None:
        raise InputError(f"answer-eval {entry.command} --engine dask: {refused}")
    if evaluator.local_only is not None and args.jobs != 1:
        raise InputError(f"answer-eval {entry.command} runs in one process (no --jobs): {evaluator.local_only}")


def _dry_run(entry: Entry, args: argparse.Namespace, dry: argparse.Namespace) -> int:
    """``--dry-run`` (:mod:`answer_eval.cli.dry_run_estimate`): every row run with a recording caller; the estimate."""
    evaluator = build_evaluator(entry, dry)
    fields, written = role_fields(evaluator, dry), written_names(evaluator, dry)
    evaluator.check_fields({role.role: role.fields[0] for role in fields}, [name for _, name in written])
    _check_one_process(entry, evaluator, args)  # refused as the real run would refuse it
    recorder, cache = recording(evaluator, getattr(args, "cache_path", None))
    summary = run_file(
        args.file,
        evaluator,
        fields,
        written,
        skip_invalid=args.skip_invalid,
        progress=False,
        max_line_bytes=args.max_line_bytes,
        columns=added_columns(dry, entry.command, [name for _, name in written]),
        input_format=args.input_format,
        delimiter=args.delimiter,
    )
    found = 0 if cache is None else cache.prompts_found
    rows, invalid = summary.items, summary.invalid_lines
    print_estimate(entry.command, recorder.requests, rows=rows, invalid_lines=invalid, cached_prompts=found, args=args)
    return 0


def _run_here(
    entry: Entry,
    args: argparse.Namespace,
    evaluator: Evaluator,
    fields: tuple[RoleField, ...],
    written: tuple[tuple[str, str], ...],
) -> Summary:
    return run_file(
        args.file,
        evaluator,
        fields,
        written,
        output=args.output,
        skip_invalid=args.skip_invalid,
        progress=show_progress(args),
        jobs=args.jobs,
        resume=args.resume,
        max_line_bytes=args.max_line_bytes,
        checkpoint_seconds=args.checkpoint_seconds,
        columns=added_columns(args, entry.command, [name for _, name in written]),
        input_format=args.input_format,
        options=resume_options(entry, evaluator, args),
        delimiter=args.delimiter,
    )
