"""The row loop of :func:`answer_eval.engine.runner.process_jsonl`: read, transform, count, write, note the position.

One loop runs in this process, one hands the rows to worker processes (:mod:`answer_eval.engine.parallel`);
both stop between two batches of rows (or chunks) when a signal came, or at once, at the last boundary, when it came
while they were only reading (see below), keeping a checkpoint
(:mod:`answer_eval.engine.checkpoint`), and both start where a resumed run left off. A line that stops the run (an
invalid line without ``--skip-invalid``) ends its batch at once: a row that never ends stops the run as soon as it
passes the limit. Both note a row
boundary only where every row before it is written (:attr:`RowRun.clean` says whether the run stands at one), so a
run that fails keeps the rows done (see :func:`answer_eval.engine.runner.process_jsonl`).

Stopping cleanly on SIGINT (Ctrl-C) or SIGTERM: :func:`deferred_interrupts` turns the first signal
into a flag (:class:`Interrupts`) the row loop asks for between batches (``process_jsonl`` then
records a checkpoint and raises :class:`Interrupted`). While the loop only reads the input (nothing half done: no batch
being scored or written), a signal stops it at once instead, by raising :class:`ReadingStopped` out
of the read (a pipe that never sends, a row that never ends), and the loop stops at the last row
boundary as it would between batches. The command line installs :func:`raise_interrupted` for
SIGTERM so that a signal outside a run still ends it with exit code 143, as Ctrl-C ends it with 130.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

from answer_eval.engine.checkpoint import Checkpoint, Position, damaged
from answer_eval.engine.parallel import run_in_workers
from answer_eval.engine.row_transforms import BATCH_BYTES, BATCH_ROWS, AddedColumns, transform_rows
from answer_eval.errors import InputError
from answer_eval.inputs.converted_rows import LineStream
from answer_eval.inputs.formats import InputFile
from answer_eval.inputs.jsonl import LineGap, feed_digest, iter_raw_lines, parse_jsonl_line

__all__ = [
    "Interrupted",
    "Interrupts",
    "ProcessStats",
    "ReadingStopped",
    "RowRun",
    "RowTransform",
    "RunState",
    "deferred_interrupts",
    "raise_interrupted",
    "replay",
    "run_here",
    "run_in_pool",
]


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
    clean: bool = True
    """Whether the run stands at the last row boundary noted: every row before it counted and written, none after
    (false while a batch's rows are being counted and written, and once the rows are finished)."""

    def take(self, result: dict[str, Any]) -> None:
        """Count one output row and pass it on (the summary side of a row)."""
        self.stats.rows += 1
        if self.count_fields is not None:
            self.stats.counts[tuple(result.get(name) for name in self.count_fields)] += 1
        if self.on_row is not None:
            self.on_row(result if self.columns is None else self.columns.view(result))
        if self.as_csv:
            self.fields.update(dict.fromkeys(result))

    def reached(self, offset: int, line: int, digest: Any, stopped: Callable[[], int | None]) -> None:
        """Note the row boundary at input byte ``offset`` (after ``line``), every row before it written.

        Then stop there (:meth:`stop`) when ``stopped`` reports a signal.
        """
        if self.checkpoint is not None:
            self.checkpoint.reached(offset, line, self.stats.rows, self.stats.invalid_lines, digest)
        self.clean = True
        signum = stopped()
        if signum is not None:
            self.stop(signum)

    def stop(self, signum: int) -> None:
        """Stop at this row boundary: keep the checkpoint and raise :class:`Interrupted`.

        Nothing is kept before the first row is done (as after a failure: see
        :meth:`~answer_eval.engine.checkpoint.Checkpoint.keep_after_failure`), nor for standard input.
        """
        checkpoint = None if self.source.is_stdin else self.checkpoint  # stdin is read once: nothing to resume
        if checkpoint is not None and not self.stats.rows:
            checkpoint.discard()
            checkpoint = None
        if checkpoint is not None:
            checkpoint.keep()
        raise Interrupted(signum, None if checkpoint is None else checkpoint.partial, self.stats.rows)


def replay(run: RowRun, checkpoint: Checkpoint, state: RunState | None) -> None:
    """Resuming: count the rows already written again, as if just transformed, and restore ``state``."""
    position = checkpoint.position
    for number, result in enumerate(checkpoint.written_rows(), start=1):
        try:
            run.take(result)
        # OverflowError: a number no float holds (a 400-digit integer, where a float is read) in an edited row
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):  # a row the summary cannot count
            raise damaged(checkpoint.partial, f"row {number:,} lacks what this command wrote") from None
    if run.stats.rows != position.rows:
        raise damaged(checkpoint.partial, f"it holds {run.stats.rows:,} rows where its record counts {position.rows:,}")
    run.stats.invalid_lines = position.invalid_lines
    if state is not None and checkpoint.state is not None:
        try:
            state[1](checkpoint.state)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):  # OverflowError: int(1e999)
            raise damaged(checkpoint.record, "its running totals cannot be read") from None


def _encoded(result: dict[str, Any]) -> bytes:
    return (json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8", _ESCAPE)


class _Mark(NamedTuple):
    """Where the input stands at a batch's start or end: the next byte, the last line read, the fingerprint so far."""

    offset: int
    line: int
    digest: Any


_Pending = tuple[int, "dict[str, Any] | InputError", int]
"""A line read: its number, its row (or the error reading it) and the input byte it starts at."""


def batch_size(run: RowRun) -> int:
    """Rows per batch: the transform's own (an LLM grader's: few paid replies held unwritten), else :data:`BATCH_ROWS`.

    With ``--checkpoint-seconds 0`` (a record at every batch's end) a transform that names no
    batch of its own gets one row, so that a run killed outright loses at most that row; one that
    names its batch keeps it (a grader sends its batch's requests together, ``--concurrency``).
    """
    preferred = getattr(run.transform, "batch_rows", None)
    if run.checkpoint is not None and run.checkpoint.every == 0:
        return int(preferred or 1)
    return int(preferred or BATCH_ROWS)


def run_here(run: RowRun, start: Position, interrupts: Interrupts) -> None:
    """The loop in this process: a batch of rows at a time from ``start``, the position noted after each batch.

    A batch is :func:`batch_size` rows or :data:`BATCH_BYTES` bytes of lines, whichever comes
    first (so memory stays flat); a line that stops the run (an invalid line without
    ``--skip-invalid``) ends its batch at once, and a line over the limit is then not read on. While
    it reads, a signal stops the run at once, at the last row boundary (see
    :class:`Interrupts`); while a batch is scored and written, at its end.
    """
    try:
        interrupts.enter_reading()
        _read_and_flush(run, start, interrupts)
    except ReadingStopped as stop:  # the rows read since the last boundary are read again by --resume
        run.stop(stop.signum)
    finally:
        interrupts.leave_reading()


def _read_and_flush(run: RowRun, start: Position, interrupts: Interrupts) -> None:
    source, checkpoint, bar = run.source, run.checkpoint, run.bar
    number, offset = start.input_line, start.input_offset
    # The reader feeds its own copy: the checkpoint keeps the fingerprint of the last boundary.
    digest = None if checkpoint is None else checkpoint.digest.copy()
    size_wanted = batch_size(run)
    limit, name, skip_invalid = run.max_line_bytes, source.name, run.skip_invalid
    pending: list[_Pending] = []
    pending_bytes = 0
    with source.open() as handle:
        if offset:
            handle.seek(offset)
        gaps = isinstance(handle, LineStream)
        boundary = _Mark(offset, number, None if digest is None else digest.copy())
        for raw, size in iter_raw_lines(handle, limit, digest, skip_long=skip_invalid):
            number += 1
            if bar is not None:
                bar.update()
            row = parse_jsonl_line(raw, number, name, max_line_bytes=limit, gaps=gaps)
            if row is not None:
                if type(row) is dict:
                    pending.append((number, row, offset))
                    pending_bytes += size
                elif isinstance(row, LineGap):
                    number += row.lines - 1
                    if bar is not None:
                        bar.update(row.lines - 1)
                else:
                    pending.append((number, row, offset))
                    pending_bytes += BATCH_BYTES if not skip_invalid else size  # it stops the run: no reading on
            offset += size
            if len(pending) >= size_wanted or pending_bytes >= BATCH_BYTES:
                end = _Mark(offset, number, None if digest is None else digest.copy())
                interrupts.leave_reading()
                _flush(run, pending, boundary, end, interrupts)
                interrupts.enter_reading()
                pending, pending_bytes, boundary = [], 0, end
        interrupts.leave_reading()
        _flush(run, pending, boundary, _Mark(offset, number, None if digest is None else digest.copy()), interrupts)


def _flush(
    run: RowRun,
    pending: list[_Pending],
    boundary: _Mark,
    end: _Mark,
    stopped: Callable[[], int | None],
) -> None:
    """Transform, count and write one batch (from ``boundary`` to ``end``) in input order; note the position.

    Then look for a signal. A line that stops the run (a bad line without ``--skip-invalid``)
    stops it where that line starts: the rows before it are written and the position noted there
    first, so they are kept.
    """
    stats, checkpoint = run.stats, run.checkpoint
    counted = run.on_row is not None or run.count_fields is not None or run.as_csv
    results = transform_rows(run.transform, [(line, row) for line, row, _ in pending])
    run.clean = False
    for (line, _, starts_at), result in zip(pending, results, strict=True):
        if isinstance(result, InputError):
            if not run.skip_invalid or not result.skippable:
                error = result if result.line is not None else InputError(result.message, run.source.name, line)
                if error is not result:
                    error.keeps_rows = result.keeps_rows
                _note_before(run, boundary, starts_at, line - 1)
                raise error from None
            stats.invalid_lines += 1
            continue
        if counted:
            run.take(result)
        else:
            stats.rows += 1
        if checkpoint is not None:
            checkpoint.write(_encoded(result))
    run.reached(end.offset, end.line, end.digest, stopped)


def _note_before(run: RowRun, boundary: _Mark, offset: int, line: int) -> None:
    """Note the boundary where a refused line starts, every row before it written: ``offset``, after ``line``.

    Its fingerprint is the batch's start's and the bytes from there, read again (only when a line
    stops the run, so that reading costs nothing per line; standard input, read once, keeps no
    checkpoint anyway).
    """
    checkpoint = run.checkpoint
    if checkpoint is not None and boundary.digest is not None and not run.source.is_stdin:
        digest = boundary.digest.copy()
        with run.source.open() as handle:
            if boundary.offset:
                handle.seek(boundary.offset)
            feed_digest(handle, digest, offset - boundary.offset)
        checkpoint.reached(offset, line, run.stats.rows, run.stats.invalid_lines, digest)
    run.clean = True


def run_in_pool(run: RowRun, jobs: int, start: Position, interrupts: Interrupts) -> None:
    """The loop with the rows transformed in ``jobs`` worker processes, chunk by chunk in input order.

    While this process reads the input, a signal stops the run at once, at the end of the last chunk
    taken (the chunks in flight are dropped: free to redo); otherwise after the chunk it is taking.
    """
    try:
        _take_chunks(run, jobs, start, interrupts)
    except ReadingStopped as stop:
        run.stop(stop.signum)


def _take_chunks(run: RowRun, jobs: int, start: Position, interrupts: Interrupts) -> None:
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
        # The reader feeds its own copy: the checkpoint keeps the fingerprint of the last boundary.
        digest=None if checkpoint is None else checkpoint.digest.copy(),
        reading=interrupts,
    )
    taken = start.input_line
    with contextlib.closing(chunks):
        for chunk in chunks:
            # A chunk that stopped the run is not taken: the run stands at the previous chunk's end,
            # every row before it written, so a failure keeps those (the chunk's own are free to redo).
            chunk.raise_error()
            if run.bar is not None:
                run.bar.update(chunk.end_line - taken)  # lines, those a gap marker stands for too
            taken = chunk.end_line
            run.clean = False
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
            run.reached(chunk.end_offset, chunk.end_line, chunk.digest, interrupts)


_STOPPABLE = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal: SIGINT (exit code 130) or SIGTERM (exit code 143).

    :param signum: The signal.
    :param checkpoint: The partial output kept for ``--resume``, if any.
    :param rows: Rows written before the stop.
    """

    def __init__(self, signum: int, checkpoint: Path | None = None, rows: int = 0) -> None:
        super().__init__(signum)
        self.signum = signum
        self.checkpoint = checkpoint
        self.rows = rows

    @property
    def exit_code(self) -> int:
        """128 plus the signal number, as a shell reports a process the signal ended."""
        return 128 + self.signum


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """A signal handler: raise :class:`Interrupted` (the command line's handler for SIGTERM)."""
    raise Interrupted(signum)


def _ours(handler: Any) -> bool:
    # Handlers that only end the program: taking them over within a run changes nothing else.
    return handler in (signal.default_int_handler, signal.SIG_DFL, raise_interrupted)


class ReadingStopped(Interrupted):
    """A signal that came while the run was only reading its input: the run stops at its last row boundary.

    Raised out of the read by the signal handler of :func:`deferred_interrupts` (see
    :meth:`Interrupts.enter_reading`); the row loop catches it and stops as between two batches.
    """


class Interrupts:
    """The signal a run received (``None`` until one came), and whether the run is only reading its input.

    Called, it returns the first signal received. Between :meth:`enter_reading` and
    :meth:`leave_reading` (the input being read, no batch half done) a first signal raises
    :class:`ReadingStopped` at once, from wherever the read is (a read that blocks, a row that never
    ends); elsewhere it is only noted, for the loop to ask at its next safe point. A second signal
    always raises :class:`Interrupted` at once.
    """

    def __init__(self) -> None:
        self.received: list[int] = []
        self.reading = False

    def __call__(self) -> int | None:
        """The first signal received, or ``None``."""
        return self.received[0] if self.received else None

    def enter_reading(self) -> None:
        """From here the run only reads: a signal stops it at once (one that came already raises now)."""
        self.reading = True
        if self.received:
            self.reading = False
            raise ReadingStopped(self.received[0])

    def leave_reading(self) -> None:
        """From here the run works on what it read (scores, writes): a signal waits for the next safe point."""
        self.reading = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler (see the class docstring)."""
        if self.received:
            raise Interrupted(signum)
        self.received.append(signum)
        if self.reading:
            self.reading = False
            raise ReadingStopped(signum)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Interrupts]:
    """Within the block, SIGINT and SIGTERM stop the work at the next safe point instead of at once.

    Yields an :class:`Interrupts`: called, it returns the signal received (``None`` until one is),
    and the loop asks it between batches and stops cleanly; while the loop says it is only reading
    (:meth:`Interrupts.enter_reading`), a signal raises :class:`ReadingStopped` at once. A second
    signal raises :class:`Interrupted` at once. Only signals left to their default action (or to
    :func:`raise_interrupted`) are taken over, only in the main thread (elsewhere no signal is ever
    noted); the previous handlers come back at the end of the block.
    """
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous: dict[int, Any] = {}
    for stoppable in _STOPPABLE:
        if _ours(signal.getsignal(stoppable)):
            previous[stoppable] = signal.signal(stoppable, interrupts.handle)
    try:
        yield interrupts
    finally:
        interrupts.reading = False
        for signum, before in previous.items():
            signal.signal(signum, before)
