"""Resumable file output: the checkpoint an interrupted run leaves (work files, position, options), and ``--resume``.

A file command writing ``--output DIR/out.jsonl`` writes its rows to ``DIR/.out.jsonl.partial``
(for a ``.csv`` output: the rows as JSON lines, turned into CSV at the end) and records in
``DIR/.out.jsonl.partial.json`` how far it got: at the first row boundary, then every few
seconds: the input line and byte reached, a SHA-256 of the input bytes read so far, the output
bytes written (flushed and fsynced first), the lines skipped, the command, its options and the
package version. When the whole file is done the partial file is renamed over ``out.jsonl`` (or
turned into the CSV) and the record removed, so the output path only ever holds a complete file.

These work files are never followed through a link: each is made new (``O_CREAT | O_EXCL |
O_NOFOLLOW``), an existing one is used only when it is a regular file with one link, and a file
is removed only while its name still holds the file this run made (:mod:`answer_eval.engine.output_files`);
the input is never one of them (compared by device and inode).

A run stopped by SIGINT or SIGTERM (see :mod:`answer_eval.engine.row_loop`) records its position at
the row it stopped on and keeps both files; so does a run that fails, at the last row boundary
before the failure (:meth:`Checkpoint.keep_after_failure`; the last record, when the failure came
while rows were being written); a run killed outright keeps the last record (there is one from
the first row on). ``--resume`` checks the record (its format; the same command, options
and package version; positions at line boundaries; the input's bytes up to the recorded position
unchanged; every row written whole JSON), and only then cuts the partial file back to the
recorded size, replays the rows already written into the summary and reads on from the recorded
byte: the final output is the one an uninterrupted run writes, byte for byte. A record that fails
a check is refused with exit 2 ("the checkpoint ... is damaged", or another input, other options:
every option of the record that differs, with both values), every file left as it was. A run
without ``--resume`` starts over, saying so when it drops an earlier checkpoint or rows an
earlier run left before its first record.

While a record is being replaced it is written to ``DIR/.out.jsonl.partial.json.tmp``
(:func:`work_files` names the three); :class:`Checkpoint` writes and reads them, :class:`Position`
and :func:`parse_record` are the record's contents.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from answer_eval.engine.output_files import (
    FileId,
    file_id,
    fsync_folder,
    open_owned,
    refuse_foreign,
    remove_if_ours,
    replacement_mode,
)
from answer_eval.errors import InputError
from answer_eval.inputs.formats import InputFile
from answer_eval.inputs.jsonl import feed_digest

__all__ = [
    "CHECKPOINT_SECONDS",
    "NEUTRAL_OPTIONS",
    "Checkpoint",
    "Position",
    "damaged",
    "kept_by",
    "note_kept",
    "run_options",
    "work_files",
]


logger = logging.getLogger(__name__)


CHECKPOINT_SECONDS = 5.0
"""The default longest time between two records of a running file command's position."""
FORMAT = 1
"""The version of the record's layout; a record of another version is refused as damaged."""
NEUTRAL_OPTIONS = frozenset(
    {"file", "output", "format", "no_progress", "jobs", "resume", "command", "handler", "checkpoint_seconds"}
)
"""Command-line options that do not change what is written: they may differ between a run and its resumption."""


def run_options(command: str, args: Any, elsewhere: Collection[str] = ()) -> dict[str, Any]:
    """The options of a command-line run that shape its output, as JSON-ready values.

    Every option of ``args`` (an ``argparse.Namespace``) except those that only change how the
    run goes (:data:`NEUTRAL_OPTIONS`: the input and output paths, ``--format``,
    ``--no-progress``, ``--jobs``, ``--resume``, ``--checkpoint-seconds``) and those named in
    ``elsewhere`` (held by another part of the record in a resolved form, such as the
    evaluator's signature); values that are not JSON scalars or lists of them are left out. An
    option added later is in the record unless it is declared neutral: a resume can only be
    refused too often, never accepted with an output-shaping option changed.
    """
    options: dict[str, Any] = {"command": command}
    for name, value in sorted(vars(args).items()):
        if name not in NEUTRAL_OPTIONS and name not in elsewhere and _is_plain(value):
            options[name] = list(value) if isinstance(value, tuple) else value
    return options


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def checkpoint_paths(target: Path) -> tuple[Path, Path]:
    """The partial output and its record for an output path: ``(.NAME.partial, .NAME.partial.json)``."""
    return target.with_name(f".{target.name}.partial"), target.with_name(f".{target.name}.partial.json")


def work_files(target: Path) -> dict[Path, str]:
    """Every file a run writing ``target`` may write, truncate, rename or remove, and what it is."""
    partial, record = checkpoint_paths(target)
    return {
        target: "the output",
        partial: "the partial output",
        record: "the checkpoint record",
        record.with_name(record.name + ".tmp"): "the checkpoint record's temporary file",
    }


@dataclass
class Position:
    """Where a run is: the next input byte and line, and the output written and lines skipped so far."""

    input_offset: int = 0
    input_line: int = 0
    output_offset: int = 0
    rows: int = 0
    invalid_lines: int = 0

    @classmethod
    def from_record(cls, data: Any) -> Position:
        """The position a record holds; ``ValueError`` unless every field is a count."""
        if not isinstance(data, dict):
            raise ValueError("the position is not a JSON object")
        values = {name: data.get(name) for name in cls.__dataclass_fields__}
        counts = {name: value for name, value in values.items() if type(value) is int and value >= 0}
        if len(counts) != len(values):
            raise ValueError("a position is not a count")
        return cls(**counts)


@dataclass(frozen=True)
class Kept:
    """What a run that failed kept for ``--resume``: its partial output and the rows its record counts."""

    partial: Path
    rows: int


_KEPT = "answer_eval_kept"


def note_kept(error: BaseException, kept: Kept) -> None:
    """Say on ``error`` (any exception) that its run kept rows for ``--resume``: the command line tells the user."""
    with contextlib.suppress(AttributeError, TypeError):  # an exception that takes no attribute: said nowhere
        setattr(error, _KEPT, kept)


def kept_by(error: BaseException) -> Kept | None:
    """What the run that raised ``error`` kept for ``--resume`` (``None``: nothing)."""
    kept = getattr(error, _KEPT, None)
    return kept if isinstance(kept, Kept) else None


def damaged(path: Path, why: str) -> InputError:
    """The error of a checkpoint ``--resume`` cannot use: exit 2, every file left as it was."""
    return InputError(
        f"the checkpoint {path} is damaged ({why}); nothing was changed. Run without --resume to start over "
        "(the checkpoint is then replaced), or remove it"
    )


def parse_record(raw: bytes, path: Path) -> dict[str, Any]:
    """A record's content, checked to be one a run writes (its position is read by the caller).

    :raises InputError: "damaged", naming ``path`` and what is wrong.
    """
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("format") != FORMAT:
            raise ValueError(f"unknown record format {data.get('format')!r}")
        Position.from_record(data.get("position"))
        for key in ("options", "input", "input_sha256"):
            if key not in data:
                raise KeyError(key)
        if not isinstance(data["options"], dict) or not isinstance(data["input_sha256"], str):
            raise ValueError("its options or input fingerprint are not what a run records")
    except RecursionError:  # a record edited to arrays nested past Python's recursion limit
        raise damaged(path, "arrays or objects nested too deeply to read") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise damaged(path, str(exc).strip("'") or "unreadable") from None
    return data


def _shown(value: Any) -> str:
    return "absent" if value is ... else json.dumps(value, ensure_ascii=False)


def option_changes(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The options that differ from the record's, in words: ``column_prefix: "", now "ae_"``."""
    from answer_eval.evaluators.base import signature_differences

    changes = []
    for name in sorted({*recorded, *now}):
        old, new = recorded.get(name, ...), now.get(name, ...)
        if old == new:
            continue
        if name == "signature" and isinstance(old, str) and isinstance(new, str):
            changes.extend(signature_differences(old, new))
        else:
            changes.append(f"{name}: {_shown(old)}, now {_shown(new)}")
    return changes


def read_rows(rows: IO[bytes], size: int, partial: Path) -> Iterator[dict[str, Any]]:
    """The rows in the first ``size`` bytes of a partial output, in order.

    :raises InputError: "damaged" (naming ``partial``) for bytes that are not whole JSON-object
        lines, or a size that falls inside a line.
    """
    left = size
    number = 0
    while left > 0:
        line = rows.readline(left)
        number += 1
        left -= len(line)
        if not line.endswith(b"\n"):
            raise damaged(partial, f"its record ends inside row {number:,}")
        try:
            row = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8 (NUL bytes, garbage), not JSON, or nested too deeply
            raise damaged(partial, f"row {number:,} is not a JSON line") from None
        if not isinstance(row, dict):
            raise damaged(partial, f"row {number:,} is not a JSON object")
        yield row


@contextlib.contextmanager
def _writing(target: Path) -> Iterator[None]:
    # A failed write (disk full, file too large, I/O error) names the output it was for.
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot write the output {target}: {exc.strerror or exc}") from None


class Checkpoint:
    """The partial output of one run and the record of its position (see the module docstring).

    Every file it makes is made new and never through a link; an existing partial file, record
    or temporary record is used only when it is a regular file with one link (see
    :mod:`answer_eval.engine.output_files`); a file is removed only if it is still the one this run made.

    :param target: The final output path.
    :param source: The input (any format: positions and the fingerprint are of its JSONL lines).
    :param options: What shapes the output (see :func:`run_options`); a resumed run must match it.
    :param every: The longest time, in seconds, between two records while the run goes on (the
        first record is made at the first row boundary, so a run killed early can be resumed).
    """

    def __init__(
        self, target: Path, source: InputFile, options: Mapping[str, Any], every: float = CHECKPOINT_SECONDS
    ) -> None:
        from answer_eval import __version__

        self.target = target
        self.source = source
        self.partial, self.record = checkpoint_paths(target)
        self.record_temp = self.record.with_name(self.record.name + ".tmp")
        self.options = {"package_version": __version__, **options}
        self.every = every
        self.digest = hashlib.sha256()
        """The fingerprint of the input bytes up to the position (a copy the reader handed over at a row boundary)."""
        self.position = Position()
        self._boundary = Position()  # the position at the last row boundary, output written up to it
        self._saved_rows: int | None = None  # the rows the record on disk counts (None: no record of this run)
        self.state: Any = None
        """The caller's own running state at the last record (JSON-ready), restored on resuming."""
        self.snapshot: Callable[[], Any] | None = None
        """Called at each record for the caller's state."""
        self._handle: IO[bytes] | None = None
        self._partial_id: FileId | None = None
        self._record_id: FileId | None = None
        self._temp_id: FileId | None = None
        self._next_save = 0.0

    # ---- opening ----------------------------------------------------------------------------

    def open(self, resume: bool) -> Position:
        """Open the partial output and read (``resume``) the record: returns the position to start from.

        Nothing is truncated or removed yet (see :meth:`begin`), so a refused resume leaves every
        file as it was.

        :raises InputError: When a work file is a link or not a regular file, another run holds
            the checkpoint, or (``resume``) the record does not match this run (another input,
            other options) or is damaged.
        """
        refuse_foreign(self.record, "the checkpoint record")
        refuse_foreign(self.record_temp, "the checkpoint record's temporary file")
        descriptor = open_owned(self.partial, "the partial output", os.O_RDWR | os.O_APPEND)
        self._handle = os.fdopen(descriptor, "ab")
        self._partial_id = file_id(os.fstat(descriptor))
        try:
            self._lock()
            record = self._read_record() if resume else None
            if record is None:
                self._start_over(resume)
            else:
                self.position, self.state = record
                self._saved_rows = self.position.rows
        except BaseException:
            self._close()
            raise
        return self.position

    def _start_over(self, resume: bool) -> None:
        had_record = self.record.exists()
        assert self._handle is not None
        leftover = os.fstat(self._handle.fileno()).st_size
        if resume:
            logger.warning("answer-eval: no checkpoint for %s: starting from the first line", self.target)
        elif had_record:
            logger.warning("answer-eval: the checkpoint of an earlier run for %s was discarded", self.target)
        elif leftover:
            logger.warning(
                "answer-eval: removed %s bytes of rows an earlier run left in %s before its first checkpoint",
                f"{leftover:,}",
                self.partial,
            )
        self._record_id = self._owned_id(self.record, "the checkpoint record")
        self._drop_record()
        remove_if_ours(self.record_temp, self._owned_id(self.record_temp, "the checkpoint record's temporary file"))
        self.position, self.state = Position(), None

    def begin(self) -> None:
        """Cut the partial output back to the recorded size: the run goes on from here."""
        assert self._handle is not None
        with _writing(self.target):
            self._handle.truncate(self.position.output_offset)
            self._handle.seek(self.position.output_offset)
        self._boundary = dataclasses.replace(self.position)
        self._next_save = 0.0  # the first row boundary records the position

    def _lock(self) -> None:
        # One run at a time per output path: a second one is refused rather than mixing rows.
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX: no lock
            return
        assert self._handle is not None
        try:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(f"another run is writing {self.target} (it holds {self.partial})") from None

    @staticmethod
    def _owned_id(path: Path, role: str) -> FileId | None:
        status = refuse_foreign(path, role)
        return None if status is None else file_id(status)

    def _read_record(self) -> tuple[Position, Any] | None:
        try:
            descriptor = open_owned(self.record, "the checkpoint record", os.O_RDONLY, create=False)
        except FileNotFoundError:
            return None
        with os.fdopen(descriptor, "rb") as handle:
            self._record_id = file_id(os.fstat(handle.fileno()))
            raw = handle.read()
        data = parse_record(raw, self.record)
        position = Position.from_record(data["position"])
        options, made_from, digest = data["options"], data["input"], data["input_sha256"]
        if options != self.options:
            raise InputError(
                f"the checkpoint for {self.target} was made with other options "
                f"({'; '.join(option_changes(options, self.options))}); "
                "give the same options, or run without --resume to start over"
            )
        digest_now, at_line_start = self._hash_input(position.input_offset)
        if digest_now != digest:
            # Checked before the line boundary: an input edited before the position (a line made
            # shorter) moves the boundary too, and is another input, not a damaged record.
            raise InputError(
                f"the checkpoint for {self.target} was made from another input ({made_from}): the first "
                f"{position.input_offset:,} bytes of {self.source.name} differ; run without --resume to start over"
            )
        if not at_line_start:
            raise damaged(self.record, f"its input position {position.input_offset:,} is not at the start of a line")
        assert self._handle is not None
        if os.fstat(self._handle.fileno()).st_size < position.output_offset:
            raise damaged(self.partial, "it is shorter than its record")
        return position, data.get("state")

    def _hash_input(self, size: int) -> tuple[str, bool]:
        """The SHA-256 of the input's first ``size`` bytes, read once, and whether a line starts there.

        One pass serves both checks: a converted format (CSV, a compressed file) is converted once.
        An input shorter than ``size`` gives the digest of what there is (which differs).
        """
        digest = hashlib.sha256()
        with self.source.open() as handle:
            fed, last = feed_digest(handle, digest, size)
            # A run records only line boundaries: reading on from inside a line would misread it.
            at_line_start = fed == size and (last in (b"\n", b"") or not handle.read(1))
        self.digest = digest
        return digest.hexdigest(), at_line_start

    def written_rows(self) -> Iterator[dict[str, Any]]:
        """The rows already in the partial output (after :meth:`open` with ``resume``), in order.

        :raises InputError: "damaged" for bytes that are not whole JSON-object lines, or a record
            whose output position falls inside a line.
        """
        with self._reader() as rows:
            yield from read_rows(rows, self.position.output_offset, self.partial)

    @contextlib.contextmanager
    def _reader(self) -> Iterator[IO[bytes]]:
        # Read through this run's own descriptor: the name may have been swapped for a link since.
        assert self._handle is not None
        self._handle.flush()
        with os.fdopen(os.dup(self._handle.fileno()), "rb") as rows:
            rows.seek(0)
            yield rows

    # ---- writing ----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Append output rows (whole JSON lines, UTF-8)."""
        assert self._handle is not None
        with _writing(self.target):
            self._handle.write(data)
        self.position.output_offset += len(data)

    def reached(self, input_offset: int, input_line: int, rows: int, invalid_lines: int, digest: Any = None) -> None:
        """Note how far the run got (a row boundary); record it when the last record is old enough.

        Every row before that point is written. ``digest`` is the input's fingerprint there: a copy,
        which the reader no longer feeds.
        """
        position = self.position
        position.input_offset, position.input_line = input_offset, input_line
        position.rows, position.invalid_lines = rows, invalid_lines
        if digest is not None:
            self.digest = digest
        self._boundary = dataclasses.replace(position)
        if time.monotonic() >= self._next_save:
            self.save()

    def save(self) -> None:
        """Record the position now: the partial output flushed and fsynced first, then the record replaced."""
        assert self._handle is not None
        if self.snapshot is not None:
            self.state = self.snapshot()
        record = {
            "format": FORMAT,
            "options": self.options,
            "input": self.source.name if self.source.is_stdin else str(self.source.path.resolve()),
            "input_sha256": self.digest.hexdigest(),
            "position": vars(self.position),
            "state": self.state,
        }
        with _writing(self.target):
            self._handle.flush()
            os.fsync(self._handle.fileno())
            descriptor = self._new_record_temp()
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False))
                handle.flush()
                os.fsync(handle.fileno())
                written = file_id(os.fstat(handle.fileno()))
            os.replace(self.record_temp, self.record)
        self._record_id, self._temp_id = written, None
        self._saved_rows = self.position.rows
        fsync_folder(self.record.parent)
        self._next_save = time.monotonic() + self.every

    def _new_record_temp(self) -> int:
        # A temporary record left by a run killed mid-save is a regular file of ours: it is reused.
        descriptor = open_owned(self.record_temp, "the checkpoint record's temporary file", os.O_WRONLY)
        os.ftruncate(descriptor, 0)  # only once the descriptor is known to be our regular file
        self._temp_id = file_id(os.fstat(descriptor))
        return descriptor

    # ---- ending -----------------------------------------------------------------------------

    def finish(self, convert: Callable[[IO[bytes]], None] | None = None) -> None:
        """The run is complete: rename the partial output over the target, or ``convert`` it (CSV); drop the record."""
        assert self._handle is not None
        with _writing(self.target):
            self._handle.flush()
            os.fsync(self._handle.fileno())
            if convert is not None:
                with self._reader() as rows:
                    convert(rows)
                remove_if_ours(self.partial, self._partial_id)
            else:
                if self._partial_name_changed():
                    raise InputError(f"{self.partial} was replaced by another file during the run; nothing was written")
                os.fchmod(self._handle.fileno(), replacement_mode(self.target))  # an output replaced keeps its mode
                os.replace(self.partial, self.target)
        self._close()
        self._drop_record()
        fsync_folder(self.target.parent)

    def _partial_name_changed(self) -> bool:
        try:
            return file_id(os.lstat(self.partial)) != self._partial_id
        except FileNotFoundError:
            return True

    def keep(self) -> None:
        """The run stopped at a row boundary: record the position and keep both files for ``--resume``."""
        self.save()
        self._close()

    def keep_after_failure(self, clean: bool) -> Kept | None:
        """The run failed: keep the rows done for ``--resume`` where that is safe; what was kept (``None``: nothing).

        ``clean``: the run stands at its last row boundary (the failure came before the rows of the
        batch were counted and written, or after the rows before a refused line were): the
        position is recorded there. Otherwise (a failure while rows were being counted or
        written) the last record stands, and the rows after it are cut off by ``--resume``. A
        record that counts no row keeps nothing: both files are removed.
        """
        if self._handle is None:  # closed already (the output was finished): nothing of this run to keep
            return None
        if clean:
            self.position = dataclasses.replace(self._boundary)
            try:
                self.keep()
            except (OSError, InputError):  # the record cannot be written (a full disk): the last one stands
                self.release()
        else:
            self.release()
        if not self._saved_rows:
            self.discard()
            return None
        return Kept(self.partial, self._saved_rows)

    def release(self) -> None:
        """Close the partial output, keeping what the last record covers (nothing kept without a record)."""
        self._close()
        remove_if_ours(self.record_temp, self._temp_id)
        if self._record_id is None:
            remove_if_ours(self.partial, self._partial_id)

    def discard(self) -> None:
        """Remove the partial output and its record (a run that left nothing to resume)."""
        self._close()
        remove_if_ours(self.partial, self._partial_id)
        self._drop_record()
        self._saved_rows = None

    def close(self) -> None:
        """Close the partial output and leave every file as it is (a refused resume)."""
        self._close()

    def _drop_record(self) -> None:
        remove_if_ours(self.record, self._record_id)
        remove_if_ours(self.record_temp, self._temp_id)
        self._record_id = self._temp_id = None

    def _close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
