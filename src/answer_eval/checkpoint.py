"""Resumable file output: the checkpoint an interrupted run leaves, and ``--resume`` continuing from it.

A file command writing ``--output DIR/out.jsonl`` writes its rows to ``DIR/.out.jsonl.partial``
(for a ``.csv`` output: the rows as JSON lines, turned into CSV at the end) and, every few
seconds, records in ``DIR/.out.jsonl.partial.json`` how far it got: the input line and byte
reached, a SHA-256 of the input bytes read so far, the output bytes written (flushed and
fsynced first), the lines skipped, the command, its options and the package version. When the
whole file is done the partial file is renamed over ``out.jsonl`` (or turned into the CSV) and
the record removed, so the output path only ever holds a complete file.

A run stopped by SIGINT or SIGTERM (see :mod:`answer_eval.interrupts`) records its position at
the row it stopped on and keeps both files; a run killed outright keeps the last record.
``--resume`` checks the record (same command, options and package version; the input's bytes up
to the recorded position unchanged), cuts the partial file back to the recorded size, replays
the rows already written into the summary, and reads on from the recorded byte: the final output
is the one an uninterrupted run writes, byte for byte. A run without ``--resume`` starts over.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from answer_eval.files import InputError, fsync_folder

__all__ = ["CHECKPOINT_SECONDS", "Checkpoint", "Position", "checkpoint_paths", "run_options"]

logger = logging.getLogger(__name__)

CHECKPOINT_SECONDS = 5.0
"""The default longest time between two records of a running file command's position."""
_FORMAT = 1
# Options that do not change what is written: they may differ between a run and its resumption.
_NEUTRAL_OPTIONS = frozenset(
    {"file", "output", "format", "no_progress", "jobs", "resume", "command", "handler", "checkpoint_seconds"}
)


def run_options(command: str, args: Any) -> dict[str, Any]:
    """The options of a command-line run that shape its output, as JSON-ready values.

    Every option of ``args`` (an ``argparse.Namespace``) except those that only change how the
    run goes (the input and output paths, ``--format``, ``--no-progress``, ``--jobs``,
    ``--resume``, ``--checkpoint-seconds``); values that are not JSON scalars or lists of them are
    left out.
    """
    options: dict[str, Any] = {"command": command}
    for name, value in sorted(vars(args).items()):
        if name not in _NEUTRAL_OPTIONS and _is_plain(value):
            options[name] = list(value) if isinstance(value, tuple) else value
    return options


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def checkpoint_paths(target: Path) -> tuple[Path, Path]:
    """The partial output and its record for an output path: ``(.NAME.partial, .NAME.partial.json)``."""
    return target.with_name(f".{target.name}.partial"), target.with_name(f".{target.name}.partial.json")


@dataclass
class Position:
    """Where a run is: the next input byte and line, and the output written and lines skipped so far."""

    input_offset: int = 0
    input_line: int = 0
    output_offset: int = 0
    rows: int = 0
    invalid_lines: int = 0


@contextlib.contextmanager
def _writing(target: Path) -> Iterator[None]:
    # A failed write (disk full, file too large, I/O error) names the output it was for.
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot write the output {target}: {exc.strerror or exc}") from None


class Checkpoint:
    """The partial output of one run and the record of its position (see the module docstring).

    :param target: The final output path.
    :param source: The input file.
    :param options: What shapes the output (see :func:`run_options`); a resumed run must match it.
    :param every: The longest time, in seconds, between two records while the run goes on.
    """

    def __init__(
        self, target: Path, source: Path, options: Mapping[str, Any], every: float = CHECKPOINT_SECONDS
    ) -> None:
        from answer_eval import __version__

        self.target = target
        self.source = source
        self.partial, self.record = checkpoint_paths(target)
        self.options = {"package_version": __version__, **options}
        self.every = every
        self.digest = hashlib.sha256()
        """The fingerprint of the input bytes read so far (fed by the reader)."""
        self.position = Position()
        self.state: Any = None
        """The caller's own running state at the last record (JSON-ready), restored on resuming."""
        self.snapshot: Callable[[], Any] | None = None
        """Called at each record for the caller's state."""
        self._handle: IO[bytes] | None = None
        self._next_save = 0.0

    # ---- opening ----------------------------------------------------------------------------

    def open(self, resume: bool) -> Position:
        """Open the partial output: empty, or (``resume``) as the record left it. Returns the position.

        :raises InputError: When another run holds the checkpoint, or (``resume``) when the record
            does not match this run (another input, other options) or is damaged; the files of
            the checkpoint are then left as they were.
        """
        try:
            self._handle = open(self.partial, "ab")  # noqa: SIM115 - closed by finish, keep, release or discard
        except OSError as exc:
            raise InputError(
                f"cannot write to the output folder {self.partial.parent}: {exc.strerror or exc}"
            ) from None
        try:
            self._lock()
            record = self._read_record() if resume else None
            if record is None:
                if resume:
                    logger.warning("answer-eval: no checkpoint for %s: starting from the first line", self.target)
                elif self.record.exists():
                    logger.warning("answer-eval: the checkpoint of an earlier run for %s was discarded", self.target)
                self.record.unlink(missing_ok=True)
                self.position, self.state = Position(), None
            else:
                self.position, self.state = record
            self._handle.truncate(self.position.output_offset)
            self._handle.seek(self.position.output_offset)
        except BaseException:
            self._close()
            raise
        self._next_save = time.monotonic() + self.every
        return self.position

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

    def _read_record(self) -> tuple[Position, Any] | None:
        try:
            text = self.record.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"cannot read the checkpoint record {self.record}: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
            position = Position(**{name: data["position"][name] for name in Position.__dataclass_fields__})
            options, made_from, digest = data["options"], data["input"], data["input_sha256"]
            if not all(isinstance(value, int) and value >= 0 for value in vars(position).values()):
                raise ValueError("a position is not a count")
        except (ValueError, KeyError, TypeError):
            raise InputError(f"the checkpoint record {self.record} is damaged; run without --resume") from None
        if options != self.options:
            changed = sorted(
                name for name in {*options, *self.options} if options.get(name, ...) != self.options.get(name, ...)
            )
            raise InputError(
                f"the checkpoint for {self.target} was made with other options ({', '.join(changed)} differ); "
                "give the same options, or run without --resume to start over"
            )
        if self._hash_input(position.input_offset) != digest:
            raise InputError(
                f"the checkpoint for {self.target} was made from another input ({made_from}): the first "
                f"{position.input_offset:,} bytes of {self.source} differ; run without --resume to start over"
            )
        assert self._handle is not None
        if self._handle.seek(0, os.SEEK_END) < position.output_offset:
            raise InputError(f"the checkpoint {self.partial} is shorter than its record; run without --resume")
        return position, data.get("state")

    def _hash_input(self, size: int) -> str:
        digest = hashlib.sha256()
        with open(self.source, "rb") as handle:
            while size > 0:
                block = handle.read(min(size, 1 << 20))
                if not block:
                    return ""  # the input is now shorter than what was read
                digest.update(block)
                size -= len(block)
        self.digest = digest
        return digest.hexdigest()

    def written_rows(self) -> Iterator[dict[str, Any]]:
        """The rows already in the partial output (after :meth:`open` with ``resume``), in order."""
        with open(self.partial, "rb") as rows:
            left = self.position.output_offset
            while left > 0:
                line = rows.readline(left)
                left -= len(line)
                yield json.loads(line)

    # ---- writing ----------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Append output rows (whole JSON lines, UTF-8)."""
        assert self._handle is not None
        with _writing(self.target):
            self._handle.write(data)
        self.position.output_offset += len(data)

    def reached(self, input_offset: int, input_line: int, rows: int, invalid_lines: int, digest: Any = None) -> None:
        """Note how far the run got (a row boundary); record it when the last record is old enough."""
        position = self.position
        position.input_offset, position.input_line = input_offset, input_line
        position.rows, position.invalid_lines = rows, invalid_lines
        if digest is not None:
            self.digest = digest
        if time.monotonic() >= self._next_save:
            self.save()

    def save(self) -> None:
        """Record the position now: the partial output flushed and fsynced first, then the record replaced."""
        assert self._handle is not None
        if self.snapshot is not None:
            self.state = self.snapshot()
        record = {
            "format": _FORMAT,
            "options": self.options,
            "input": str(self.source.resolve()),
            "input_sha256": self.digest.hexdigest(),
            "position": vars(self.position),
            "state": self.state,
        }
        temporary = self.record.with_name(self.record.name + ".tmp")
        with _writing(self.target):
            self._handle.flush()
            os.fsync(self._handle.fileno())
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.record)
        fsync_folder(self.record.parent)
        self._next_save = time.monotonic() + self.every

    # ---- ending -----------------------------------------------------------------------------

    def finish(self, convert: Callable[[Path], None] | None = None) -> None:
        """The run is complete: rename the partial output over the target, or ``convert`` it (CSV); drop the record."""
        assert self._handle is not None
        with _writing(self.target):
            self._handle.flush()
            os.fsync(self._handle.fileno())
            if convert is not None:
                convert(self.partial)
                self.partial.unlink()
            else:
                os.replace(self.partial, self.target)
        self._close()
        self.record.unlink(missing_ok=True)
        fsync_folder(self.target.parent)

    def keep(self) -> None:
        """The run stopped at a row boundary: record the position and keep both files for ``--resume``."""
        self.save()
        self._close()

    def release(self) -> None:
        """Close the partial output, keeping what the last record covers (nothing kept without a record)."""
        self._close()
        self.record.with_name(self.record.name + ".tmp").unlink(missing_ok=True)
        if not self.record.exists():
            self.partial.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the partial output and its record (a failed run: nothing to resume)."""
        self._close()
        for path in (self.partial, self.record, self.record.with_name(self.record.name + ".tmp")):
            path.unlink(missing_ok=True)

    def _close(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                self._handle.close()
            self._handle = None
