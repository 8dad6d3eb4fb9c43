"""What the converters of the formats that are not JSONL share: a text cell's value, a row's JSON line, the stream.

Each converter (:mod:`~answer_eval.inputs.json_array`, :mod:`~answer_eval.inputs.csv_rows`,
:mod:`~answer_eval.inputs.parquet_rows`) yields one JSON line per row, or an invalid row
(:func:`answer_eval.inputs.jsonl.invalid_row`) for a row it cannot read, and, where lines of its
file hold no row of their own, a blank line or a :func:`~answer_eval.inputs.jsonl.line_gap` marker
standing for them (read as such only from a :class:`LineStream`); :class:`LineStream` hands them to
the row loop as a forward-only binary file. A converter checks a row's size against
``--max-line-bytes`` before it builds the row (CSV and JSON arrays count its bytes as they read
them; Parquet reads its cells' sizes from Arrow), so a row over the limit never becomes Python
objects; it is said as soon as it passes the limit, and its rest is read only if the row loop
reads on (a run that stops at it reads no more). The row loop checks the line again, as it checks
a JSONL line.

A flat format has text where JSONL has types, so a text cell (a CSV or TSV cell, a Parquet string)
is read by :func:`read_cell` by the kind of field it is in:
a JSON list or object written into a cell, ``TRUE`` from a spreadsheet, and the Python list
pandas writes for a list (``['Paris', 'Lyon']``: ``DataFrame.to_csv`` writes ``str(list)``) are
read back as those values. The Python list is read by a parser of its own (flat lists of string
and number literals only: no ``eval``, no ``ast``, no recursion), linear in the cell's length.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from answer_eval.engine.output_files import read_csv_text_cell
from answer_eval.errors import DuplicateKeyError
from answer_eval.inputs.jsonl import decode_json, invalid_row

__all__ = ["AMBIGUOUS", "OTHER", "TEXT", "VALUE", "CellError", "LineStream", "first_repeated", "json_line", "read_cell"]


AMBIGUOUS = "which one is meant is ambiguous"


class LineStream:
    """JSON lines made one at a time by a converter, read as a forward-only binary file."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self._line = b""
        self._at = 0  # the next byte of _line
        self._offset = 0

    def readline(self, size: int = -1, /) -> bytes:
        """The next line (at most ``size`` bytes of it; the rest comes with the next call), ``b""`` at the end."""
        if self._at >= len(self._line):
            self._line, self._at = b"", 0  # let a long line go before the next is made
            self._line = next(self._lines, b"")
        end = len(self._line) if size < 0 else min(len(self._line), self._at + size)
        # The whole line is handed over as it is (no copy); a piece of it is sliced.
        piece = self._line if self._at == 0 and end == len(self._line) else self._line[self._at : end]
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

    def close(self) -> None:
        """Stop the converter (its ``finally`` blocks run now, while the file it reads is still open)."""
        close = getattr(self._lines, "close", None)
        if close is not None:
            close()


def json_line(row: Any) -> bytes:
    """The JSON line of one converted row (UTF-8, as in a JSONL file), or an invalid row when it cannot be written.

    UTF-8 as in a JSONL file, so ``--max-line-bytes`` counts the bytes a JSONL file would hold; a
    lone surrogate (which no valid UTF-8 decodes to, and which a CSV reader makes of bytes that
    are not UTF-8) is left as bytes the row loop refuses as bad UTF-8.
    """
    try:
        text = json.dumps(row, ensure_ascii=False, default=_as_text)
    except RecursionError:
        return invalid_row("not valid JSON here: arrays or objects nested too deeply to read")
    except ValueError as exc:  # an integer of more digits than Python writes
        return invalid_row(f"a value cannot be written as JSON: {exc}")
    return text.encode("utf-8", "surrogatepass") + b"\n"


def _as_text(value: Any) -> str:
    # Values JSON has no form for: bytes as their UTF-8 text, dates and decimals as theirs.
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def first_repeated(names: Iterable[str]) -> str | None:
    """The first name given a second time, or ``None``."""
    seen: set[str] = set()
    for column in names:
        if column in seen:
            return column
        seen.add(column)
    return None


TEXT, VALUE, OTHER = "text", "value", "other"
"""The kinds of field :func:`read_cell` tells apart: text (a prediction, a question), a value or a list
of values (the acceptable answers), and any other column."""


class CellError(ValueError):
    """A cell that cannot be read as what it says it is (a list that does not parse, JSON nested too deeply).

    The row it is in is an invalid row (``--skip-invalid`` skips it), named by its line.
    """


# A Python string literal as ``repr`` writes it (single or double quotes, backslash escapes; no
# prefix, no triple quotes), or a number as ``repr`` writes an int or a float (nan and inf too).
_STRING = r"""'[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*\""""
_NUMBER = r"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)"  # one way to split digits: linear
_ITEM = re.compile(rf"\s*({_STRING}|{_NUMBER})\s*(,|\])", re.DOTALL)
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}\n]*\}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "v": "\v",
    "0": "\0",
    "\n": "",
}


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[code]
    if code[0] in "xuU":
        value = int(code[1:], 16)
        if value > 0x10FFFF:
            raise CellError(f"the escape \\{code} is no character")
        return chr(value)
    if code[0].isdigit():
        return chr(int(code, 8))
    if code[0] == "N":
        import unicodedata

        try:
            return unicodedata.lookup(code[2:-1])
        except KeyError:
            raise CellError(f"the escape \\{code} names no character") from None
    return "\\" + code  # Python keeps an unknown escape as it is


def _literal(token: str) -> str | int | float:
    if token[0] in "'\"":
        body = token[1:-1]
        return _ESCAPE.sub(_unescape, body) if "\\" in body else body
    number = token.lstrip("+-")
    if number.isdigit():
        return int(token)  # over 4,300 digits: a ValueError, read as an unreadable list
    return float(token)


def python_list(cell: str) -> list[str | int | float]:
    r"""The list a Python list literal of strings and numbers stands for (what ``str(list)`` writes).

    Only a flat list of string and number literals is read (``['Paris', "it's", 3, 2.5, nan]``);
    anything else (a nested list, a name, a call such as numpy's ``np.float64(1.0)``, numpy's
    ``['a' 'b']`` without commas) raises :class:`CellError`. Never evaluates anything.

    >>> python_list("['Paris', \"it's\", 3, -2.5]")
    ['Paris', "it's", 3, -2.5]
    """
    text = cell.strip()
    if not text.startswith("[") or not text.endswith("]"):
        raise CellError("not a list")
    if not text[1:-1].strip():
        return []
    items: list[str | int | float] = []
    position, end = 1, len(text)
    while position < end:
        match = _ITEM.match(text, position)
        if match is None:
            raise CellError(f"not a list of strings and numbers (character {position + 1})")
        try:
            items.append(_literal(match.group(1)))
        except ValueError as exc:
            raise CellError(f"an item cannot be read ({exc})") from None
        position = match.end()
        if match.group(2) == "]":
            if position != end:
                raise CellError(f"text after the list's end (character {position + 1})")
            return items
        if text[position:].strip() == "]":  # a trailing comma, as Python allows
            return items
    raise CellError("the list is not closed")


def _json(cell: str) -> Any:
    try:
        return decode_json(cell)
    except DuplicateKeyError as exc:  # as a JSONL line is: which value the writer meant is unknowable
        raise CellError(f"a JSON object gives the key {exc.key!r} twice") from None
    except RecursionError:
        raise CellError("a JSON value nested too deeply to read") from None
    except ValueError:
        return None


def _looks_like_a_list(cell: str) -> bool:
    return cell.startswith("[") and cell.rstrip().endswith("]")


def read_cell(cell: str, kind: str = OTHER, *, csv: bool = True) -> Any:
    """The value of one CSV or TSV cell (or Parquet string) in a field of ``kind`` (:data:`TEXT`, :data:`VALUE`...).

    - An empty CSV cell is a missing value (``None``): a CSV cannot tell it from an empty text.
    - A CSV cell ``--output x.csv`` marked with a leading apostrophe (text a spreadsheet would
      run, or that would read as JSON or a boolean) is that text, without the apostrophe.
    - A JSON object or a JSON array is that value: what ``--output x.csv`` writes for a pipeline
      output or a list of answers (``["12400", "12,400"]``). In a text field only an array of
      strings is (``[1]`` is a citation mark, left as text).
    - A Python list of strings and numbers, as pandas writes a list (``['Paris', 'Lyon']``), is
      that list (:func:`python_list`); in a text field only a list of strings is.
    - In a value field, a cell that looks like a list (``[`` ... ``]``) but is neither raises
      :class:`CellError` (``[Paris, Lyon]``, numpy's ``['a' 'b']``): read as text it would be a
      wrong answer no one asked for. So does JSON nested too deeply to read, in any field.
    - In other fields (a label, a verdict column), ``true`` and ``false`` in any case (``TRUE``,
      as a spreadsheet writes it) are booleans; in text and value fields they stay words.
    - Anything else is the text itself, numbers included (``3.5`` is read as a number label by the
      package's number reading, as the text "3.5" always is).

    ``csv=False`` reads a Parquet string: an empty string stays ``""`` (Parquet has nulls of its
    own) and an apostrophe is text (only the CSV writer marks cells).

    >>> read_cell('["a", "b"]', VALUE), read_cell("['a', 'b']", VALUE), read_cell("TRUE"), read_cell("[1]", TEXT)
    (['a', 'b'], ['a', 'b'], True, '[1]')
    """
    if not cell:
        return None if csv else cell
    first = cell[0]
    if first == "'" and csv:
        return read_csv_text_cell(cell)
    if first in "[{":
        value = _json(cell)
        if isinstance(value, dict) or (
            isinstance(value, list) and (kind != TEXT or all(isinstance(item, str) for item in value))
        ):
            return value
        if value is None and _looks_like_a_list(cell):
            return _listed(cell, kind)
    if kind == OTHER and len(cell) in (4, 5):
        folded = cell.casefold()
        if folded in ("true", "false"):
            return folded == "true"
    return cell


def _listed(cell: str, kind: str) -> Any:
    """A cell that looks like a list and is not JSON: a Python list, text, or (in a value field) a :class:`CellError`.

    The kind of field decides: a list no one can read is an error only where a list is expected.
    """
    try:
        items = python_list(cell)
    except CellError as exc:
        if kind != VALUE:
            return cell  # "[1] Paris", "[citation needed]": text
        raise CellError(
            f"looks like a list but is neither JSON nor a Python list of strings and numbers ({exc}); "
            "write lists as JSON (json.dumps), or, from numpy, convert arrays with .tolist() first"
        ) from None
    if kind == TEXT and not all(isinstance(item, str) for item in items):
        return cell
    return items
