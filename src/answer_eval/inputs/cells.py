"""The value of one text cell of a flat format (a CSV or TSV cell, a Parquet string): :func:`read_cell`.

A flat format has text where JSONL has types, so a cell is read by the kind of field it is in:
a JSON list or object written into a cell, ``TRUE`` from a spreadsheet, and the Python list
pandas writes for a list (``['Paris', 'Lyon']``: ``DataFrame.to_csv`` writes ``str(list)``) are
read back as those values. The Python list is read by a parser of its own (flat lists of string
and number literals only: no ``eval``, no ``ast``, no recursion), linear in the cell's length.
"""

from __future__ import annotations

import re
from typing import Any

from answer_eval.engine.files import decode_json
from answer_eval.engine.output_files import read_csv_text_cell
from answer_eval.errors import DuplicateKeyError

__all__ = ["OTHER", "TEXT", "VALUE", "CellError", "python_list", "read_cell"]

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
