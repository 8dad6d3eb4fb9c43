"""Reading JSONL input line by line and writing results atomically."""

from __future__ import annotations

import csv
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NamedTuple, Protocol

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "FORMULA_STARTS",
    "INVALID_ROW",
    "LINE_GAP",
    "AtomicWriter",
    "InputError",
    "LineGap",
    "LineReader",
    "RowsKept",
    "check_output_path",
    "csv_text_cell",
    "drop_line_rest",
    "fsync_folder",
    "invalid_row",
    "iter_jsonl",
    "iter_parsed_lines",
    "iter_raw_lines",
    "line_gap",
    "parse_jsonl_line",
    "read_csv_text_cell",
    "replacement_mode",
    "stdin_id",
    "temporary_file",
    "write_csv_from_jsonl",
]

_BOM = b"\xef\xbb\xbf"

DEFAULT_MAX_LINE_BYTES = 64 << 20
"""The longest row read (64 MiB, line end not counted): a JSONL line, or another format's row as its JSON
line. A longer one is an :class:`InputError` naming the line and the limit (``--max-line-bytes`` on the
command line), never read into memory whole: each format's reader counts a row's bytes before it builds
the row (see :mod:`answer_eval.inputs.formats`)."""
_READ_SIZE = 1 << 20  # the bytes of an over-long line are skipped this many at a time


class InputError(ValueError):
    """Bad input, with the file and line it was found on when there is one."""

    skippable = True
    """Whether ``--skip-invalid`` may skip the line it was found on (a malformed line: yes; a refused
    option such as a column the output would overwrite: no)."""
    keeps_rows = True
    """Whether a run it stops keeps the rows done before it for ``--resume`` (a bad line, which can be
    mended before resuming: yes; a refused option, which a resume with other options cannot use: no)."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        where = ":".join(str(part) for part in (self.path, line) if part is not None)
        super().__init__(f"{where}: {message}" if where else message)


class RowsKept(InputError):
    """A stop that is no row's fault (an LLM grader became unavailable mid-run): never skipped as an invalid line.

    The run keeps its checkpoint at the last row boundary, as every failure does (see
    :func:`answer_eval.engine.runner.process_jsonl`), so that ``--resume`` continues without
    paying again for the rows already graded.
    """

    skippable = False


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


class LineReader(Protocol):
    """What :func:`iter_raw_lines` reads from: a binary file, or any object with its ``readline``."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line, at most ``size`` bytes of it (``b""`` at the end)."""
        ...


def iter_raw_lines(
    handle: LineReader,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    digest: _Digest | None = None,
    *,
    skip_long: bool = True,
) -> Iterator[tuple[bytes | None, int]]:
    """Yield ``(raw_line, size)`` for every line of a binary file, holding at most one line in memory.

    ``raw_line`` is ``None`` for a line longer than ``max_line_bytes`` (its line end not counted).
    With ``skip_long`` (for a caller that skips such a line) its bytes are read and dropped in
    pieces, never held whole, and ``size`` is its whole length; without it (for a caller that stops
    at it) nothing more is read: ``size`` is what was read of it, and the lines end there, so a line
    that never ends (``/dev/zero``) stops a run at once. ``size`` is a line's length in bytes, line
    end included, so a caller can tell where the next line starts. Every byte read is also passed
    to ``digest.update`` when a digest is given (to fingerprint what was read).
    """
    limit = max_line_bytes + 2  # room for "\r\n"
    readline = handle.readline
    while True:
        raw = readline(limit)
        if not raw:
            return
        if digest is not None:
            digest.update(raw)
        if len(raw) < limit or raw.endswith(b"\n"):
            content = len(raw) - (2 if raw.endswith(b"\r\n") else 1 if raw.endswith(b"\n") else 0)
            yield (raw if content <= max_line_bytes else None), len(raw)
            continue
        if not skip_long:
            yield None, len(raw)
            return
        yield None, len(raw) + drop_line_rest(handle, digest)


def drop_line_rest(handle: LineReader, digest: _Digest | None = None) -> int:
    """Read the rest of the line being read and drop it, a piece at a time: the bytes dropped (its line end included).

    Every byte read is passed to ``digest.update`` when a digest is given.
    """
    size = 0
    while True:
        raw = handle.readline(_READ_SIZE)
        if not raw:
            return size
        if digest is not None:
            digest.update(raw)
        size += len(raw)
        if raw.endswith(b"\n"):
            return size


def iter_jsonl(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """Yield ``(line_number, row)`` for every non-blank line of a JSONL file, streaming.

    A line that is not valid UTF-8, not JSON, not a JSON object, holds a key twice or is longer
    than ``max_line_bytes`` is yielded as an :class:`InputError` naming the line instead of a row,
    so the caller decides whether to stop or skip (a line over the limit is yielded as soon as it
    passes the limit: a caller that stops there reads nothing more of it). A UTF-8 byte order mark
    on the first line and CRLF line ends are accepted.
    """
    with open(path, "rb") as handle:
        yield from iter_parsed_lines(handle, path, max_line_bytes)


def iter_parsed_lines(
    handle: LineReader,
    path: str | os.PathLike[str],
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    *,
    gaps: bool = False,
) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """:func:`iter_jsonl` on lines already open (``path`` names them in messages).

    ``gaps``: the lines are a converted format's, whose :func:`line_gap` markers stand for lines of the file.
    """
    number = 0
    while True:
        long_line = False
        for raw, _ in iter_raw_lines(handle, max_line_bytes, skip_long=False):
            number += 1
            row = parse_jsonl_line(raw, number, path, max_line_bytes=max_line_bytes, gaps=gaps)
            if isinstance(row, LineGap):
                number += row.lines - 1
            elif row is not None:
                long_line = raw is None
                yield number, row
        if not long_line:
            return
        drop_line_rest(handle)  # only once the caller went on past the line


INVALID_ROW = b"\x00"
"""How a converted format (:mod:`answer_eval.inputs.converters`) marks a row it could not convert:
a NUL byte, then ``{"invalid": message}``. No JSONL line starts with NUL (it is not JSON), so such a
line is refused either way; :func:`parse_jsonl_line` refuses it with its message."""


def invalid_row(message: str) -> bytes:
    """The line standing for a row that cannot be read (see :data:`INVALID_ROW`): refused, skippable."""
    return INVALID_ROW + json.dumps({"invalid": message}).encode("ascii") + b"\n"


LINE_GAP = b"\x01"
"""How a converted format marks lines of its file that hold no row of their own (the lines of a record over
several lines, a header): ``\x01``, then how many lines it stands for. One marker stands for millions of lines at
the cost of one (a quoted CSV cell of millions of line feeds), so line numbers stay the file's own. It is read as
such only from a converted format (``gaps``): in a JSONL file it is a line that is not JSON."""


class LineGap(NamedTuple):
    """A :data:`LINE_GAP` marker read: it stands for ``lines`` lines of the file (itself included), none a row."""

    lines: int


def line_gap(lines: int) -> bytes:
    """The line standing for ``lines`` lines of a converted format's file that hold no row (see :data:`LINE_GAP`)."""
    return b"\n" if lines == 1 else LINE_GAP + str(lines).encode("ascii") + b"\n"


def _line_gap(raw: bytes) -> LineGap | None:
    digits = raw[len(LINE_GAP) :].rstrip(b"\n")
    if raw.startswith(LINE_GAP) and digits.isdigit() and len(digits) < 20:
        return LineGap(int(digits))
    return None


def _invalid_row(raw: bytes, path: str | os.PathLike[str], number: int) -> InputError:
    try:
        message = json.loads(raw[len(INVALID_ROW) :].decode("utf-8"))["invalid"]
    except (ValueError, KeyError, TypeError):
        message = None
    return InputError(message if isinstance(message, str) else "not valid JSON (a NUL byte)", path, number)


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A JSON object with a key given twice is refused: json.loads would silently keep the last
    # value, and which one the writer meant is unknowable.
    row = dict(pairs)
    if len(row) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return row


_DECODE = json.JSONDecoder(object_pairs_hook=_object).decode


def parse_jsonl_line(
    raw: bytes | None,
    number: int,
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    gaps: bool = False,
) -> dict[str, Any] | InputError | LineGap | None:
    """Read one raw line of a JSONL file as :func:`iter_jsonl` does: ``None`` for a blank line.

    A line that is not valid UTF-8, not JSON or not a JSON object, that holds the same key twice
    in an object, a number too long to read or nesting too deep to read gives an
    :class:`InputError` naming ``path`` and the line ``number``; so does ``raw=None``, which
    :func:`iter_raw_lines` gives for a line longer than ``max_line_bytes``. A byte order mark is
    dropped from line 1. With ``gaps`` (the lines of a converted format) a :func:`line_gap` marker
    gives a :class:`LineGap`. Never raises.
    """
    if raw is None:
        return InputError(
            f"the line is longer than {max_line_bytes:,} bytes, the limit (raise it with --max-line-bytes)",
            path,
            number,
        )
    if number == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if raw.startswith(INVALID_ROW):
        return _invalid_row(raw, path, number)
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not valid UTF-8 (byte {exc.start + 1})", path, number)
    try:
        row = _DECODE(text)
    except json.JSONDecodeError as exc:
        gap = _line_gap(raw) if gaps else None  # a marker is not JSON: looked for only here, off the common path
        if gap is not None:
            return gap
        return InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", path, number)
    except _DuplicateKey as exc:
        return InputError(
            f"the key {exc.key!r} appears twice in one JSON object; which value is meant is ambiguous", path, number
        )
    except ValueError:  # an integer longer than Python reads (json.loads raises a plain ValueError)
        digits = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        return InputError(f"not valid JSON here: a number has more than {digits} digits, the limit", path, number)
    except RecursionError:
        return InputError("not valid JSON here: arrays or objects nested too deeply to read", path, number)
    if not isinstance(row, dict):
        return InputError(f"expected a JSON object, got a JSON {_json_type(row)}", path, number)
    return row


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def check_output_path(output: Path, inputs: list[Path], *, stdin: bool = False) -> None:
    """Refuse an output path that would overwrite an input or cannot be written as a file.

    Refused, each with an :class:`InputError` naming the path: a directory, an input file (the
    same file under any name: a hard or symbolic link counts; with ``stdin``, the file standard
    input reads, compared by device and inode), an existing output that is read-only (its mode
    grants no write permission, or this process may not write it: replacing it would silently
    drop that protection) or not a regular file nor a link (a FIFO, a device: it would be replaced
    by a file), a folder that does not exist, and a folder this process may not write
    to, as :func:`os.access` tells: permission bits (which do not bind root), an immutable folder
    (``chattr +i``, which does) or a read-only file system. Anything it cannot foresee fails when
    the temporary file is made (see :func:`temporary_file`).
    """
    if output.exists() and output.is_dir():
        raise InputError(f"output {output} is a directory; give a file name")
    for source in inputs:
        if output.exists() and source.exists() and output.samefile(source):
            raise InputError(f"output {output} is the input file; write the results to another file")
    if stdin and output.exists() and _same_as_stdin(output):
        raise InputError(
            f"output {output} is the input file (standard input reads it); write the results to another file"
        )
    _refuse_unwritable(output)
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"output folder {parent} is not writable")


def stdin_id() -> tuple[int, int] | None:
    """The device and inode of the file standard input reads (``None`` when it has none)."""
    try:
        status = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):  # closed, or not a file descriptor
        return None
    return status.st_dev, status.st_ino


def _same_as_stdin(path: Path) -> bool:
    try:
        status = os.stat(path)
    except OSError:
        return False
    return stdin_id() == (status.st_dev, status.st_ino)


def _refuse_unwritable(output: Path) -> None:
    # A link at the output path is replaced, never followed: only a regular file's own mode counts.
    try:
        status = os.lstat(output)
    except OSError:
        return
    if not stat.S_ISREG(status.st_mode) and not stat.S_ISLNK(status.st_mode):
        raise InputError(
            f"output {output} is not a regular file (a FIFO, socket or device): the run would replace it with one; "
            "write the results to a file"
        )
    if stat.S_ISREG(status.st_mode) and (not status.st_mode & 0o222 or not os.access(output, os.W_OK)):
        raise InputError(
            f"output {output} is read-only (mode {stat.S_IMODE(status.st_mode):04o}): the run would replace it; "
            f"make it writable (chmod u+w {output}) to have it replaced, or write the results to another file"
        )


def replacement_mode(target: Path) -> int:
    """The permission bits of a file written over ``target``: those of the regular file there, kept.

    A file a run replaces keeps its permissions (not its owner or group, which a rename cannot
    keep); a new file, or one replacing a link, gets what ``open`` gives: ``0o666`` less the umask.
    """
    try:
        status = os.lstat(target)
    except OSError:
        status = None
    if status is not None and stat.S_ISREG(status.st_mode):
        return stat.S_IMODE(status.st_mode) & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def temporary_file(target: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """Make an empty temporary file beside ``target`` (``.<name>.<random><suffix>``): ``(descriptor, path)``.

    :raises InputError: When the folder cannot take a new file (read-only, no permission, full),
        naming the folder.
    """
    try:
        descriptor, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    except OSError as exc:
        folder = target.parent if str(target.parent) else Path(".")
        raise InputError(f"cannot write to the output folder {folder}: {exc.strerror or exc}") from None
    return descriptor, Path(name)


class AtomicWriter:
    r"""Write a file through a temporary file in the same folder, then rename it into place.

    The target is untouched until :meth:`commit`; on an exception, or if the writer is closed
    without committing, the temporary file is removed, so a failed or interrupted run never
    leaves a partial file.

    Text is written as UTF-8; a character UTF-8 cannot hold (a lone surrogate such as the JSON
    escape ``"\ud800"`` decodes to) is written as its backslash escape (``errors``), which inside a
    JSON string is the same escape again, so a JSON line reads back to the same value.
    """

    def __init__(
        self, target: str | os.PathLike[str], newline: str | None = None, errors: str = "backslashreplace"
    ) -> None:
        self.target = Path(target)
        descriptor, self.temp_path = temporary_file(self.target)
        self.handle: IO[str] = open(descriptor, "w", encoding="utf-8", newline=newline, errors=errors)  # noqa: SIM115 - closed by commit or discard
        self._done = False

    def write(self, text: str) -> None:
        """Write text to the temporary file."""
        self.handle.write(text)

    def commit(self) -> None:
        """Flush, fsync and rename the temporary file over the target."""
        self.handle.flush()
        os.fsync(self.handle.fileno())
        # Set on the descriptor, so a name swapped for a link since is never followed.
        os.fchmod(self.handle.fileno(), replacement_mode(self.target))
        self.handle.close()
        os.replace(self.temp_path, self.target)
        self._done = True
        fsync_folder(self.target.parent)

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


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename into it) to disk, where the system allows it."""
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


# A text cell a spreadsheet would run as a formula starts with one of these (OWASP, "CSV
# Injection"): it is written with a leading apostrophe, which spreadsheets show as text. A cell
# that already starts with an apostrophe gets one more, so the rule can be undone without loss.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
"""First characters that make a spreadsheet read a CSV text cell as a formula: OWASP's list, and
their fullwidth forms (which some spreadsheets read as the ASCII ones)."""
_QUOTED = (*FORMULA_STARTS, "'", "[", "{")


def csv_text_cell(text: str) -> str:
    r"""A text value as a CSV cell a spreadsheet cannot run and the CSV reader reads back as text.

    Text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (a spreadsheet would
    run it as a formula), text a CSV input reads as another value (starting with ``[`` or ``{``:
    JSON; ``true`` or ``false`` in any case: a boolean) and, so the rule can be undone, text
    starting with ``'`` gets a leading ``'``; :func:`read_csv_text_cell` removes it again.

    >>> csv_text_cell('=HYPERLINK("http://x","y")'), csv_text_cell('["not", "a list"]'), csv_text_cell("TRUE")
    ('\'=HYPERLINK("http://x","y")', '\'["not", "a list"]', "'TRUE")
    """
    return "'" + text if _marked(text) else text


def _marked(text: str) -> bool:
    return text.startswith(_QUOTED) or (len(text) in (4, 5) and text.casefold() in ("true", "false"))


def read_csv_text_cell(cell: str) -> str:
    """The text :func:`csv_text_cell` wrote: one leading apostrophe removed, where it added one."""
    return cell[1:] if cell.startswith("'") and _marked(cell[1:]) else cell


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return csv_text_cell(value)
    return json.dumps(value, ensure_ascii=False)


def write_csv_from_jsonl(spool: Iterable[bytes], fields: list[str], writer: AtomicWriter) -> None:
    """Copy JSONL rows (the lines of ``spool``, an open binary file) into ``writer`` as CSV with the given columns.

    Values that are not strings are written as JSON (``true``, ``12``, ``["a", "b"]``); ``None``
    as an empty cell; text that a spreadsheet would run as a formula is neutralised
    (:func:`csv_text_cell`).
    """
    table = csv.writer(writer.handle)
    table.writerow([csv_text_cell(name) for name in fields])  # column names come from the input too
    for line in spool:
        row = json.loads(line)
        table.writerow([_csv_cell(row.get(name)) for name in fields])


def write_bytes_atomically(target: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file in the same folder, then rename it into place.

    The binary counterpart of :class:`AtomicWriter` (for Parquet shards): the temporary file is
    named ``.<target name>.<random>.tmp``, flushed and fsynced before the rename, and removed if
    writing fails, so ``target`` is either the whole new file or untouched.
    """
    path = Path(target)
    descriptor, temp = temporary_file(path)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), replacement_mode(path))
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)
