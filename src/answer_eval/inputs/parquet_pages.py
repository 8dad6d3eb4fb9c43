"""The decoded size of each page of a Parquet column chunk, read from the page headers before any page is decoded.

pyarrow decodes a page at once, and a page holds whole values: a 600 MB cell is a 600 MB page,
whatever batch size is asked for. The file's metadata gives each column chunk's decoded size;
where that is over the limit, the chunk's page headers (Thrift compact structs, one before each
page) say how large each page is, so that a row group whose reading would decode a page over the
limit is known before pyarrow touches it. This reader reads only what it needs of a header (the
page's decoded and stored sizes); anything it does not understand ends the look (``None``), and the
file is then read as pyarrow reads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, Any

__all__ = ["largest_page"]

_WINDOW = 1 << 16  # bytes read for one header; a header with large statistics is read again, whole
_MOST = 1 << 24  # a header larger than this is not looked at
_DEPTH = 32  # the deepest nesting of structs a header is read to


class _Unreadable(Exception):
    """A header this reader does not understand."""


class _Compact:
    """Thrift's compact protocol over a bytes buffer: only what skipping a struct and reading an i32 need."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise _Unreadable("the header runs past the bytes read")
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise _Unreadable("a varint over 64 bits")

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip(self, kind: int, depth: int) -> None:
        """Skip one value of compact type ``kind``."""
        if depth > _DEPTH:
            raise _Unreadable("values nested too deeply")
        if kind in (1, 2):  # a boolean held in its field's type
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.at += 8
        elif kind == 8:
            size = self.varint()  # read before the position is added to: reading it moves the position
            self.at += size
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(size):
                if head & 0x0F in (1, 2):  # a boolean in a list takes a byte
                    self.byte()
                else:
                    self.skip(head & 0x0F, depth + 1)
        elif kind == 11:
            size = self.varint()
            types = self.byte() if size else 0
            for _ in range(size):
                self.skip(types >> 4, depth + 1)
                self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.fields(depth + 1, lambda *_: False)
        else:
            raise _Unreadable(f"compact type {kind}")
        if self.at > len(self.data):
            raise _Unreadable("the header runs past the bytes read")

    def fields(self, depth: int, read: Any) -> None:
        """Read a struct's fields: ``read(field_id, kind)`` reads one it wants (returns True), the rest are skipped."""
        if depth > _DEPTH:
            raise _Unreadable("structs nested too deeply")
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return
            delta, kind = head >> 4, head & 0x0F
            last = last + delta if delta else self.zigzag()
            if not read(last, kind):
                self.skip(kind, depth)


def _page_header(data: bytes) -> tuple[int, int, int]:
    """``(decoded size, stored size, header length)`` of the page header at the start of ``data``."""
    reader = _Compact(data)
    sizes: dict[int, int] = {}

    def read(field: int, kind: int) -> bool:
        if field in (2, 3) and kind == 5:  # uncompressed_page_size, compressed_page_size (i32)
            sizes[field] = reader.zigzag()
            return True
        return False

    reader.fields(0, read)
    if set(sizes) != {2, 3} or min(sizes.values()) < 0:
        raise _Unreadable("a page header without its sizes")
    return sizes[2], sizes[3], reader.at


def _pages(handle: IO[bytes], start: int, length: int) -> Iterator[int]:
    """The decoded size of each page of the column chunk stored at ``start`` (``length`` bytes)."""
    at, end = start, start + length
    while at < end:
        window = _WINDOW
        while True:
            handle.seek(at)
            data = handle.read(min(window, end - at))
            try:
                decoded, stored, header = _page_header(data)
                break
            except _Unreadable:
                if len(data) < window or window >= _MOST:
                    raise
                window *= 16
        yield decoded
        at += header + stored


def largest_page(handle: IO[bytes], column: Any) -> int | None:
    """The largest decoded page of one column chunk (pyarrow's ``ColumnChunkMetaData``), or ``None`` if unknown.

    Read from the page headers in ``handle`` (the Parquet file, opened for reading); ``None`` when
    a header cannot be read (an encrypted file, a writer this reader does not know), so the caller
    falls back to reading the file as it is.
    """
    start = column.data_page_offset
    if column.has_dictionary_page and column.dictionary_page_offset:
        start = min(start, column.dictionary_page_offset)
    try:
        return max(_pages(handle, start, column.total_compressed_size), default=0)
    except (_Unreadable, OSError, ValueError):
        return None
