"""Running a JSONL row transform in worker processes, in input order, with flat memory.

The main process reads raw lines and hands them out in chunks; each worker parses its lines
exactly as :func:`answer_eval.inputs.jsonl.iter_jsonl` does, transforms the rows and sends back the
output lines already encoded, the fields a summary needs and any error with its line number. At
most a few chunks are in flight at once, so memory does not grow with the file, and results are
taken in input order, so the output is the one a single process writes.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from answer_eval.engine.row_transforms import BATCH_ROWS, transform_rows
from answer_eval.errors import InputError
from answer_eval.inputs.converted_rows import LineStream
from answer_eval.inputs.formats import InputFile
from answer_eval.inputs.jsonl import DEFAULT_MAX_LINE_BYTES, LINE_GAP, LineGap, iter_raw_lines, parse_jsonl_line

__all__ = ["is_picklable", "run_in_workers"]

# A chunk holds this many lines, or fewer if their bytes reach _CHUNK_BYTES (long answers).
_CHUNK_LINES = 2000
_CHUNK_BYTES = 4 << 20
# Chunks in flight per worker: enough to keep every worker busy, few enough to keep memory flat.
_IN_FLIGHT_PER_WORKER = 2
# How often a worker checks that the calling process is still there.
_PARENT_CHECK_SECONDS = 1.0


@dataclass(frozen=True)
class Chunk:
    """Consecutive raw lines of the input, the first numbered ``first_line``.

    A line longer than the limit is ``None`` (its bytes were skipped; see
    :func:`answer_eval.inputs.jsonl.iter_raw_lines`).
    """

    first_line: int
    lines: list[bytes | None]
    gaps: bool = False
    """The lines are a converted format's: a :func:`~answer_eval.inputs.jsonl.line_gap` marker stands for lines."""


@dataclass
class ChunkResult:
    """What a worker made of one chunk.

    :param lines: Lines in the chunk (blank ones included).
    :param rows: Rows transformed.
    :param invalid_lines: Lines skipped as invalid (only when skipping).
    :param text: The output rows as JSON lines, when output is wanted.
    :param summaries: Per row, the result (or the ``summary_fields`` of it), when asked for.
    :param fields: The result fields in order of first appearance, when asked for (CSV output).
    :param counts: How many rows had each combination of the ``count_fields`` values.
    :param error: ``(message, path, line, keeps_rows)`` of the error that stopped the chunk, if any.
    :param end_offset: The input byte after the chunk (set in the calling process).
    :param end_line: The number of the chunk's last line (set in the calling process).
    :param digest: The input fingerprint up to ``end_offset``, when one was asked for (set in the calling process).
    """

    lines: int
    rows: int = 0
    invalid_lines: int = 0
    text: str = ""
    summaries: list[Any] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    counts: Counter[tuple[Any, ...]] = field(default_factory=Counter)
    error: tuple[str, str | None, int | None, bool] | None = None
    end_offset: int = 0
    end_line: int = 0
    digest: Any = None

    def raise_error(self) -> None:
        """Raise the chunk's error as the :class:`InputError` a single process raises."""
        if self.error is not None:
            message, path, line, keeps_rows = self.error
            error = InputError(message, path, line)
            error.keeps_rows = keeps_rows
            raise error


@dataclass(frozen=True)
class _Job:
    transform: Callable[[dict[str, Any], int], dict[str, Any]]
    path: str
    skip_invalid: bool
    want_text: bool
    want_fields: bool
    want_summaries: bool
    summary_fields: tuple[str, ...] | None
    count_fields: tuple[str, ...] | None
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


_JOB: list[_Job] = []  # the job of this worker process, set by _start_worker


def is_picklable(value: Any) -> bool:
    """Whether ``value`` can be sent to a worker process."""
    try:
        pickle.dumps(value)
    except (pickle.PicklingError, TypeError, AttributeError):
        return False
    return True


def _start_worker(payload: bytes) -> None:
    # Ctrl-C (or a SIGTERM to the whole process group) reaches every process of the group: the
    # calling process decides how to stop (finishing the chunks in flight, keeping a checkpoint),
    # so a worker ignores both; it ends when the calling process shuts the pool down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A calling process killed outright (SIGKILL) cannot shut the pool down: the worker then ends
    # itself rather than wait on the pool's pipe for ever.
    parent = os.getppid()
    threading.Thread(target=_end_with_parent, args=(parent,), daemon=True, name="answer-eval-parent-watch").start()
    # The payload is what the calling process pickled a moment ago and passed to this worker
    # through the pool's own pipe (the initializer's arguments): never data read from a file.
    _JOB[:] = [pickle.loads(payload)]


def _end_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_SECONDS)
    os._exit(1)


def _run_chunk(chunk: Chunk) -> ChunkResult:
    job = _JOB[0]
    result = ChunkResult(lines=len(chunk.lines))
    texts: list[str] = []
    seen: dict[str, None] = {}
    entries: list[tuple[int, dict[str, Any] | InputError]] = []
    number = chunk.first_line - 1
    for raw in chunk.lines:
        number += 1
        row = parse_jsonl_line(raw, number, job.path, max_line_bytes=job.max_line_bytes, gaps=chunk.gaps)
        if isinstance(row, LineGap):
            number += row.lines - 1
        elif row is not None:
            entries.append((number, row))
    for start in range(0, len(entries), BATCH_ROWS):
        batch = entries[start : start + BATCH_ROWS]
        if not _take_batch(job, result, texts, seen, batch):
            break
    result.text = "".join(texts)
    result.fields = list(seen)
    return result


def _take_batch(
    job: _Job,
    result: ChunkResult,
    texts: list[str],
    seen: dict[str, None],
    batch: list[tuple[int, dict[str, Any] | InputError]],
) -> bool:
    """Transform one batch of a chunk into ``result``; ``False`` when an error stopped the chunk."""
    for (number, _), output in zip(batch, transform_rows(job.transform, batch), strict=True):
        if isinstance(output, InputError):
            if not job.skip_invalid or not output.skippable:
                # As process_jsonl does: an error without a line gets this file and line.
                where = (job.path, number) if output.line is None else (output.path, output.line)
                result.error = (output.message, *where, output.keeps_rows)
                return False
            result.invalid_lines += 1
            continue
        result.rows += 1
        if job.want_text:
            texts.append(json.dumps(output, ensure_ascii=False) + "\n")
        if job.want_fields:
            seen.update(dict.fromkeys(output))
        if job.want_summaries:
            fields = job.summary_fields
            result.summaries.append(output if fields is None else tuple(output.get(name) for name in fields))
        if job.count_fields is not None:
            result.counts[tuple(output.get(name) for name in job.count_fields)] += 1
    return True


@dataclass(frozen=True)
class _Read:
    """Where the input stands after a chunk: the next byte, the chunk's last line, the fingerprint."""

    offset: int
    line: int
    digest: Any


class _Reading(Protocol):
    """Told when this process only reads the input (see :class:`answer_eval.engine.row_loop.Interrupts`)."""

    def enter_reading(self) -> None: ...

    def leave_reading(self) -> None: ...


class _NotTold:
    def enter_reading(self) -> None:
        pass

    def leave_reading(self) -> None:
        pass


def _chunks(
    source: InputFile, start: _Read, max_line_bytes: int, skip_long: bool, reading: _Reading
) -> Generator[tuple[Chunk, _Read], None, None]:
    """The input's lines in chunks, with where the input stands after each; ``reading`` told while it reads."""
    reading.enter_reading()
    try:
        yield from _read_chunks(source, start, max_line_bytes, skip_long, reading)
    finally:
        reading.leave_reading()


def _read_chunks(
    source: InputFile, start: _Read, max_line_bytes: int, skip_long: bool, reading: _Reading
) -> Iterator[tuple[Chunk, _Read]]:
    digest = start.digest
    with source.open() as handle:
        if start.offset:
            handle.seek(start.offset)
        gaps = isinstance(handle, LineStream)
        offset, number = start.offset, start.line
        lines: list[bytes | None] = []
        size = 0
        first = number + 1
        for raw, length in iter_raw_lines(handle, max_line_bytes, digest, skip_long=skip_long):
            number += 1
            offset += length
            lines.append(raw)
            if raw is not None:
                size += length
                if gaps and raw.startswith(LINE_GAP):
                    gap = parse_jsonl_line(raw, number, source.name, gaps=True)
                    number += gap.lines - 1 if isinstance(gap, LineGap) else 0
            if len(lines) >= _CHUNK_LINES or size >= _CHUNK_BYTES:
                reading.leave_reading()
                yield Chunk(first, lines, gaps), _Read(offset, number, None if digest is None else digest.copy())
                reading.enter_reading()
                lines, size, first = [], 0, number + 1
        if lines:
            reading.leave_reading()
            yield Chunk(first, lines, gaps), _Read(offset, number, None if digest is None else digest.copy())


def run_in_workers(
    path: str | os.PathLike[str] | InputFile,
    transform: Callable[[dict[str, Any], int], dict[str, Any]],
    jobs: int,
    *,
    skip_invalid: bool,
    want_text: bool,
    want_fields: bool,
    want_summaries: bool,
    summary_fields: Sequence[str] | None = None,
    count_fields: Sequence[str] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    start_offset: int = 0,
    start_line: int = 0,
    digest: Any = None,
    reading: _Reading | None = None,
) -> Generator[ChunkResult, None, None]:
    """Transform every row of an input (any format of ``InputFile``) in ``jobs`` workers; yield chunks in order.

    ``transform`` must be picklable (see :func:`is_picklable`): each worker gets a copy. A chunk
    that hit an error is yielded with its rows up to the error and ``error`` set; the caller
    raises it (:meth:`ChunkResult.raise_error`), and the workers stop.

    Reading starts at byte ``start_offset``, whose line is numbered ``start_line + 1`` (to resume
    a run). Each result says where the input stands after its chunk (``end_offset``,
    ``end_line``) and, when a ``digest`` (a ``hashlib`` object fed every byte read) is given, a
    copy of it at that point. Workers ignore SIGINT and SIGTERM: the caller stops between chunks.
    Without ``skip_invalid`` a line over ``max_line_bytes`` is the last read (nothing more of it).
    ``reading`` (an :class:`answer_eval.engine.row_loop.Interrupts`) is told while this process
    reads the input, so that a signal then stops the run at once (its
    :class:`~answer_eval.engine.row_loop.ReadingStopped` comes out of this generator).
    """
    source = InputFile.of(path)
    job = _Job(
        transform,
        source.name,
        skip_invalid,
        want_text,
        want_fields,
        want_summaries,
        None if summary_fields is None else tuple(summary_fields),
        None if count_fields is None else tuple(count_fields),
        max_line_bytes,
    )
    payload = pickle.dumps(job)
    # "spawn": a fresh interpreter per worker, safe whatever threads the caller runs.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=(payload,)) as pool:
        pending: deque[tuple[Future[ChunkResult], _Read]] = deque()
        lines = _chunks(
            source, _Read(start_offset, start_line, digest), max_line_bytes, skip_invalid, reading or _NotTold()
        )
        try:
            for chunk, read in lines:
                pending.append((pool.submit(_run_chunk, chunk), read))
                if len(pending) >= jobs * _IN_FLIGHT_PER_WORKER:
                    done = _taken(*pending.popleft())
                    yield done
                    if done.error is not None:
                        return
            while pending:
                done = _taken(*pending.popleft())
                yield done
                if done.error is not None:
                    return
        finally:
            lines.close()  # the input closed now, not when the generator is collected
            for future, _ in pending:
                future.cancel()


def _taken(future: Future[ChunkResult], read: _Read) -> ChunkResult:
    result = future.result()
    result.end_offset, result.end_line, result.digest = read.offset, read.line, read.digest
    return result
