"""Input files in the formats people have, read by every file command as one stream of JSON lines.

Each format is turned, row by row, into the JSONL lines the row loop already reads (line
numbers, batches, ``--max-line-bytes``, ``--skip-invalid``, the input fingerprint of
``--resume``), so every format streams with the memory of one row and every rule of the
package holds for all of them alike:

- ``jsonl``: one JSON object a line (``.jsonl``, ``.ndjson``, ``.jsonlines``; the default);
- ``json``: a JSON array of objects (``.json``), scanned item by item
  (:mod:`answer_eval.inputs.json_array`); a ``.json`` file that does not start with ``[`` is
  read as JSONL; item N is "line" N in messages;
- ``csv`` and ``tsv``: a header row, then one row a line (``.csv``; ``.tsv``, ``.tab``), read by
  :mod:`answer_eval.inputs.csv_rows` (a ``.csv`` file's delimiter told from its header row
  unless one is given); line numbers are the file's own lines;
- ``parquet``: a Parquet file (``.parquet``, ``.pq``), a batch of rows at a time
  (:mod:`answer_eval.inputs.parquet_rows`: pyarrow, the ``parquet`` extra); row N is "line" N;
  never compressed around (Parquet compresses inside).

A row over ``max_line_bytes`` is an invalid row in every format, found before the row is built.
The text cells of the flat formats (CSV, TSV, a Parquet string column) are read by
:func:`~answer_eval.inputs.converted_rows.read_cell` (a JSON list written into a cell is that list);
JSONL and JSON arrays keep their own types.

Compression of the text formats is told from the first bytes, whatever the name: gzip, bzip2 and xz are read
through the standard library (``rows.csv.gz``, ``answers.jsonl.xz``); zstd is named and refused
(no zstd library is a dependency). ``-`` is standard input, read once, so a run from it cannot be
resumed; without ``--input-format`` its format is told from its first bytes (``{``: JSONL, ``[``:
a JSON array, ``PAR1``: Parquet, refused with the reason, anything else: CSV or TSV).
:class:`InputFile` opens every input through :func:`decompressed`; a decompression error becomes an
:class:`~answer_eval.errors.InputError` naming the input.
"""

from __future__ import annotations

import bz2
import contextlib
import dataclasses
import gzip
import io
import lzma
import os
import sys
import zlib
from collections.abc import Collection, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from answer_eval.errors import InputError
from answer_eval.inputs.converted_rows import OTHER, TEXT, VALUE, LineStream, read_cell
from answer_eval.inputs.csv_rows import table_lines
from answer_eval.inputs.json_array import json_array_lines
from answer_eval.inputs.jsonl import DEFAULT_MAX_LINE_BYTES, iter_parsed_lines
from answer_eval.inputs.parquet_rows import parquet_lines

__all__ = ["FORMATS", "OTHER", "TEXT", "VALUE", "InputFile", "format_for", "iter_rows", "read_cell"]


STDIN = "-"
"""The file name that means standard input."""

FORMATS = ("jsonl", "json", "csv", "tsv", "parquet")
"""The input formats, as ``--input-format`` names them."""

_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".jsonlines": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst", ".zstd")
_FORMAT_LIST = "JSONL (.jsonl, .ndjson), a JSON array (.json), CSV (.csv), TSV (.tsv), Parquet (.parquet)"


class Lines(Protocol):
    """What the row loop reads: JSONL bytes a line at a time (a binary file, or a converted format)."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line, at most ``size`` bytes of it."""
        ...

    def read(self, size: int = -1, /) -> bytes:
        """The next ``size`` bytes."""
        ...

    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Go to byte ``offset`` (a converted format goes forward only)."""
        ...


def is_stdin(path: str | os.PathLike[str]) -> bool:
    """Whether the argument ``path`` means standard input: exactly ``-`` (a file of that name is ``./-``)."""
    return os.fspath(path) == STDIN


def format_for(path: str | os.PathLike[str], chosen: str | None = None) -> str:
    """The format of ``path``: ``chosen`` (``--input-format``) when given, else told by its extension.

    A compression suffix (``.gz``, ``.bz2``, ``.xz``) is looked through; a name with no
    extension, and standard input, are JSONL.

    :raises InputError: For an unknown ``chosen`` format or an extension of no format, listing the formats.
    """
    if chosen is not None:
        if chosen not in FORMATS:
            raise InputError(f"unknown input format {chosen!r}: choose one of {', '.join(FORMATS)}")
        return chosen
    name = Path(path).name.lower()
    if is_stdin(path):
        return "jsonl"
    for suffix in _COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    suffix = Path(name).suffix
    if not suffix:
        return "jsonl"
    if suffix not in _SUFFIXES:
        raise InputError(
            f"cannot tell the format of {path} from its extension {suffix!r}: the formats read are "
            f"{_FORMAT_LIST}, the text formats also compressed (.gz, .bz2, .xz); name one with --input-format"
        )
    return _SUFFIXES[suffix]


@dataclass(frozen=True)
class InputFile:
    """One input: where it is, its format, and which fields are text (for the cells of a CSV or TSV).

    :param path: The file; ``Path("-")`` for standard input.
    :param format: One of :data:`FORMATS`.
    :param text_fields: Fields that hold text, such as the prediction and the question: in a CSV or
        TSV cell of these, ``true`` stays the word and ``[1]`` the citation (see :func:`read_cell`).
    :param value_fields: Fields that hold a value or a list of them, such as the acceptable
        answers: a JSON array in such a cell is that list, ``true`` stays the word.
    :param stdin: Standard input (the argument ``-``; a file named so is ``./-``).
    :param max_line_bytes: The longest row read, as the bytes of its JSON line (``--max-line-bytes``):
        a longer one is an invalid row, found before it is built, in every format.
    :param delimiter: The delimiter of a CSV (``--delimiter``); ``None``: told from the header row
        (``,``, ``;``, a tab or ``|``); a TSV's is a tab.
    :param format_given: Whether ``format`` was given or told by the name; ``False`` for standard
        input without ``--input-format``, whose format is told from its first bytes.
    """

    path: Path
    format: str = "jsonl"
    text_fields: frozenset[str] = frozenset()
    value_fields: frozenset[str] = frozenset()
    stdin: bool = False
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    delimiter: str | None = None
    format_given: bool = True

    @classmethod
    def of(
        cls,
        path: str | os.PathLike[str] | InputFile,
        input_format: str | None = None,
        text_fields: Collection[str] = (),
        value_fields: Collection[str] = (),
        *,
        max_line_bytes: int | None = None,
        delimiter: str | None = None,
    ) -> InputFile:
        """``path`` with its format (``input_format``, or told by its extension).

        An :class:`InputFile` is returned as it is, with ``max_line_bytes`` and ``delimiter`` set when given.

        :raises InputError: For an unknown format, or a delimiter that cannot be one.
        """
        _check_delimiter(delimiter)
        if isinstance(path, InputFile):
            changes: dict[str, Any] = {}
            if max_line_bytes is not None:
                changes["max_line_bytes"] = max_line_bytes
            if delimiter is not None:
                changes["delimiter"] = delimiter
            return dataclasses.replace(path, **changes) if changes else path
        stdin = is_stdin(path)
        fields = frozenset(text_fields), frozenset(value_fields)
        limit = DEFAULT_MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes
        given = not stdin or input_format is not None
        return cls(Path(path), format_for(path, input_format), *fields, stdin, limit, delimiter, given)

    @property
    def is_stdin(self) -> bool:
        """Whether this is standard input (read once: it cannot be resumed)."""
        return self.stdin

    @property
    def name(self) -> str:
        """How messages name it: the path, or ``<stdin>``."""
        return "<stdin>" if self.is_stdin else str(self.path)

    @property
    def short_name(self) -> str:
        """The file name without its folder (for a progress bar)."""
        return "stdin" if self.is_stdin else self.path.name

    def check(self) -> None:
        """Refuse an input that cannot be read: a missing file, a folder, Parquet from standard input.

        :raises InputError: Naming the file.
        """
        if self.is_stdin:
            if self.format == "parquet":
                raise InputError("Parquet cannot be read from standard input (it is read by row group): give the file")
            return
        if not self.path.is_file():
            exists = self.path.exists()
            raise InputError(f"input file {self.path} does not exist" if not exists else f"{self.path} is not a file")

    @contextlib.contextmanager
    def open(self) -> Iterator[Lines]:
        """Open the input as JSONL lines (see the module docstring); closed on leaving the block.

        :raises InputError: For data that cannot be decompressed or read in its format, naming the
            file (and, when known, the line).
        """
        kinds = {**dict.fromkeys(self.value_fields, VALUE), **dict.fromkeys(self.text_fields, TEXT)}
        with contextlib.ExitStack() as stack:
            if self.format == "parquet":
                yield stack.enter_context(
                    contextlib.closing(LineStream(parquet_lines(self.path, self.name, kinds, self.max_line_bytes)))
                )
                return
            raw: IO[bytes] = open_stdin() if self.is_stdin else stack.enter_context(open(self.path, "rb"))
            binary = decompressed(raw, self.name)
            if binary is not raw:
                stack.callback(binary.close)
            form = self.format if self.format_given else _told_format(binary, self.name)
            lines: Iterator[bytes] | None = None
            if form == "json" and starts_with(binary, b"["):
                lines = json_array_lines(binary, self.name, self.max_line_bytes)
            elif form in ("csv", "tsv"):
                delimiter = "\t" if form == "tsv" and self.delimiter is None else self.delimiter
                lines = table_lines(binary, delimiter, kinds, self.name, self.max_line_bytes)
            if lines is None:
                yield binary  # JSONL (or a .json file of JSON lines)
            else:
                # Closed before the file it reads (the stack closes in reverse): its clean-up still has the file.
                yield stack.enter_context(contextlib.closing(LineStream(lines)))


def _check_delimiter(delimiter: str | None) -> None:
    if delimiter is not None and (len(delimiter) != 1 or delimiter in '"\r\n' or delimiter.isalnum()):
        raise InputError(
            "the delimiter must be one character that is not a letter, a digit, a quote or a line end, "
            f"got {delimiter!r}"
        )


def _told_format(binary: IO[bytes], name: str) -> str:
    """The format of standard input told from its first bytes (see the module docstring)."""
    head = peek(binary, SNIFF_BYTES)
    if head.startswith(b"PAR1"):
        raise InputError(
            "standard input holds a Parquet file (it starts with PAR1); Parquet is read by row group from a "
            "file: give its path instead of -",
            name,
        )
    start = head.lstrip(b"\xef\xbb\xbf").lstrip()[:1]
    if start in (b"", b"{"):
        return "jsonl"
    return "json" if start == b"[" else "csv"


def iter_rows(
    source: InputFile, *, max_line_bytes: int | None = None
) -> Generator[tuple[int, dict[str, Any] | InputError], None, None]:
    """Yield ``(line_number, row)`` for every row of ``source``, streaming, as JSONL's ``iter_jsonl`` does.

    A row that cannot be read (one longer than ``max_line_bytes``, default the source's own, among
    them) is yielded as an :class:`InputError` naming its line, for the caller to stop or skip (one
    over the limit as soon as it passes it: a caller that stops reads no more of it); data that
    cannot be read at all (a broken archive) raises one.
    """
    source = InputFile.of(source, max_line_bytes=max_line_bytes)
    with source.open() as handle:
        gaps = isinstance(handle, LineStream)
        yield from iter_parsed_lines(handle, source.name, source.max_line_bytes, gaps=gaps)


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
