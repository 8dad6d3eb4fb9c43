"""The row loop of :func:`answer_eval.engine.runner.process_jsonl`: read, transform, count, write, note the position.

One loop runs in this process, one hands the rows to worker processes (:mod:`answer_eval.engine.parallel`);
both stop between two batches of rows (or chunks) when a signal came (:mod:`answer_eval.engine.interrupts`), keeping a
checkpoint (:mod:`answer_eval.engine.checkpoint`), and both start where a resumed run left off.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from answer_eval.engine.checkpoint import Checkpoint, Position, damaged
from answer_eval.engine.columns import AddedColumns
from answer_eval.engine.files import InputError, RowsKept, iter_raw_lines, parse_jsonl_line
from answer_eval.engine.interrupts import Interrupted
from answer_eval.engine.parallel import run_in_workers
from answer_eval.engine.row_batches import BATCH_BYTES, BATCH_ROWS, transform_rows
from answer_eval.inputs.formats import InputFile

__all__ = ["ProcessStats", "RowRun", "RowTransform", "RunState", "replay", "run_here", "run_in_pool"]

RowTransform = Callable[[dict[str, Any], int], dict[str, Any]]
"""Turns one input row (and its line number) into its output row; raises InputError for a bad row."""

RunState = tuple[Callable[[], Any], Callable[[Any], None]]
"""A caller's own running state for ``--resume``: ``(snapshot, restore)``, the snapshot JSON-ready."""

# A character UTF-8 cannot hold (a lone surrogate, which the JSON escape "\ud800" reads as) is
# written as its backslash escape: inside a JSON string that is the same escape, read back alike.
_ESCAPE = "backslashreplace"


@dataclass
class ProcessStats:
    """Counts from :func:`answer_eval.engine.runner.process_jsonl`."""

    rows: int = 0
    invalid_lines: int = 0
    counts: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    """With ``count_fields``: how many rows had each combination of those fields' values, in order
    of first appearance (a missing field counts as ``None``)."""


@dataclass
class RowRun:
    """One :func:`answer_eval.engine.runner.process_jsonl` call: what it reads, how, and where its rows go."""

    source: InputFile
    transform: RowTransform
    skip_invalid: bool
    on_row: Callable[[dict[str, Any]], None] | None
    on_row_fields: Sequence[str] | None
    count_fields: Sequence[str] | None
    max_line_bytes: int
    checkpoint: Checkpoint | None
    as_csv: bool
    columns: AddedColumns | None = None
    """The columns ``transform`` adds (already wrapped in it): ``on_row`` sees them under their own names."""
    stats: ProcessStats = field(default_factory=ProcessStats)
    fields: dict[str, None] = field(default_factory=dict)
    """The output fields in order of first appearance (the CSV columns)."""
    bar: Any = None

    def take(self, result: dict[str, Any]) -> None:
        """Count one output row and pass it on (the summary side of a row)."""
        self.stats.rows += 1
        if self.count_fields is not None:
            self.stats.counts[tuple(result.get(name) for name in self.count_fields)] += 1
        if self.on_row is not None:
            self.on_row(result if self.columns is None else self.columns.view(result))
        if self.as_csv:
            self.fields.update(dict.fromkeys(result))

    def stop(self, signum: int) -> None:
        """Stop at this row boundary: keep the checkpoint and raise :class:`Interrupted`."""
        checkpoint = None if self.source.is_stdin else self.checkpoint  # stdin is read once: nothing to resume
        if checkpoint is not None:
            checkpoint.keep()
        raise Interrupted(signum, None if checkpoint is None else checkpoint.partial, self.stats.rows)


def replay(run: RowRun, checkpoint: Checkpoint, state: RunState | None) -> None:
    """Resuming: count the rows already written again, as if just transformed, and restore ``state``."""
    position = checkpoint.position
    for number, result in enumerate(checkpoint.written_rows(), start=1):
        try:
            run.take(result)
        except (KeyError, TypeError, ValueError, AttributeError):  # a row the summary cannot count
            raise damaged(checkpoint.partial, f"row {number:,} lacks what this command wrote") from None
    if run.stats.rows != position.rows:
        raise damaged(checkpoint.partial, f"it holds {run.stats.rows:,} rows where its record counts {position.rows:,}")
    run.stats.invalid_lines = position.invalid_lines
    if state is not None and checkpoint.state is not None:
        try:
            state[1](checkpoint.state)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise damaged(checkpoint.record, "its running totals cannot be read") from None


def _encoded(result: dict[str, Any]) -> bytes:
    return (json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8", _ESCAPE)


def run_here(run: RowRun, start: Position, stopped: Callable[[], int | None]) -> None:
    """The loop in this process: a batch of rows at a time from ``start``, the position noted after each batch.

    A batch is :data:`BATCH_ROWS` rows or :data:`BATCH_BYTES` bytes of lines, whichever comes first
    (so memory stays flat); with ``--checkpoint-seconds 0`` (a record after every row) it is one row.
    """
    source, checkpoint, bar = run.source, run.checkpoint, run.bar
    number, offset = start.input_line, start.input_offset
    digest = None if checkpoint is None else checkpoint.digest
    # An evaluator may want smaller batches (an LLM grader: fewer paid replies held unwritten at a time).
    preferred = getattr(run.transform, "batch_rows", None) or BATCH_ROWS
    size_wanted = 1 if checkpoint is not None and checkpoint.every == 0 else preferred
    pending: list[tuple[int, dict[str, Any] | InputError]] = []
    pending_bytes = 0
    boundary = None if digest is None else digest.copy()  # the digest where the rows written end
    with source.open() as handle:
        if offset:
            handle.seek(offset)
        for raw, size in iter_raw_lines(handle, run.max_line_bytes, digest):
            number += 1
            offset += size
            if bar is not None:
                bar.update()
            row = parse_jsonl_line(raw, number, source.name, max_line_bytes=run.max_line_bytes)
            if row is not None:
                pending.append((number, row))
                pending_bytes += size
            if len(pending) >= size_wanted or pending_bytes >= BATCH_BYTES:
                boundary = _kept_on_stop(run, pending, offset, number, stopped, boundary)
                pending, pending_bytes = [], 0
        _kept_on_stop(run, pending, offset, number, stopped, boundary)


def _kept_on_stop(
    run: RowRun,
    pending: list[tuple[int, dict[str, Any] | InputError]],
    offset: int,
    number: int,
    stopped: Callable[[], int | None],
    boundary: Any,
) -> Any:
    """:func:`_flush`; the input's digest at the batch's end (for the next call).

    When the transform stops with :class:`RowsKept`, the checkpoint is kept at the previous
    batch's end: the batch is transformed before any of it is written, so the partial output ends
    where the position last noted says, and the digest of the input read is put back to that point.
    """
    try:
        _flush(run, pending, offset, number, stopped)
    except RowsKept:
        if run.checkpoint is not None:
            if boundary is not None:
                run.checkpoint.digest = boundary
            run.checkpoint.keep()
        raise
    digest = None if run.checkpoint is None else run.checkpoint.digest
    return None if digest is None else digest.copy()


def _flush(
    run: RowRun,
    pending: list[tuple[int, dict[str, Any] | InputError]],
    offset: int,
    number: int,
    stopped: Callable[[], int | None],
) -> None:
    """Transform, count and write one batch in input order; then note the position and look for a signal."""
    stats, checkpoint = run.stats, run.checkpoint
    counted = run.on_row is not None or run.count_fields is not None or run.as_csv
    for (line, _), result in zip(pending, transform_rows(run.transform, pending), strict=True):
        if isinstance(result, InputError):
            if not run.skip_invalid or not result.skippable:
                if result.line is None:
                    raise InputError(result.message, run.source.name, line) from None
                raise result
            stats.invalid_lines += 1
            continue
        if counted:
            run.take(result)
        else:
            stats.rows += 1
        if checkpoint is not None:
            checkpoint.write(_encoded(result))
    if checkpoint is not None:
        checkpoint.reached(offset, number, stats.rows, stats.invalid_lines)
    signum = stopped()
    if signum is not None:
        run.stop(signum)


def run_in_pool(run: RowRun, jobs: int, start: Position, stopped: Callable[[], int | None]) -> None:
    """The loop with the rows transformed in ``jobs`` worker processes, chunk by chunk in input order."""
    stats, checkpoint = run.stats, run.checkpoint
    on_row, on_row_fields = run.on_row, run.on_row_fields
    chunks = run_in_workers(
        run.source,
        run.transform,
        jobs,
        skip_invalid=run.skip_invalid,
        want_text=checkpoint is not None,
        want_fields=run.as_csv,
        want_summaries=on_row is not None,
        summary_fields=on_row_fields,
        count_fields=run.count_fields,
        max_line_bytes=run.max_line_bytes,
        start_offset=start.input_offset,
        start_line=start.input_line,
        digest=None if checkpoint is None else checkpoint.digest,
    )
    with contextlib.closing(chunks):
        for chunk in chunks:
            if run.bar is not None:
                run.bar.update(chunk.lines)
            stats.rows += chunk.rows
            stats.invalid_lines += chunk.invalid_lines
            stats.counts.update(chunk.counts)
            if on_row is not None:
                if on_row_fields is None:
                    view = (lambda row: row) if run.columns is None else run.columns.view
                    for result in chunk.summaries:
                        on_row(view(result))
                else:
                    names = tuple(on_row_fields) if run.columns is None else run.columns.own_names(on_row_fields)
                    for values in chunk.summaries:
                        on_row(dict(zip(names, values, strict=True)))
            if checkpoint is not None:
                checkpoint.write(chunk.text.encode("utf-8", _ESCAPE))
                run.fields.update(dict.fromkeys(chunk.fields))
            chunk.raise_error()
            if checkpoint is not None:
                checkpoint.reached(chunk.end_offset, chunk.end_line, stats.rows, stats.invalid_lines, chunk.digest)
            signum = stopped()
            if signum is not None:
                run.stop(signum)
