"""What the converters of the formats that are not JSONL share: the JSON line of a row, and the stream of them.

Each converter (:mod:`~answer_eval.inputs.json_array`, :mod:`~answer_eval.inputs.csv_rows`,
:mod:`~answer_eval.inputs.parquet_rows`) yields one JSON line per row, or an invalid row
(:func:`answer_eval.engine.files.invalid_row`) for a row it cannot read, and, where lines of its
file hold no row of their own, a blank line or a :func:`~answer_eval.engine.files.line_gap` marker
standing for them (read as such only from a :class:`LineStream`); :class:`LineStream` hands them to
the row loop as a forward-only binary file. A converter checks a row's size against
``--max-line-bytes`` before it builds the row (CSV and JSON arrays count its bytes as they read
them; Parquet reads its cells' sizes from Arrow), so a row over the limit never becomes Python
objects; it is said as soon as it passes the limit, and its rest is read only if the row loop
reads on (a run that stops at it reads no more). The row loop checks the line again, as it checks
a JSONL line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

from answer_eval.engine.files import invalid_row

__all__ = ["AMBIGUOUS", "LineStream", "first_repeated", "json_line"]

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
