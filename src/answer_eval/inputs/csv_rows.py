"""CSV and TSV files read record by record, each record's bytes bounded before it is built.

A record (a row, over one line or several) is found by following its quotes as the standard
library's reader does (:class:`_Quotes`: a few byte searches a line, never a character at a time),
then handed whole to that reader, which splits its cells. A record is read with a byte limit: one
longer than ``--max-line-bytes`` is an invalid row naming its line as soon as it passes the limit,
and its rest is read and dropped (:class:`_Records`) only if the run reads on (without
``--skip-invalid`` it stops there), so memory is one record at most, whatever a line or a cell
holds (``/dev/zero`` included), and time is linear in the file's size.

Line numbers are the file's own lines, counted by line feeds (the lines of a record over several,
however many, are passed on as one :func:`~answer_eval.inputs.jsonl.line_gap` marker): a carriage
return alone is text of its cell, quoted or not (Python's csv writer, and so pandas, leaves one
unquoted), never a line. A file whose lines end with carriage returns only (the old Mac form,
Excel's "CSV (Macintosh)") is read as such. The delimiter of a ``.csv`` file is told from its
header row (``,``, ``;``, a tab or ``|``: spreadsheets in many languages write ``;``), unless one is
given (``--delimiter``).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import IO, Any

from answer_eval.engine.output_files import read_csv_text_cell
from answer_eval.errors import InputError
from answer_eval.inputs.converted_rows import AMBIGUOUS, OTHER, CellError, first_repeated, json_line, read_cell
from answer_eval.inputs.jsonl import invalid_row, line_gap

__all__ = ["table_lines"]

DELIMITERS = (",", ";", "\t", "|")
"""The delimiters told from a header row, in the order a tie is settled."""

_READ_SIZE = 1 << 16  # the file is read this many bytes at a time
_HOLD = 1 << 20  # after a record larger than this, the csv reader (whose buffer grew to its largest cell) is made anew
_SNIFF = 1 << 16
_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8
_QUOTED_TEXT = re.compile(rb'"[^"]*"')
_BARE_CR = re.compile(r"\r(?!\n)")
_CR_LINE_END = re.compile(rb"\r[^\n]")
_STAND_INS = "".join(map(chr, range(0xE000, 0xE000 + 64)))  # private-use characters, one not in the record


def sniff_delimiter(head: bytes) -> str:
    """The delimiter told from a CSV file's first line: the one of :data:`DELIMITERS` most often outside quotes.

    A header naming one column (no delimiter in it) is read with ``,``.
    """
    first = head.split(b"\n", 1)[0]
    bare = _QUOTED_TEXT.sub(b"", first)
    counts = [(bare.count(delimiter.encode("ascii")), -rank) for rank, delimiter in enumerate(DELIMITERS)]
    best = max(counts)
    return DELIMITERS[-best[1]] if best[0] else ","


class _Quotes:
    """Where a CSV record ends: the reader's rule (a cell quoted from its first character, doubled quotes).

    A quote opens a quoted cell only at the start of a cell; inside one, a doubled quote is a quote
    and a single one closes it. The record ends at a line feed outside quotes.
    """

    _START, _PLAIN, _QUOTED, _QUOTE_SEEN = range(4)

    def __init__(self, delimiter: str) -> None:
        self._delimiter = delimiter.encode("ascii")
        self._opening = self._delimiter + b'"'
        self._state = self._START

    def end(self, data: bytes, at: int) -> int | None:
        """The position after the line feed that ends the record in ``data`` from ``at``; ``None``: not in ``data``.

        The state is kept for the next piece of the same record. Every search stops at the next
        line feed, so a record costs the length of its lines, whatever follows.
        """
        state, size = self._state, len(data)
        while at < size:
            if state == self._QUOTED:
                found = data.find(b'"', at)
                if found < 0:
                    break
                state, at = self._QUOTE_SEEN, found + 1
            elif state == self._QUOTE_SEEN:
                state, at = (self._QUOTED, at + 1) if data[at] == 0x22 else (self._PLAIN, at)
            elif state == self._START and data[at] == 0x22:
                state, at = self._QUOTED, at + 1
            else:
                line_end = data.find(b"\n", at)
                opening = data.find(self._opening, at, size if line_end < 0 else line_end)
                if opening >= 0:
                    state, at = self._QUOTED, opening + len(self._opening)
                elif line_end >= 0:
                    self._state = self._START
                    return line_end + 1
                else:
                    state, at = (self._START if data.endswith(self._delimiter) else self._PLAIN), size
        self._state = state
        return None


def _whole_record(delimiter: str) -> re.Pattern[bytes]:
    """A CSV record ending with its line feed, cells quoted or not, as the csv module reads them (strict).

    Each cell is told by its first byte (a quote: quoted; the delimiter or a line feed: empty;
    anything else: unquoted), so the pattern never backtracks more than a cell.
    """
    mark = re.escape(delimiter.encode("ascii"))
    cell = rb'(?:"[^"]*(?:""[^"]*)*"|[^"' + mark + rb"\n][^" + mark + rb"\n]*|)"
    return re.compile(cell + rb"(?:" + mark + cell + rb")*\n")


_OVER = object()  # a record that went over the limit (its rest is dropped by drop_rest)


class _Records:
    """A CSV file's records as bytes (one row each, over one line or several), at most ``limit`` bytes each.

    :meth:`next` gives the next record, or :data:`_OVER` as soon as one passes the limit (its
    rest is then read and dropped by :meth:`drop_rest`, keeping nothing). ``lines`` counts the
    line feeds read: the file's own lines.
    """

    def __init__(self, binary: IO[bytes], limit: int, delimiter: str) -> None:
        self._read = getattr(binary, "read1", binary.read)
        self.limit = limit
        self._delimiter = delimiter
        self._data, self._at = b"", 0
        self._quotes = _Quotes(delimiter)
        self.lines = 0
        self.size = 0  # bytes of the last record read
        self._unfinished = False  # a record over the limit whose rest is still to be dropped
        self._whole = _whole_record(delimiter)

    def _more(self) -> bool:
        if self._at >= len(self._data):
            self._data, self._at = self._read(_READ_SIZE), 0
        return bool(self._data)

    def next(self) -> bytes | object | None:
        """The next record, line end included; :data:`_OVER` for one over the limit; ``None`` at the end."""
        if not self._more():
            return None
        whole = self._whole.match(self._data, self._at)
        if whole is not None:  # the common case: a record whose end is in the chunk read, found in one search
            record, self._at = whole[0], whole.end()
            self.lines += record.count(b"\n")
            self.size = len(record)
            if self.size - (2 if record.endswith(b"\r\n") else 1) > self.limit:
                self._unfinished = False
                return _OVER
            return record
        pieces: list[bytes] = []
        self.size = 0
        self._quotes = _Quotes(self._delimiter)
        while self._more():
            end = self._quotes.end(self._data, self._at)
            stop = len(self._data) if end is None else end
            self.lines += self._data.count(b"\n", self._at, stop)
            pieces.append(self._data[self._at : stop])
            self.size += stop - self._at
            self._at = stop
            content = self.size - (0 if end is None else 2 if pieces[-1].endswith(b"\r\n") else 1)
            if content > self.limit:
                self._unfinished = end is None
                return _OVER
            if end is not None:
                break
        return b"".join(pieces) if pieces else None

    def drop_rest(self) -> None:
        """Read the rest of a record that went over the limit, keeping nothing of it."""
        while self._unfinished and self._more():
            end = self._quotes.end(self._data, self._at)
            stop = len(self._data) if end is None else end
            self.lines += self._data.count(b"\n", self._at, stop)
            self.size += stop - self._at
            self._at = stop
            if end is not None:
                break
        self._unfinished = False


class _Feeder:
    """What the csv reader reads: the one record put in it (so each ``next(reader)`` parses exactly that record)."""

    def __init__(self) -> None:
        self.text: str | None = None

    def __iter__(self) -> _Feeder:
        return self

    def __next__(self) -> str:
        text, self.text = self.text, None
        if text is None:
            raise StopIteration
        return text


class _CarriageReturnLines(io.RawIOBase):
    """A file whose lines end with carriage returns only, read as if they ended with line feeds."""

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._inner.read(len(buffer))
        buffer[: len(data)] = data.replace(b"\r", b"\n")
        return len(data)


def _peek(binary: IO[bytes]) -> bytes:
    peek = getattr(binary, "peek", None)
    return b"" if peek is None else bytes(peek(_SNIFF)[:_SNIFF])


def table_lines(
    binary: IO[bytes], delimiter: str | None, kinds: dict[str, str], name: str, max_line_bytes: int
) -> Iterator[bytes]:
    """One JSON line per record of a CSV (or, with a tab ``delimiter``, TSV) file with a header row.

    ``delimiter`` ``None`` tells it from the header row (:func:`sniff_delimiter`). ``kinds`` maps a
    field to how its cells are read (:func:`read_cell`). A blank line, or a
    :func:`~answer_eval.inputs.jsonl.line_gap` marker for more than one, fills in for the header and
    for records spanning lines, so that every row keeps the file's line number. A record longer
    than ``max_line_bytes``, with more (non-empty) cells than the header, with bytes that are not
    UTF-8 or a cell that cannot be read is an invalid row (``--skip-invalid`` skips it); a header
    naming a column twice and a malformed record (a stray quote) end the file with an
    :class:`InputError` naming the line. Columns whose header cell is empty are not read.
    """
    head = _peek(binary)
    if b"\n" not in head and _CR_LINE_END.search(head) is not None:  # a CR seen to end a line: not a CRLF
        binary = io.BufferedReader(_CarriageReturnLines(binary))
    told = delimiter is None
    delimiter = sniff_delimiter(head) if delimiter is None else delimiter
    records = _Records(binary, max_line_bytes, delimiter)
    feeder = _Feeder()
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, max_line_bytes + 2))  # the record's limit is the one that binds
    try:
        reader = csv.reader(feeder, delimiter=delimiter, strict=True)  # a stray quote is an error, not a merged row
        header = _header(reader, feeder, records, name)
        emitted = records.lines  # the header's lines: line numbers stay the file's own
        yield from _blank_lines(emitted)
        columns = [(i, field, kinds.get(field, OTHER)) for i, field in enumerate(header) if field]
        split = _split_at(delimiter, told)
        while True:
            start = records.lines + 1
            record = records.next()
            if record is None:
                return
            over = record is _OVER
            if over:
                line = invalid_row(_too_long(max_line_bytes))
            else:
                text = record.decode("utf-8", "surrogateescape")  # type: ignore[attr-defined]
                del record  # the bytes go before the cells are made
                cells = _cells(reader, feeder, text, name, start)
                del text
                if not cells:
                    continue
                line = _record_line(cells, header, columns, split)
                del cells  # the row's cells go before its line is read
            yield from _blank_lines(start - 1 - emitted)
            emitted = start
            yield line
            del line
            if over:  # said first, then skipped: a run without --skip-invalid stops at once
                records.drop_rest()
            if records.size > _HOLD:  # the reader keeps a buffer as large as the largest cell it read: start afresh
                reader = csv.reader(feeder, delimiter=delimiter, strict=True)
    finally:
        csv.field_size_limit(limit)


def _cells(reader: Any, feeder: _Feeder, text: str, name: str, line: int) -> list[str]:
    """The cells of one record's text (a byte order mark dropped on line 1).

    A carriage return not followed by a line feed is text of its cell: Python's csv writer (and so
    pandas) leaves one unquoted, and the csv module would end the record there.
    """
    text = text.removeprefix("\ufeff") if line == 1 else text
    stand_in = None
    if _BARE_CR.search(text) is not None:
        stand_in = next((character for character in _STAND_INS if character not in text), None)
        if stand_in is None:  # a record holding every stand-in: made to be refused
            raise InputError("not a valid CSV row: a carriage return alone outside quotes", name, line)
        text = _BARE_CR.sub(stand_in, text)
    feeder.text = text
    try:
        cells: list[str] = next(reader, [])
    except csv.Error as exc:
        raise InputError(f"not a valid CSV row: {exc}", name, line) from None
    finally:
        feeder.text = None
    if stand_in is not None:
        cells = [cell.replace(stand_in, "\r") for cell in cells]
    return cells


def _too_long(limit: int) -> str:
    return f"the row is longer than {limit:,} bytes, the limit (raise it with --max-line-bytes)"


def _split_at(delimiter: str, told: bool) -> str:
    how = ", told from the header row" if told else ""
    return f"cells split at {delimiter!r}{how}; give --delimiter if the file uses another"


def _record_line(cells: list[str], header: list[str], columns: list[tuple[int, str, str]], split: str) -> bytes:
    """The JSON line of one record, or the line of an invalid row (:func:`invalid_row`) saying why."""
    if len(cells) > len(header) and any(cells[len(header) :]):
        return invalid_row(f"the row has {len(cells)} cells where the header names {len(header)} ({split})")
    if any(_UNDECODED.search(cell) for cell in cells):
        return invalid_row("not valid UTF-8")
    row: dict[str, Any] = {}
    for i, field, kind in columns:
        if i < len(cells):
            try:
                row[field] = read_cell(cells[i], kind)
            except CellError as exc:
                return invalid_row(f"field {field!r}: {exc}")
    return json_line(row)


def _blank_lines(count: int) -> Iterator[bytes]:
    # Lines that hold no row of their own are counted by the row loop, so a row keeps its own line
    # number: one marker stands for all of them (a quoted cell of millions of line feeds costs one line).
    if count > 0:
        yield line_gap(count)


def _header(reader: Any, feeder: _Feeder, records: _Records, name: str) -> list[str]:
    """The header's column names; a name left empty (a spreadsheet's trailing commas) is a column not read."""
    record = records.next()
    if record is _OVER:
        raise InputError(
            f"the header row is longer than {records.limit:,} bytes, the limit (is this a CSV file?)", name, 1
        )
    header = (
        _cells(reader, feeder, record.decode("utf-8", "surrogateescape"), name, 1) if isinstance(record, bytes) else []
    )
    if not header:
        raise InputError("the file has no header row naming its columns", name, 1)
    header = [read_csv_text_cell(field) for field in header]  # as --output x.csv wrote them
    if any(_UNDECODED.search(field) for field in header):
        raise InputError("the header row is not valid UTF-8", name, 1)
    repeated = first_repeated(filter(None, header))
    if repeated is not None:
        raise InputError(f"the column {repeated!r} appears twice in the header; {AMBIGUOUS}", name, 1)
    return header
