"""The file commands (``score``, ``judge``, ``typed``, ``metrics``, ``tools``): one driver, built from the registry.

Each registered evaluator becomes ``answer-eval <command> FILE``: its input fields from its roles,
its options from its options dataclass (:mod:`answer_eval.cli.option_flags`), and the shared
file options (:mod:`answer_eval.cli.file_options`): ``--output``, ``--format json``,
``--skip-invalid``, ``--jobs N``, ``--resume``, ``--engine dask``, added columns and progress.
The rows go through the evaluator's column-wise ``score`` (:func:`answer_eval.evaluators.rows.run_file`),
the summary is the evaluator's own, and the checkpoint of ``--resume`` records the evaluator's signature.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from answer_eval.cli.common import INPUT_HELP, add_input_format_option, show_progress
from answer_eval.cli.dask_run import run_on_dask, uses_dask
from answer_eval.cli.dry_run import (
    DRY_RUN_FLAGS,
    add_dry_run_options,
    dry_run_args,
    offers_dry_run,
    print_estimate,
    recording,
)
from answer_eval.cli.file_options import add_file_options, added_columns
from answer_eval.cli.option_flags import (
    NONE_SUFFIX,
    add_option_flags,
    add_role_flags,
    as_input_error,
    options_from_args,
)
from answer_eval.engine.checkpoint_record import run_options
from answer_eval.errors import InputError, NothingGraded, OptionError
from answer_eval.evaluators.base import Evaluator
from answer_eval.evaluators.registry import EVALUATORS, Entry
from answer_eval.evaluators.rows import RoleField, default_fields, run_file
from answer_eval.evaluators.summaries import Summary

__all__ = ["build_evaluator", "register_all", "resume_options", "role_fields", "written_names"]

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
    :data:`answer_eval.engine.checkpoint_record.NEUTRAL_OPTIONS`) and those the record holds
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
    parser.set_defaults(handler=lambda args: run(entry, args))


def run(entry: Entry, args: argparse.Namespace) -> int:
    """Run one file command: score the file (here, in ``--jobs`` workers, or on Dask) and print the summary."""
    dry = dry_run_args(args)
    if dry is not None:
        return _dry_run(entry, args, dry)
    evaluator = build_evaluator(entry, args)
    fields, written = role_fields(evaluator, args), written_names(evaluator, args)
    evaluator.check_fields({role.role: role.fields[0] for role in fields}, [name for _, name in written])
    _check_one_process(entry, evaluator, args)
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


def _check_one_process(entry: Entry, evaluator: Evaluator, args: argparse.Namespace) -> None:
    refused = evaluator.dask_refusal()
    if uses_dask(args) and refused is not None:
        raise InputError(f"answer-eval {entry.command} --engine dask: {refused}")
    if evaluator.local_only is not None and args.jobs != 1:
        raise InputError(f"answer-eval {entry.command} runs in one process (no --jobs): {evaluator.local_only}")


def _dry_run(entry: Entry, args: argparse.Namespace, dry: argparse.Namespace) -> int:
    """``--dry-run`` (:mod:`answer_eval.cli.dry_run`): every row run with a caller that records; the estimate."""
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
