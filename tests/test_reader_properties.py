"""Property tests of the readers that find rows in a byte stream themselves: the JSON-array scanner and the CSV records.

Each must agree with the standard library on any input: the JSON-array scanner gives, for every
item, the bytes ``json`` reads as that item (compact, pretty-printed, any white space, any
string); the CSV reader splits records where the ``csv`` module does (quoted cells holding line
ends, doubled quotes, quotes inside unquoted cells) and names each row by the file's own line,
whatever size its chunks are read in.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from answer_eval.inputs import csv_rows, json_array
from answer_eval.inputs.csv_rows import table_lines
from answer_eval.inputs.json_array import json_array_lines
from answer_eval.inputs.jsonl import LineGap, parse_jsonl_line

_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


class _Slow(io.RawIOBase):
    """A binary stream that hands over at most ``size`` bytes a read: every chunk boundary gets crossed."""

    def __init__(self, data: bytes, size: int) -> None:
        super().__init__()
        self._data, self._at, self._size = data, 0, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        piece = self._data[self._at : self._at + min(len(buffer), self._size)]
        buffer[: len(piece)] = piece
        self._at += len(piece)
        return len(piece)


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.dictionaries(_TEXT, _VALUES, max_size=4), max_size=6),
    indent=st.sampled_from([None, 0, 2]),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_the_json_array_scanner_gives_each_item_as_json_reads_it(items, indent, chunk):
    data = json.dumps(items, indent=indent, ensure_ascii=False).encode("utf-8")
    original = json_array._CHUNK
    json_array._CHUNK = chunk  # items cross chunk boundaries at every byte
    try:
        lines = list(json_array_lines(io.BufferedReader(_Slow(data, chunk), buffer_size=chunk), "x", 1 << 20))
    finally:
        json_array._CHUNK = original
    assert [json.loads(line) for line in lines] == items
    assert all(line.endswith(b"\n") and line.count(b"\n") == 1 for line in lines)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.text(st.sampled_from('ab,"\n\r \t;'), max_size=6), min_size=2, max_size=2).filter(
            lambda row: not row[1].endswith("\r")
        ),  # unquoted, "x\r" then "\n" reads as a CRLF
        max_size=6,
    ),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL, csv.QUOTE_NONNUMERIC]),
    ending=st.sampled_from(["\n", "\r\n"]),
    chunk=st.integers(min_value=1, max_value=64),
)
def test_csv_rows_read_back_as_the_csv_module_wrote_them(rows, quoting, ending, chunk):
    handle = io.StringIO(newline="")
    writer = csv.writer(handle, quoting=quoting, lineterminator=ending)
    writer.writerow(["a", "b"])
    header = len(handle.getvalue())
    writer.writerows(rows)
    text = handle.getvalue()
    original = csv_rows._READ_SIZE
    csv_rows._READ_SIZE = chunk
    try:
        stream = io.BufferedReader(_Slow(text.encode(), chunk))
        lines = list(table_lines(stream, ",", {"a": "text", "b": "text"}, "x", 1 << 20))
    finally:
        csv_rows._READ_SIZE = original
    read, number = [], 0
    for line in lines:  # as the row loop reads them: a marker stands for the lines of a record over several
        number += 1
        parsed = parse_jsonl_line(line, number, "x", gaps=True)
        if isinstance(parsed, LineGap):
            number += parsed.lines - 1
        elif parsed is not None:
            read.append((number, parsed))
    # A row is named by the line it starts on, counting line feeds only (a carriage return in a
    # cell, quoted or not, is text: the csv module itself would end the record there).
    starts, line = [], 2
    for record in _records(text[header:], ending):
        starts.append(line)
        line += record.count("\n")
    wanted = [
        (start, {"a": cells[0] or None, "b": cells[1] or None}) for start, cells in zip(starts, rows, strict=True)
    ]
    assert read == wanted


def _records(text: str, ending: str) -> list[str]:
    """The records of ``text`` as written by ``csv.writer``: each ends at a line end outside quotes."""
    records, current, quoted = [], "", False
    for character in text:
        current += character
        if character == '"':
            quoted = not quoted
        elif not quoted and current.endswith(ending):
            records.append(current)
            current = ""
    return records
