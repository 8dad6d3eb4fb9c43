"""The formats that are not JSONL, turned row by row into the JSON lines the row loop reads.

A JSON array (ijson, item by item), CSV and TSV (the standard library's reader, a record at a
time, with :func:`read_cell` for the cells) and Parquet (pyarrow, a batch of a row group at a
time). Each converter yields one JSON line per row (ASCII escapes, so any string reads back the
same), and :class:`LineStream` hands them to the row loop as a forward-only binary file.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from answer_eval.engine.files import DEFAULT_MAX_LINE_BYTES, InputError, invalid_row, read_csv_text_cell

__all__ = ["OTHER", "TEXT", "VALUE", "LineStream", "json_array_lines", "parquet_lines", "read_cell", "table_lines"]

_PARQUET_BATCH = 4096
_BOM = b"\xef\xbb\xbf"
_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8


class LineStream:
    """JSON lines made one at a time by a converter, read as a forward-only binary file."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self._line = memoryview(b"")
        self._at = 0  # the next byte of _line
        self._offset = 0

    def readline(self, size: int = -1, /) -> bytes:
        """The next line (at most ``size`` bytes of it; the rest comes with the next call), ``b""`` at the end."""
        if self._at >= len(self._line):
            self._line, self._at = memoryview(next(self._lines, b"")), 0
        end = len(self._line) if size < 0 else min(len(self._line), self._at + size)
        piece = bytes(self._line[self._at : end])
        self._at = end
        self._offset += len(piece)
        return piece

    def read(self, size: int = -1, /) -> bytes:
        """The next ``size`` bytes (all that is left for a negative ``size``)."""
        pieces: list[bytes] = []
        left = size
        while left != 0:
            piece = self.readline(left)
            if not piece:
                break
            pieces.append(piece)
            left = -1 if left < 0 else left - len(piece)
        return b"".join(pieces)

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Read forward to byte ``offset`` of the lines (to resume a run); going back is refused."""
        if whence != 0 or offset < self._offset:
            raise io.UnsupportedOperation("a converted input is read forward only")
        while self._offset < offset and self.read(min(offset - self._offset, 1 << 20)):
            pass
        return self._offset


def _json_line(row: Any) -> bytes:
    # UTF-8 as in a JSONL file, so --max-line-bytes counts the bytes a JSONL file would hold; a lone
    # surrogate (which no valid UTF-8 decodes to) is left as bytes the row loop refuses as bad UTF-8.
    return json.dumps(row, ensure_ascii=False, default=_as_text).encode("utf-8", "surrogatepass") + b"\n"


def _as_text(value: Any) -> str:
    # Values JSON has no form for: bytes as their UTF-8 text, dates and decimals as theirs.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


class _Unique(dict):  # type: ignore[type-arg]
    """A JSON object from ijson that remembers a key given twice (ijson keeps the last value silently)."""

    repeated: str | None = None

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self and self.repeated is None:
            self.repeated = key
        dict.__setitem__(self, key, value)


def _repeated_key(value: Any) -> str | None:
    if isinstance(value, _Unique):
        if value.repeated is not None:
            return value.repeated
        return next((key for key in map(_repeated_key, value.values()) if key is not None), None)
    if isinstance(value, list):
        return next((key for key in map(_repeated_key, value) if key is not None), None)
    return None


def json_array_lines(binary: IO[bytes], name: str) -> Iterator[bytes]:
    """One JSON line per item of the JSON array in ``binary``, parsed incrementally (ijson: one item in memory).

    An item holding a key twice becomes a line holding it twice, which the row loop refuses as it
    refuses such a JSONL line. A file that is not a whole JSON array ends with an :class:`InputError`.
    """
    import ijson  # type: ignore[import-untyped]

    peek = getattr(binary, "peek", None)
    if peek is not None and bytes(peek(3)[:3]) == _BOM:
        binary.read(3)  # ijson reads bytes and knows no byte order mark
    number = 0
    try:
        for item in ijson.items(binary, "item", use_float=True, map_type=_Unique):
            number += 1
            repeated = _repeated_key(item)
            if repeated is None:
                yield _json_line(item)
            else:  # the line says what the item said, so the row loop refuses it as it refuses such a line
                key = json.dumps(repeated)
                yield f"{{{key}: null, {key}: null}}\n".encode("ascii")
    except ijson.JSONError as exc:
        message = " ".join(str(exc).split())
        raise InputError(f"not a valid JSON array after item {number:,}: {message}", name) from None


TEXT, VALUE, OTHER = "text", "value", "other"
"""The kinds of CSV field :func:`read_cell` tells apart."""


def read_cell(cell: str, kind: str = OTHER) -> Any:
    """The value of one CSV or TSV cell in a field of ``kind`` (:data:`TEXT`, :data:`VALUE` or :data:`OTHER`).

    - An empty cell is a missing value (``None``): a CSV cannot tell it from an empty text.
    - A cell ``--output x.csv`` marked with a leading apostrophe (text a spreadsheet would run, or
      that would read as JSON or a boolean) is that text, without the apostrophe.
    - A JSON object or a JSON array is that value: what ``--output x.csv`` writes for a pipeline
      output or a list of answers (``["12400", "12,400"]``). In a text field only an array of
      strings is (``[1]`` is a citation mark, left as text).
    - In other fields (a label, a verdict column), ``true`` and ``false`` in any case (``TRUE``,
      as a spreadsheet writes it) are booleans; in text and value fields they stay words.
    - Anything else is the text itself, numbers included (``3.5`` is read as a number label by the
      package's number reading, as the text "3.5" always is).

    >>> read_cell('["a", "b"]', VALUE), read_cell("TRUE"), read_cell("true", TEXT), read_cell("[1]", TEXT)
    (['a', 'b'], True, 'true', '[1]')
    """
    if not cell:
        return None
    if cell[0] == "'":
        return read_csv_text_cell(cell)
    if cell[0] in "[{":
        try:
            value = json.loads(cell)
        except ValueError:
            value = None
        if isinstance(value, dict) or (
            isinstance(value, list) and (kind != TEXT or all(isinstance(item, str) for item in value))
        ):
            return value
    if kind == OTHER and len(cell) in (4, 5):
        folded = cell.casefold()
        if folded in ("true", "false"):
            return folded == "true"
    return cell


def table_lines(binary: IO[bytes], delimiter: str, kinds: dict[str, str], name: str) -> Iterator[bytes]:
    """One JSON line per record of a CSV (or, with a tab ``delimiter``, TSV) file with a header row.

    ``kinds`` maps a field to how its cells are read (:func:`read_cell`). Blank lines fill in for
    the header and for records spanning lines, so that every row keeps the file's line number. A
    record with more (non-empty) cells than the header, or bytes that are not UTF-8, is an invalid
    row (``--skip-invalid`` skips it); a header naming a column twice and a malformed record (a
    stray quote) end the file with an :class:`InputError` naming the line. Columns whose header
    cell is empty are not read.
    """
    text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline="")
    reader = csv.reader(text, delimiter=delimiter, strict=True)  # a stray quote is an error, not a merged row
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, DEFAULT_MAX_LINE_BYTES))  # a long answer is no error; --max-line-bytes bounds it
    try:
        header = _header(reader, name)
        emitted = reader.line_num  # the header's lines: line numbers stay the file's own
        yield from _blank_lines(emitted)
        columns = [(i, field, kinds.get(field, OTHER)) for i, field in enumerate(header) if field]
        while True:
            start = reader.line_num + 1
            cells = _next_record(reader, name)
            if cells is None:
                return
            if not cells:
                continue
            yield from _blank_lines(start - 1 - emitted)
            emitted = start
            yield _record_line(cells, header, columns)
    finally:
        csv.field_size_limit(limit)
        text.detach()  # the binary input (standard input too) is its opener's to close


def _record_line(cells: list[str], header: list[str], columns: list[tuple[int, str, str]]) -> bytes:
    """The JSON line of one record, or the line of an invalid row (:func:`invalid_row`) saying why."""
    if len(cells) > len(header) and any(cells[len(header) :]):
        return invalid_row(f"the row has {len(cells)} cells where the header names {len(header)}")
    if any(_UNDECODED.search(cell) for cell in cells):
        return invalid_row("not valid UTF-8")
    return _json_line({field: read_cell(cells[i], kind) for i, field, kind in columns if i < len(cells)})


def _blank_lines(count: int) -> Iterator[bytes]:
    # Blank lines are skipped by the row loop but counted: they keep a row on its own line number.
    for _ in range(count):
        yield b"\n"


def _next_record(reader: Any, name: str) -> list[str] | None:
    try:
        return next(reader, None)
    except csv.Error as exc:
        raise InputError(f"not a valid CSV row: {exc}", name, reader.line_num) from None


def _header(reader: Any, name: str) -> list[str]:
    """The header's column names; a name left empty (a spreadsheet's trailing commas) is a column not read."""
    header = _next_record(reader, name)
    if not header:
        raise InputError("the file has no header row naming its columns", name, 1)
    header = [read_csv_text_cell(field) for field in header]  # as --output x.csv wrote them
    if any(_UNDECODED.search(field) for field in header):
        raise InputError("the header row is not valid UTF-8", name, 1)
    repeated = _first_repeated(filter(None, header))
    if repeated is not None:
        raise InputError(f"the column {repeated!r} appears twice in the header; {_AMBIGUOUS}", name, 1)
    return header


_AMBIGUOUS = "which one is meant is ambiguous"


def _first_repeated(names: Iterable[str]) -> str | None:
    """The first name given a second time, or ``None``."""
    seen: set[str] = set()
    for column in names:
        if column in seen:
            return column
        seen.add(column)
    return None


def parquet_lines(path: Path, name: str) -> Iterator[bytes]:
    """One JSON line per row of a Parquet file, a batch at a time (pyarrow; the ``parquet`` extra).

    Values JSON has no form for (dates, decimals, bytes) are written as their text. A column named
    twice, or a page that cannot be read, ends the file with an :class:`InputError`.
    """
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise InputError('reading Parquet needs pyarrow: pip install "answer-eval-haystack[parquet]"', name) from None
    try:
        table = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises its own error types for a file that is not Parquet
        raise InputError(f"not a Parquet file: {exc}", name) from None
    repeated = _first_repeated(table.schema_arrow.names)
    if repeated is not None:
        raise InputError(f"the column {repeated!r} appears twice; {_AMBIGUOUS}", name)
    number = 0
    with contextlib.closing(table):
        try:
            for batch in table.iter_batches(batch_size=_PARQUET_BATCH):
                for row in batch.to_pylist():
                    number += 1
                    yield _json_line(row)
        except Exception as exc:  # noqa: BLE001 - a damaged page or an unreadable value, in pyarrow's own types
            raise InputError(f"cannot read the Parquet file after row {number:,}: {exc}", name) from None
