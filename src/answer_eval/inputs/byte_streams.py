"""Bytes in: standard input told by its first bytes, and compression (gzip, bzip2, xz, zstd) told by its magic bytes.

:class:`~answer_eval.inputs.formats.InputFile` opens every input through :func:`decompressed`; a
decompression error becomes an :class:`~answer_eval.errors.InputError` naming the input.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import sys
import zlib
from collections.abc import Iterator
from typing import IO, Any

from answer_eval.errors import InputError

__all__ = ["SNIFF_BYTES", "decompressed", "open_stdin", "peek", "starts_with"]

SNIFF_BYTES = 4096


def open_stdin() -> IO[bytes]:
    """Standard input, with enough of its first bytes in the buffer to tell its compression and format.

    A pipe's first read may hold a single byte (a slow producer): the first bytes are read until
    there are enough, then handed back in front of the rest.
    """
    if sys.stdin is None:
        raise InputError("standard input is closed: give a file, or pipe the rows in")
    raw = sys.stdin.buffer
    read1 = getattr(raw, "read1", raw.read)  # at most one read of the pipe: never waits for more than is there
    head = b""
    while len(head) < SNIFF_BYTES and not (len(head) >= 10 and head.strip()):
        piece = read1(SNIFF_BYTES - len(head))
        if not piece:
            break
        head += piece
    return io.BufferedReader(_Prefixed(head, raw))


class _Prefixed(io.RawIOBase):
    """``head``, then the rest of ``rest``: a stream read once, after its first bytes were looked at."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        super().__init__()
        self._head, self._rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        return int(self._rest.readinto1(buffer))  # type: ignore[attr-defined]


_DECOMPRESS_ERRORS = (EOFError, OSError, lzma.LZMAError, zlib.error)


def decompressed(raw: IO[bytes], name: str) -> IO[bytes]:
    """``raw`` itself, or its decompressed bytes (errors named, see :class:`_Guarded`) when its first bytes say so."""
    head = peek(raw, 10)
    inner: IO[bytes]
    if head.startswith(b"\x1f\x8b"):
        inner = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
    elif head.startswith(b"BZh") and head[4:10] in (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90"):
        inner = bz2.BZ2File(raw)
    elif head.startswith(b"\xfd7zXZ\x00"):
        inner = lzma.LZMAFile(raw)  # noqa: SIM115 - closed with the input
    elif head.startswith(b"\x28\xb5\x2f\xfd"):
        raise InputError(
            "zstd-compressed input is not read (no zstd library is a dependency): decompress it first, "
            "e.g. zstd -dc FILE | answer-eval COMMAND - ...",
            name,
        )
    else:
        return raw
    return _Guarded(inner, name)  # type: ignore[return-value]


def peek(raw: IO[bytes], size: int) -> bytes:
    """Up to ``size`` of the next bytes of a buffered reader, without consuming them."""
    peeker = getattr(raw, "peek", None)
    if peeker is None:  # pragma: no cover - open() and sys.stdin.buffer are buffered readers
        return b""
    return bytes(peeker(size)[:size])


class _Guarded(io.BufferedIOBase):
    """A binary input whose read errors (a broken archive) become an :class:`InputError` naming the file."""

    def __init__(self, inner: IO[bytes], name: str) -> None:
        super().__init__()
        self._inner, self._name = inner, name

    def readable(self) -> bool:
        return True

    def read1(self, size: int | None = -1, /) -> bytes:
        return self.read(size)

    @contextlib.contextmanager
    def _named_errors(self) -> Iterator[None]:
        try:
            yield
        except _DECOMPRESS_ERRORS as exc:
            raise InputError(f"cannot decompress the input: {exc}", self._name) from None

    def readline(self, size: int | None = -1, /) -> bytes:
        with self._named_errors():
            return self._inner.readline(-1 if size is None else size)

    def read(self, size: int | None = -1, /) -> bytes:
        with self._named_errors():
            return self._inner.read(-1 if size is None else size)

    def peek(self, size: int = 1, /) -> bytes:
        with self._named_errors():
            return bytes(getattr(self._inner, "peek", lambda _: b"")(size))

    def seek(self, offset: int, whence: int = 0, /) -> int:
        with self._named_errors():
            return self._inner.seek(offset, whence)

    def close(self) -> None:
        self._inner.close()
        super().close()


def starts_with(binary: IO[bytes], mark: bytes) -> bool:
    """Whether the input's first bytes, past a byte-order mark and white space, are ``mark``."""
    head = peek(binary, SNIFF_BYTES).lstrip(b"\xef\xbb\xbf").lstrip()
    return head.startswith(mark)
