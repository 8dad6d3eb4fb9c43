"""A JSON array of rows read item by item: each item's own bytes become one JSON line for the row loop.

The array is scanned, not parsed: the scanner finds where each item starts and ends (Python's
JSON scanner for an item within the chunk read, at C speed; else strings, escapes and brackets,
a few regular expressions a chunk at a time) and hands the item's bytes to the row loop, which
reads them as it reads a JSONL line, with every rule of a JSONL line (a key given twice, a number
too long, nesting too deep to read, the line limit). So:

- memory is one item, at most ``max_line_bytes`` of it: an item over the limit becomes an invalid
  row naming it as soon as it passes the limit (a run that stops there reads no more of it, so an
  item that never ends stops it at once), and the scanner moves on past it dropping its bytes;
- nothing recurses on the item's depth (the scanner keeps a bracket stack of bytes, and only the
  first :data:`_STACK_CAP` levels of it), and time is linear in the file's size;
- a file that is not one JSON array of values (a missing comma, a bracket that closes another,
  a file cut short) ends the run with an :class:`InputError` naming the item it broke after.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from typing import IO

from answer_eval.errors import InputError
from answer_eval.inputs.jsonl import invalid_row

__all__ = ["json_array_lines"]

_CHUNK = 1 << 16
_BOM = b"\xef\xbb\xbf"
_STACK_CAP = 1 << 16  # bracket levels whose kind is checked; deeper ones are counted (such an item is refused anyway)

# Outside strings, up to the next bracket or the next string that does not end in this chunk.
_SKIP = re.compile(rb'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*', re.DOTALL)
# Inside a string, up to its closing quote (or a backslash the chunk ends on, or the chunk's end).
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_SCALAR = re.compile(rb'[^,\]\[{}" \t\n\r]*')
_SPACE = re.compile(rb"[ \t\n\r]*")
# A string, or a run of line breaks (which outside strings are white space).
_STRING_OR_BREAKS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\r\n]+', re.DOTALL)
_SCAN = json.JSONDecoder().raw_decode
_NEXT_ITEM = re.compile(rb"[ \t\n\r]*,[ \t\n\r]*(?=[^ \t\n\r\]])")
_QUOTE, _BACKSLASH, _COMMA, _CLOSE = ord('"'), ord("\\"), ord(","), ord("]")
_OPEN = frozenset(b"[{")
_MATCHING = {ord("]"): ord("["), ord("}"): ord("{")}


def _one_line(pieces: list[bytes]) -> bytes:
    """The item (its pieces) as one JSON line, its line end added: line breaks outside strings become spaces.

    A raw line break inside a string is not JSON (and would split the line): such an item is an
    invalid row. An item on one line is copied once.
    """
    if not any(b"\n" in piece or b"\r" in piece for piece in pieces):
        pieces.append(b"\n")
        return b"".join(pieces)
    item = _STRING_OR_BREAKS.sub(lambda match: match[0] if match[0][:1] == b'"' else b" ", b"".join(pieces))
    if b"\n" in item or b"\r" in item:
        return invalid_row("not valid JSON: a line break inside a string (write it as \\n)")
    return item + b"\n"


class _Scanner:
    """The state of one array being scanned; :meth:`lines` yields one JSON line per item."""

    def __init__(self, binary: IO[bytes], name: str, max_line_bytes: int) -> None:
        self.read = binary.read
        self.name = name
        self.limit = max_line_bytes
        self.items = 0
        self._text, self._text_of = "", b""

    def _broken(self, why: str) -> InputError:
        return InputError(f"not a valid JSON array after item {self.items:,}: {why}", self.name)

    def lines(self) -> Iterator[bytes]:
        """One line per item: its bytes (one line, a line end added), or an invalid row saying why it is not read."""
        buffer = self.read(_CHUNK)
        if buffer.startswith(_BOM):
            buffer = buffer[len(_BOM) :]
        buffer, position = self._space(buffer, 0)
        if buffer[position : position + 1] != b"[":
            raise self._broken("the file does not start with '['")
        buffer, position = self._space(buffer, position + 1)
        if not buffer:
            raise self._broken("the file ends inside the array (cut short?)")
        while buffer[position] != _CLOSE:
            whole = self._whole_item(buffer, position)
            if whole is None:
                buffer, position, line = yield from self._item(buffer, position)
            else:
                position, line = whole
            self.items += 1
            if line is not None:
                yield line
            between = _NEXT_ITEM.match(buffer, position)  # the common case: a comma, then the next item
            if between is not None:
                position = between.end()
                continue
            buffer, position = self._space(buffer, position)
            if not buffer:
                raise self._broken("the file ends inside the array (cut short?)")
            if buffer[position] == _CLOSE:
                break
            if buffer[position] != _COMMA:
                raise self._broken(f"expected ',' or ']', found {bytes(buffer[position : position + 1])!r}")
            buffer, position = self._space(buffer, position + 1)
            if not buffer:
                raise self._broken("the file ends inside the array (cut short?)")
            if buffer[position] == _CLOSE:
                raise self._broken("a comma before ']'")
        buffer, position = self._space(buffer, position + 1)
        if buffer:
            why = f"not a valid JSON array: data after its closing ']' (after item {self.items:,})"
            raise InputError(why, self.name)

    def _whole_item(self, buffer: bytes, position: int) -> tuple[int, bytes] | None:
        """The common case, at C speed: an item that is valid JSON and ends inside this chunk (its end and line).

        Python's own JSON scanner finds its end (on the chunk read as Latin-1, so that its
        positions are the bytes'); anything else (an item running into the next chunk, too deep,
        not JSON) is left to :meth:`_item`.
        """
        if self._text_of is not buffer:
            self._text, self._text_of = buffer.decode("latin-1"), buffer
        try:
            end = _SCAN(self._text, position)[1]
        except (ValueError, RecursionError):
            return None
        if end >= len(buffer) or end - position > self.limit:
            return None
        return end, _one_line([buffer[position:end]])

    def _space(self, buffer: bytes, position: int) -> tuple[bytes, int]:
        """Skip white space, reading on; ``(b"", 0)`` at the end of the file."""
        while True:
            position = _SPACE.match(buffer, position).end()  # type: ignore[union-attr]
            if position < len(buffer):
                return buffer, position
            buffer, position = self.read(_CHUNK), 0
            if not buffer:
                return b"", 0

    def _item(self, buffer: bytes, position: int) -> Generator[bytes, None, tuple[bytes, int, bytes | None]]:
        """Scan the item starting at ``position``: the buffer and position after it, and its line.

        An item over the limit is yielded (as an invalid row) as soon as it passes the limit, and its
        line is then ``None``: its rest is scanned only if the reader goes on (a run that stops at
        it reads no more of an item that never ends).
        """
        kept = _Kept(self.limit)
        start = position
        brackets = _Brackets()
        in_string = escaped = False
        opener = buffer[position]
        scalar = opener not in _OPEN and opener != _QUOTE
        if opener == _QUOTE:
            in_string, position = True, position + 1
        elif scalar and _SCALAR.match(buffer, position).end() == position:  # type: ignore[union-attr]
            raise self._broken(f"expected a value, found {bytes(buffer[position : position + 1])!r}")
        while True:
            if position >= len(buffer):
                if kept.add(buffer[start:]):
                    yield kept.line()
                buffer, position, start = self.read(_CHUNK), 0, 0
                if not buffer:
                    if scalar:
                        break
                    raise self._broken("the file ends inside an item (cut short?)")
            elif escaped:
                position, escaped = position + 1, False
            elif in_string:
                end = _STRING_REST.match(buffer, position).end()  # type: ignore[union-attr]
                if end >= len(buffer):
                    position = end
                elif buffer[end] == _BACKSLASH:  # the chunk ends inside an escape
                    position, escaped = end + 1, True
                else:
                    position, in_string = end + 1, False
                    if opener == _QUOTE:
                        break
            elif scalar:
                position = _SCALAR.match(buffer, position).end()  # type: ignore[union-attr]
                if position < len(buffer):
                    break
            else:
                end = _SKIP.match(buffer, position).end()  # type: ignore[union-attr]
                position = end + 1 if end < len(buffer) else end
                if end >= len(buffer):
                    continue
                if buffer[end] == _QUOTE:
                    in_string = True
                elif brackets.shut(buffer[end], self):
                    break
        if kept.add(buffer[start:position]):
            yield kept.line()
        return buffer, position, None if kept.over else kept.line()


class _Kept:
    """The bytes of one item as they are scanned: kept up to the limit, dropped past it."""

    def __init__(self, limit: int) -> None:
        self.limit, self.pieces, self.size, self.over = limit, list[bytes](), 0, False

    def add(self, piece: bytes) -> bool:
        """Count (and keep, under the limit) the next piece: whether the item just went over the limit."""
        self.size += len(piece)
        if self.over:
            return False
        if self.size > self.limit:
            self.over, self.pieces = True, []
            return True
        self.pieces.append(piece)
        return False

    def line(self) -> bytes:
        """The item's line, or an invalid row when it went over the limit."""
        if self.over:
            return invalid_row(
                f"the item is longer than {self.limit:,} bytes, the limit (raise it with --max-line-bytes)"
            )
        return _one_line(self.pieces)


class _Brackets:
    """The brackets open in an item: a stack of bytes, its kinds checked for the first :data:`_STACK_CAP` levels."""

    def __init__(self) -> None:
        self.stack = bytearray()
        self.deeper = 0  # levels past _STACK_CAP, counted only (such an item is refused as too deep anyway)

    def shut(self, byte: int, scanner: _Scanner) -> bool:
        """Follow an opening or closing bracket; whether it closes the item."""
        if byte in _OPEN:
            if len(self.stack) < _STACK_CAP:
                self.stack.append(byte)
            else:
                self.deeper += 1
            return False
        if self.deeper:
            self.deeper -= 1
            return False
        top = self.stack.pop()
        if top != _MATCHING[byte]:
            wanted = "]" if top == ord("[") else "}"
            raise scanner._broken(f"item {scanner.items + 1:,} has a {chr(byte)!r} where {wanted!r} closes it")
        return not self.stack


def json_array_lines(binary: IO[bytes], name: str, max_line_bytes: int) -> Iterator[bytes]:
    """One JSON line per item of the JSON array in ``binary`` (see the module docstring); ``name`` names it in messages.

    An item longer than ``max_line_bytes`` is an invalid row (:func:`invalid_row`), never held
    whole; the row loop reads the other items as JSONL lines. A file that is not one whole JSON
    array ends with an :class:`InputError` naming the item it broke after.
    """
    yield from _Scanner(binary, name, max_line_bytes).lines()
