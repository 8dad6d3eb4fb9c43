"""Reading JSONL input line by line and writing results atomically."""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

__all__ = [
    "AtomicWriter",
    "InputError",
    "check_output_path",
    "iter_jsonl",
    "parse_jsonl_line",
    "write_csv_from_jsonl",
]

_BOM = b"\xef\xbb\xbf"


class InputError(ValueError):
    """Bad input, with the file and line it was found on when there is one."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        where = ":".join(str(part) for part in (self.path, line) if part is not None)
        super().__init__(f"{where}: {message}" if where else message)


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """Yield ``(line_number, row)`` for every non-blank line of a JSONL file, streaming.

    A line that is not valid UTF-8, not JSON or not a JSON object is yielded as an
    :class:`InputError` naming the line instead of a row, so the caller decides whether to stop or
    skip. A UTF-8 byte order mark on the first line and CRLF line ends are accepted.
    """
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            row = parse_jsonl_line(raw, number, path)
            if row is not None:
                yield number, row


def parse_jsonl_line(raw: bytes, number: int, path: str | os.PathLike[str]) -> dict[str, Any] | InputError | None:
    """Read one raw line of a JSONL file as :func:`iter_jsonl` does: ``None`` for a blank line.

    A line that is not valid UTF-8, not JSON or not a JSON object gives an :class:`InputError`
    naming ``path`` and the line ``number``; a byte order mark is dropped from line 1.
    """
    if number == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not valid UTF-8 (byte {exc.start + 1})", path, number)
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        return InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", path, number)
    if not isinstance(row, dict):
        return InputError(f"expected a JSON object, got a JSON {_json_type(row)}", path, number)
    return row


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def check_output_path(output: Path, inputs: list[Path]) -> None:
    """Refuse an output path that would overwrite an input or cannot be written as a file."""
    if output.exists() and output.is_dir():
        raise InputError(f"output {output} is a directory; give a file name")
    for source in inputs:
        if output.exists() and source.exists() and output.samefile(source):
            raise InputError(f"output {output} is the input file; write the results to another file")
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output folder {parent} does not exist")


class AtomicWriter:
    """Write a file through a temporary file in the same folder, then rename it into place.

    The target is untouched until :meth:`commit`; on an exception, or if the writer is closed
    without committing, the temporary file is removed, so a failed or interrupted run never
    leaves a partial file.
    """

    def __init__(self, target: str | os.PathLike[str], newline: str | None = None) -> None:
        self.target = Path(target)
        descriptor, name = tempfile.mkstemp(dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".tmp")
        self.temp_path = Path(name)
        self.handle: IO[str] = open(descriptor, "w", encoding="utf-8", newline=newline)  # noqa: SIM115 - closed by commit or discard
        self._done = False

    def write(self, text: str) -> None:
        """Write text to the temporary file."""
        self.handle.write(text)

    def commit(self) -> None:
        """Flush, fsync and rename the temporary file over the target."""
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(self.temp_path, 0o666 & ~umask)
        os.replace(self.temp_path, self.target)
        self._done = True
        _fsync_folder(self.target.parent)

    def discard(self) -> None:
        """Remove the temporary file; the target is left as it was."""
        if not self.handle.closed:
            self.handle.close()
        if not self._done:
            self.temp_path.unlink(missing_ok=True)
            self._done = True

    def __enter__(self) -> AtomicWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None or not self._done:
            self.discard()


def _fsync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def write_csv_from_jsonl(spool: Path, fields: list[str], writer: AtomicWriter) -> None:
    """Copy JSONL rows from ``spool`` into ``writer`` as CSV with the given columns.

    Values that are not strings are written as JSON (``true``, ``12``, ``["a", "b"]``); ``None``
    as an empty cell.
    """
    table = csv.writer(writer.handle)
    table.writerow(fields)
    with open(spool, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            table.writerow([_csv_cell(row.get(name)) for name in fields])
