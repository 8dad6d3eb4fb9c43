"""Streaming a file through a row transform, with atomic output: the loop every file command shares.

:func:`run_file` is that loop for an evaluator, the local run of every file command (and of
:func:`answer_eval.evaluators.contains.score_file`): rows go through the evaluator's
column-wise ``score`` a batch at a time (:class:`~answer_eval.engine.row_transforms.EvaluatorRows`),
each output row is counted into the evaluator's summary from the row alone, and the checkpoint
records the evaluator's signature and the summary's snapshot (``--resume`` restores it).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from answer_eval.engine.checkpoint import CHECKPOINT_SECONDS, Checkpoint, Position, note_kept, work_files
from answer_eval.engine.output_files import (
    AtomicWriter,
    check_output_path,
    refuse_inputs_among,
    refuse_side_files,
    write_csv_from_jsonl,
)
from answer_eval.engine.parallel import is_picklable
from answer_eval.engine.row_loop import (
    ProcessStats,
    RowRun,
    RowTransform,
    RunState,
    deferred_interrupts,
    replay,
    run_here,
    run_in_pool,
)
from answer_eval.engine.row_transforms import (
    AddedColumns,
    EvaluatorRows,
    RoleField,
    SummaryRows,
    WithColumns,
    cell_fields,
    default_fields,
)
from answer_eval.errors import InputError
from answer_eval.evaluators.base import Evaluator
from answer_eval.evaluators.summaries import Summary
from answer_eval.inputs.formats import InputFile, is_stdin
from answer_eval.inputs.jsonl import DEFAULT_MAX_LINE_BYTES

__all__ = ["check_side_files", "no_rows_message", "process_jsonl", "require_fields", "run_file"]

OUTPUT_SUFFIXES = (".jsonl", ".ndjson", ".csv")


def _progress(source: InputFile, enabled: bool, initial: int = 0) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm  # imported only for a terminal: it is slow to import

    return tqdm(unit=" rows", desc=source.short_name, file=sys.stderr, leave=False, mininterval=0.5, initial=initial)


def process_jsonl(
    path: str | os.PathLike[str] | InputFile,
    transform: RowTransform,
    *,
    output: str | os.PathLike[str] | None = None,
    skip_invalid: bool = False,
    progress: bool = False,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    jobs: int = 1,
    on_row_fields: Sequence[str] | None = None,
    count_fields: Sequence[str] | None = None,
    resume: bool = False,
    options: dict[str, Any] | None = None,
    state: RunState | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    checkpoint_seconds: float = CHECKPOINT_SECONDS,
    columns: AddedColumns | None = None,
    input_format: str | None = None,
    text_fields: Collection[str] = (),
    value_fields: Collection[str] = (),
    delimiter: str | None = None,
) -> ProcessStats:
    """Stream an input file through ``transform``, writing every output row atomically.

    ``path`` is a file in any format of :mod:`answer_eval.inputs.formats` (JSONL, a JSON array, CSV,
    TSV, Parquet, each also compressed; ``input_format`` overrides the extension, ``text_fields``
    and ``value_fields`` name the CSV fields that hold text and values, ``delimiter`` is a CSV's
    when it is not to be told from its header row) or ``"-"`` for standard input, which cannot be
    resumed.

    The shared loop of every file command: rows are read a batch at a time (at most 256 rows
    or 4 MiB of lines, see :mod:`answer_eval.engine.row_transforms`: memory does not grow with the file; a
    line longer than ``max_line_bytes`` is an invalid line, never read whole, and without
    ``skip_invalid`` ends the run as soon as it passes the limit), each is transformed
    (a transform with ``many`` gets the whole batch), passed to ``on_row`` (to accumulate a summary)
    and written to ``output`` (``.jsonl`` or ``.csv``) in input order. The output path only ever
    receives a complete file: rows go to a hidden partial file beside it, fsynced and renamed into
    place (or turned into the CSV) when the whole input was processed. The input is only ever
    opened for reading, and an existing output is only ever replaced whole (keeping its
    permission bits; a read-only one is refused).

    A run that fails, whatever the exception (a bad line without ``skip_invalid``, a grader that
    became unavailable, a full disk, a bug), never touches the output path and keeps the rows
    done for ``resume``, as a signal does: the partial file and a record of the last row
    boundary before the failure (the rows before a refused line are written first), and the
    exception carries what was kept
    (:func:`answer_eval.engine.checkpoint.kept_by`). Nothing is kept when no row was
    done, for standard input (it cannot be read again) or for an error that says a resume
    cannot use them (``InputError.keeps_rows``: a row holding an added column).

    SIGINT and SIGTERM stop the run between two batches of rows, or at once while it only reads
    its input (a pipe that sends nothing, a row that never ends), at the last row boundary
    (:class:`answer_eval.engine.row_loop.Interrupted` is raised: exit codes 130 and 143 on the
    command line); with an ``output``, the partial file and a record of the position are kept (the
    position is also recorded every ``checkpoint_seconds`` while the run goes on, for a run killed
    outright), and ``resume=True`` continues from there, giving the output an uninterrupted run
    gives, byte for byte (see :mod:`answer_eval.engine.checkpoint`). ``options`` (what shapes the
    output: a resumed run must pass the same) and ``state`` (the caller's own running totals that
    ``on_row`` cannot rebuild from the rows written: ``(snapshot, restore)``) go into the record; on
    resuming, the rows already written are passed to ``on_row`` and counted again.

    With ``jobs`` above 1 the rows are transformed in that many worker processes (chunks of lines
    in input order, a few in flight at a time, so memory stays flat); the output, the counts and
    the errors (with their line numbers) are the same as with one process. ``transform`` must then
    be picklable (a module-level function, or an instance of a module-level class): each worker
    gets a copy. A transform that is not (a closure, a lambda) runs in this process, as with
    ``jobs=1``. ``on_row`` always runs in this process; ``on_row_fields`` names the fields it
    reads, so that only those travel back from the workers (``on_row`` then gets a mapping of
    just those fields, ``None`` for a missing one). For a summary of counts, ``count_fields`` is
    cheaper still: the rows are counted by those fields' values (``stats.counts``) where they are
    transformed.

    ``columns`` names the columns ``transform`` adds (see :class:`answer_eval.engine.row_transforms.AddedColumns`):
    a row that already holds one is refused (even with ``skip_invalid``), they are written under
    its prefix with its provenance mark, and ``on_row``, ``on_row_fields`` and ``count_fields``
    still see them under their own names. The input is never one of the files the run writes or
    removes (the output, the partial output, the checkpoint record and its temporary file: compared
    by device and inode), and none of those is followed through a link (see
    :mod:`answer_eval.engine.output_files`).

    ``options`` goes into the record with what the run itself knows shapes the output:
    ``skip_invalid``, ``max_line_bytes``, how the input is read (its format and, for a converted
    one, every setting of :class:`answer_eval.inputs.formats.InputFile`) and the added
    ``columns`` (prefix, replacing, names written).

    :raises InputError: For a missing input, an unknown format, ``resume`` from standard input,
        a bad output path (a read-only output, the input under any name, standard input's
        file), an input that is one of the run's
        own files, a work file that is a link, a file with no rows, a checkpoint that does not
        match or is damaged (``resume``; every file is then left as it was), a failed write (disk
        full), a row holding an added column, or (without ``skip_invalid``) the first malformed
        line, naming its line number.
    """
    target = Path(output) if output is not None else None
    # The run's own files are checked first: a work file given as input is named as such.
    stdin = path.is_stdin if isinstance(path, InputFile) else is_stdin(path)
    _check_paths(path.path if isinstance(path, InputFile) else Path(path), stdin, target, resume, max_line_bytes)
    source = InputFile.of(
        path, input_format, text_fields, value_fields, max_line_bytes=max_line_bytes, delimiter=delimiter
    )
    source.check()
    checkpoint = None
    if target is not None:
        fingerprint = {
            "skip_invalid": skip_invalid,
            "max_line_bytes": max_line_bytes,
            **_reading(source),
            **_added(columns),
            **(options or {}),
        }
        checkpoint = Checkpoint(target, source, fingerprint, checkpoint_seconds)
    if columns is not None:
        transform = WithColumns(transform, columns)
        on_row_fields, count_fields = columns.fields(on_row_fields), columns.fields(count_fields)
    run = RowRun(
        source,
        transform,
        skip_invalid,
        on_row,
        on_row_fields,
        count_fields,
        max_line_bytes,
        checkpoint,
        as_csv=target is not None and target.suffix.lower() == ".csv",
        columns=columns,
    )
    start = Position() if checkpoint is None else _resumed(run, checkpoint, resume, state)
    _loop(run, start, jobs, progress, target)
    return run.stats


def _reading(source: InputFile) -> dict[str, Any]:
    """How the input is read, for the record: the same bytes read as another format are other rows.

    JSONL has no setting. A converted format records its format and every other setting of
    :class:`InputFile` (the CSV's text and value fields, and any added later) as ``input_<name>``.
    """
    if source.format == "jsonl":
        return {}
    found: dict[str, Any] = {"input_format": source.format}
    for item in dataclasses.fields(source):
        if item.name not in ("path", "stdin", "format"):
            value = getattr(source, item.name)
            if isinstance(value, (set, frozenset, tuple, list)):
                value = sorted(map(str, value)) if isinstance(value, (set, frozenset)) else list(map(str, value))
            elif value is not None and not isinstance(value, (str, int, float, bool)):
                value = str(value)  # the record is JSON
            found[f"input_{item.name}"] = value
    return found


def _added(columns: AddedColumns | None) -> dict[str, Any]:
    """The added columns, for the record: a resume under another prefix would mix two sets of names."""
    if columns is None:
        return {}
    return {"column_prefix": columns.prefix, "replace_columns": columns.replace, "added_columns": list(columns.written)}


def check_side_files(
    path: str | os.PathLike[str] | InputFile,
    output: str | os.PathLike[str] | None,
    files: Mapping[str, str],
    read: Mapping[str, str] | None = None,
) -> None:
    """Refuse a file an evaluator writes or reads besides the input and output that the run would clash with.

    ``files`` (path to what it is: a reply cache) are written: one that is the input (under any
    name; standard input's file), one of the files ``read`` (a rubric file), the output, one of
    the run's work files (:func:`answer_eval.engine.checkpoint.work_files`) or a folder is
    refused. ``read`` are inputs too: the output and the work files may not be one of them. Call
    it before any work (see :func:`answer_eval.engine.output_files.refuse_side_files`).

    :raises InputError: Naming the file, what it is and what it would be.
    """
    stdin = path.is_stdin if isinstance(path, InputFile) else is_stdin(path)
    inputs = {Path(name): f"{name} ({role})" for name, role in (read or {}).items()}
    written = {} if output is None else work_files(Path(output))
    if written and inputs:  # the output replaces, and the run removes, only files it does not read
        refuse_side_files(written, inputs, {}, folders=False)
    if not stdin:
        source = path.path if isinstance(path, InputFile) else Path(path)
        inputs[source] = f"the input file {source}"
    if files:
        refuse_side_files({Path(name): role for name, role in files.items()}, inputs, written, stdin=stdin)


def _check_paths(source: Path, stdin: bool, target: Path | None, resume: bool, max_line_bytes: int) -> None:
    """Refuse a run that cannot start: a bad output path, a bad line limit, ``resume`` without output or from stdin."""
    if resume and stdin:
        raise InputError(
            "--resume cannot continue from standard input: it cannot be read again; save the input to a file "
            "and run on the file"
        )
    if target is not None:
        if target.suffix.lower() not in OUTPUT_SUFFIXES:
            raise InputError(f"output {target} must end in .jsonl or .csv")
        inputs = [] if stdin else [source]
        check_output_path(target, inputs, stdin=stdin)
        refuse_inputs_among(inputs, work_files(target), stdin=stdin)
    elif resume:
        raise InputError("--resume needs --output: only a run that writes a file leaves something to resume")
    if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int) or max_line_bytes < 1:
        raise InputError(f"the line limit must be a positive number of bytes, got {max_line_bytes!r}")


def _loop(run: RowRun, start: Position, jobs: int, progress: bool, target: Path | None) -> None:
    """Run the rows (here or in workers) and finish the output; a failure or a signal leaves no output.

    A failure keeps the rows done for ``--resume`` (see :func:`process_jsonl`).
    """
    checkpoint = run.checkpoint
    try:
        run.bar = _progress(run.source, progress, start.input_line)
        with deferred_interrupts() as interrupts:
            if jobs > 1 and is_picklable(run.transform):
                run_in_pool(run, jobs, start, interrupts)
            else:
                run_here(run, start, interrupts)
            if run.stats.rows == 0:
                raise InputError(no_rows_message(run.stats.invalid_lines), run.source.name)
            # A signal from here on lets the output be finished: the work is done.
            if checkpoint is not None and target is not None:
                checkpoint.finish(_csv_writer(target, run.fields) if run.as_csv else None)
    except KeyboardInterrupt:  # Interrupted too: a clean stop kept its checkpoint, a second signal the last record
        if checkpoint is not None:
            # Standard input cannot be read again: its checkpoint could never be resumed.
            (checkpoint.discard if run.source.is_stdin else checkpoint.release)()
        raise
    except BaseException as failure:
        if checkpoint is not None:
            _keep_after(failure, run, checkpoint)
        raise
    finally:
        if run.bar is not None:
            run.bar.close()


def no_rows_message(skipped: int) -> str:
    """Why a run scored nothing: an empty input, or one whose every line (``skipped``) was invalid and skipped."""
    if not skipped:
        return "no rows to score"
    return f"no rows to score: every line ({skipped:,}) was invalid and skipped"


def _keep_after(failure: BaseException, run: RowRun, checkpoint: Checkpoint) -> None:
    """A run failed: keep the rows done for ``--resume`` (and say so on ``failure``), or remove the checkpoint."""
    if run.source.is_stdin or not getattr(failure, "keeps_rows", True):
        checkpoint.discard()
        return
    kept = checkpoint.keep_after_failure(run.clean)
    if kept is not None:
        note_kept(failure, kept)


def _resumed(run: RowRun, checkpoint: Checkpoint, resume: bool, state: RunState | None) -> Position:
    """Open the checkpoint and count the rows already written; a refusal leaves every file as it was."""
    start = checkpoint.open(resume)
    try:
        replay(run, checkpoint, state)
        checkpoint.begin()
    except BaseException:
        checkpoint.close()
        raise
    checkpoint.snapshot = None if state is None else state[0]
    return start


def _csv_writer(target: Path, fields: dict[str, None]) -> Callable[[IO[bytes]], None]:
    def convert(spool: IO[bytes]) -> None:
        with AtomicWriter(target, newline="") as csv_out:
            write_csv_from_jsonl(spool, list(fields), csv_out)
            csv_out.commit()

    return convert


def require_fields(row: dict[str, Any], names: Iterable[str]) -> None:
    """Raise :class:`InputError` naming the first of ``names`` missing from ``row``."""
    for name in names:
        if name not in row:
            raise InputError(f"missing field {name!r} (fields: {', '.join(map(repr, row)) or 'none'})")


def _restorer(summary: Summary, evaluator: Evaluator) -> Callable[[Mapping[str, Any]], None]:
    """Restore ``summary`` from a checkpoint, then tell the evaluator (``resumed(summary)``, when it has one).

    An evaluator with a budget for the whole file (an LLM grader's ``--max-calls``) counts what the
    rows kept already spent, so a ``--resume`` does not start the budget afresh.
    """

    def restore(data: Mapping[str, Any]) -> None:
        summary.restore(data)
        resumed = getattr(evaluator, "resumed", None)
        if callable(resumed):
            resumed(summary)

    return restore


def run_file(
    path: str | os.PathLike[str],
    evaluator: Evaluator,
    fields: Sequence[RoleField] | None = None,
    written: Sequence[tuple[str, str]] | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
    columns: AddedColumns | None = None,
    options: Mapping[str, Any] | None = None,
    **run: Any,
) -> Summary:
    """Score every row of an input file (any format of :mod:`answer_eval.inputs.formats`) with ``evaluator``.

    Returns the evaluator's summary.

    ``fields`` (default :func:`default_fields`) and ``written`` (default: every output under its
    own name) say where the roles are read and the outputs written; ``columns`` (default: the
    names written) and ``run`` (``skip_invalid``, ``progress``, ``jobs``, ``resume``,
    ``max_line_bytes``, ``checkpoint_seconds``, ``input_format``) go to
    :func:`process_jsonl`, and ``options`` (more of what shapes the
    output, such as a command line's other flags) into its checkpoint record with the
    evaluator's signature and fields. In a CSV or TSV, the fields of the roles that hold text or
    values (:func:`cell_fields`) are read as such.

    Before any work (the evaluator warms up after), an added column that is also a field some
    role reads is refused (it would overwrite what is graded), and so is a file the evaluator
    writes besides the output (:meth:`Evaluator.files_written`) that is the input, a file it reads
    (:meth:`Evaluator.files_read`), the output or one of the run's work files, and an output that
    is a file it reads.
    """
    fields = tuple(fields if fields is not None else default_fields(evaluator))
    written = tuple(written if written is not None else ((name, name) for name in evaluator.outputs()))
    columns = AddedColumns(tuple(name for _, name in written)) if columns is None else columns
    columns.refuse_reads({role.role: role.fields for role in fields})
    check_side_files(path, output, evaluator.files_written(), evaluator.files_read())
    evaluator.warm_up()
    summary = evaluator.new_summary()
    summary.path, summary.signature = str(path), evaluator.signature
    for name, chosen in cell_fields(evaluator, fields).items():
        run.setdefault(name, chosen)
    summary.output = None if output is None else str(output)
    names = summary.output_columns([name for name, _ in written])
    read = tuple(pair for pair in written if pair[0] in names)  # only these travel back from --jobs workers
    counting = SummaryRows(summary, tuple(role for role in fields if role.role in summary.reads), read)
    stats = process_jsonl(
        path,
        EvaluatorRows(evaluator, fields, written),
        output=output,
        on_row=counting,
        on_row_fields=counting.fields(),
        options={
            **(options or {}),
            "signature": evaluator.signature,
            "fields": [list(role.fields) for role in fields],
            "written": [name for _, name in written],
        },
        columns=columns,
        # The summary's snapshot goes into each checkpoint record; a resumed run counts the rows kept
        # again (which checks them) and then takes the snapshot, so both must agree.
        state=(summary.snapshot, _restorer(summary, evaluator)),
        **run,
    )
    summary.invalid_lines = stats.invalid_lines
    return summary
