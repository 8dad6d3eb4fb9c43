"""Reading JSONL input line by line, holding at most one line, and the errors that name a bad line.

The small files an option names are read here too, by the same rules (a rubric's file, its few-shot
examples: :func:`read_small_file`, :func:`read_examples`): a regular file under a byte limit, never a
FIFO waited on, each line a JSONL line.

Writing results (atomically, never over an input) is :mod:`answer_eval.engine.output_files`.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from answer_eval.errors import DuplicateKeyError, InputError, OptionError

if TYPE_CHECKING:
    from answer_eval.llm.rubric_prompts import Example

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "LINE_GAP",
    "LineGap",
    "NotASmallFile",
    "decode_json",
    "feed_digest",
    "invalid_row",
    "iter_jsonl",
    "iter_parsed_lines",
    "iter_raw_lines",
    "json_failure",
    "line_gap",
    "parse_jsonl_line",
    "read_examples",
    "read_json_file",
    "read_small_file",
    "read_small_file_bytes",
]

_BOM = b"\xef\xbb\xbf"

DEFAULT_MAX_LINE_BYTES = 64 << 20
"""The longest row read (64 MiB, line end not counted): a JSONL line, or another format's row as its JSON
line. A longer one is an :class:`InputError` naming the line and the limit (``--max-line-bytes`` on the
command line), never read into memory whole: each format's reader counts a row's bytes before it builds
the row (see :mod:`answer_eval.inputs.formats`)."""
_READ_SIZE = 1 << 20  # the bytes of an over-long line are skipped this many at a time


class NotASmallFile(ValueError):
    """A file an option names that is not a small regular file: ``detail`` says why (a sentence's end)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def read_small_file_bytes(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """The bytes of a small regular file a user names (a rubric, examples, a calibration), read without waiting.

    Opened without blocking and checked on the open descriptor, so a FIFO is refused, never waited
    on (a plain ``open`` blocks until a writer comes), and a device or folder is refused before a
    byte is read; at most ``limit + 1`` bytes are read, so ``/dev/zero`` renamed cannot fill memory.

    :raises NotASmallFile: ``"is not a regular file"``, or ``"is over {limit} bytes: not {what}"``.
    :raises OSError: When it cannot be opened or read.
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # before open(), which raises its own error for a folder
        os.close(descriptor)
        raise NotASmallFile("is not a regular file")
    with open(descriptor, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise NotASmallFile(f"is over {limit:,} bytes: not {what}")
    return data


def json_failure(exc: BaseException) -> str:
    """What is wrong with JSON text ``json.loads`` refused, in words that name no Python internals.

    ``json.loads`` raises a plain ``ValueError`` for an integer past Python's digit limit (its message
    says to call ``sys.set_int_max_str_digits``) and ``RecursionError`` for deep nesting; a caller
    names its file beside these words.
    """
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not valid UTF-8 (byte {exc.start + 1})"
    if isinstance(exc, RecursionError):
        return "arrays or objects nested too deeply to read"
    digits = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
    return f"a number has more than {digits} digits, the limit"


def read_json_file(path: str | os.PathLike[str], limit: int, what: str) -> Any:
    """The JSON of a small regular file (:func:`read_small_file_bytes`), every failure a ``ValueError`` naming it.

    :raises ValueError: ``"{what} {path} is not a regular file"``, ``"... is over N bytes"``, or ``"... is not
        valid JSON: ..."`` (:func:`json_failure`: a number past Python's digit limit, deep nesting, bad UTF-8).
    :raises OSError: When it cannot be opened or read (``FileNotFoundError`` for a missing one).
    """
    try:
        return json.loads(read_small_file_bytes(path, limit, f"a {what}").decode("utf-8"))
    except NotASmallFile as exc:
        raise ValueError(f"the {what} {os.fspath(path)!s} {exc.detail}") from None
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the {what} {os.fspath(path)!s} is not valid JSON: {json_failure(exc)}") from None


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


class _Reader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class LineReader(Protocol):
    """What :func:`iter_raw_lines` reads from: a binary file, or any object with its ``readline``."""

    def readline(self, size: int = -1, /) -> bytes:
        """The next line, at most ``size`` bytes of it (``b""`` at the end)."""
        ...


def iter_raw_lines(
    handle: LineReader,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    digest: _Digest | None = None,
    *,
    skip_long: bool = True,
) -> Iterator[tuple[bytes | None, int]]:
    """Yield ``(raw_line, size)`` for every line of a binary file, holding at most one line in memory.

    ``raw_line`` is ``None`` for a line longer than ``max_line_bytes`` (its line end not counted).
    With ``skip_long`` (for a caller that skips such a line) its bytes are read and dropped in
    pieces, never held whole, and ``size`` is its whole length; without it (for a caller that stops
    at it) nothing more is read: ``size`` is what was read of it, and the lines end there, so a line
    that never ends (``/dev/zero``) stops a run at once. ``size`` is a line's length in bytes, line
    end included, so a caller can tell where the next line starts. Every byte read is also passed
    to ``digest.update`` when a digest is given (to fingerprint what was read).
    """
    limit = max_line_bytes + 2  # room for "\r\n"
    readline = handle.readline
    while True:
        raw = readline(limit)
        if not raw:
            return
        if digest is not None:
            digest.update(raw)
        if len(raw) < limit or raw.endswith(b"\n"):
            content = len(raw) - (2 if raw.endswith(b"\r\n") else 1 if raw.endswith(b"\n") else 0)
            yield (raw if content <= max_line_bytes else None), len(raw)
            continue
        if not skip_long:
            yield None, len(raw)
            return
        yield None, len(raw) + drop_line_rest(handle, digest)


def drop_line_rest(handle: LineReader, digest: _Digest | None = None) -> int:
    """Read the rest of the line being read and drop it, a piece at a time: the bytes dropped (its line end included).

    Every byte read is passed to ``digest.update`` when a digest is given.
    """
    size = 0
    while True:
        raw = handle.readline(_READ_SIZE)
        if not raw:
            return size
        if digest is not None:
            digest.update(raw)
        size += len(raw)
        if raw.endswith(b"\n"):
            return size


def feed_digest(handle: _Reader, digest: _Digest, size: int) -> tuple[int, bytes]:
    """Pass the next ``size`` bytes of ``handle`` to ``digest``, a MiB at a time: the bytes fed and the last one.

    Fewer than ``size`` are fed when the input ends first (the last byte is ``b""`` when none was).
    """
    fed, last = 0, b""
    while fed < size:
        block = handle.read(min(size - fed, _READ_SIZE))
        if not block:
            break
        digest.update(block)
        fed += len(block)
        last = block[-1:]
    return fed, last


def iter_jsonl(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """Yield ``(line_number, row)`` for every non-blank line of a JSONL file, streaming.

    A line that is not valid UTF-8, not JSON, not a JSON object, holds a key twice or is longer
    than ``max_line_bytes`` is yielded as an :class:`InputError` naming the line instead of a row,
    so the caller decides whether to stop or skip (a line over the limit is yielded as soon as it
    passes the limit: a caller that stops there reads nothing more of it). A UTF-8 byte order mark
    on the first line and CRLF line ends are accepted.
    """
    with open(path, "rb") as handle:
        yield from iter_parsed_lines(handle, path, max_line_bytes)


def iter_parsed_lines(
    handle: LineReader,
    path: str | os.PathLike[str],
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    *,
    gaps: bool = False,
) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """:func:`iter_jsonl` on lines already open (``path`` names them in messages).

    ``gaps``: the lines are a converted format's, whose :func:`line_gap` markers stand for lines of the file.
    """
    number = 0
    while True:
        long_line = False
        for raw, _ in iter_raw_lines(handle, max_line_bytes, skip_long=False):
            number += 1
            row = parse_jsonl_line(raw, number, path, max_line_bytes=max_line_bytes, gaps=gaps)
            if isinstance(row, LineGap):
                number += row.lines - 1
            elif row is not None:
                long_line = raw is None
                yield number, row
        if not long_line:
            return
        drop_line_rest(handle)  # only once the caller went on past the line


INVALID_ROW = b"\x00"
"""How a converted format (:mod:`answer_eval.inputs.converted_rows`) marks a row it could not convert:
a NUL byte, then ``{"invalid": message}``. No JSONL line starts with NUL (it is not JSON), so such a
line is refused either way; :func:`parse_jsonl_line` refuses it with its message."""


def invalid_row(message: str) -> bytes:
    """The line standing for a row that cannot be read (see :data:`INVALID_ROW`): refused, skippable."""
    return INVALID_ROW + json.dumps({"invalid": message}).encode("ascii") + b"\n"


LINE_GAP = b"\x01"
"""How a converted format marks lines of its file that hold no row of their own (the lines of a record over
several lines, a header): ``\x01``, then how many lines it stands for. One marker stands for millions of lines at
the cost of one (a quoted CSV cell of millions of line feeds), so line numbers stay the file's own. It is read as
such only from a converted format (``gaps``): in a JSONL file it is a line that is not JSON."""


class LineGap(NamedTuple):
    """A :data:`LINE_GAP` marker read: it stands for ``lines`` lines of the file (itself included), none a row."""

    lines: int


def line_gap(lines: int) -> bytes:
    """The line standing for ``lines`` lines of a converted format's file that hold no row (see :data:`LINE_GAP`)."""
    return b"\n" if lines == 1 else LINE_GAP + str(lines).encode("ascii") + b"\n"


def _line_gap(raw: bytes) -> LineGap | None:
    digits = raw[len(LINE_GAP) :].rstrip(b"\n")
    if raw.startswith(LINE_GAP) and digits.isdigit() and len(digits) < 20:
        return LineGap(int(digits))
    return None


def _invalid_row(raw: bytes, path: str | os.PathLike[str], number: int) -> InputError:
    try:
        message = json.loads(raw[len(INVALID_ROW) :].decode("utf-8"))["invalid"]
    except (ValueError, KeyError, TypeError):
        message = None
    return InputError(message if isinstance(message, str) else "not valid JSON (a NUL byte)", path, number)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A JSON object with a key given twice is refused: json.loads would silently keep the last
    # value, and which one the writer meant is unknowable.
    row = dict(pairs)
    if len(row) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(key)
            seen.add(key)
    return row


decode_json = json.JSONDecoder(object_pairs_hook=_object).decode
"""``json.loads`` for input text, refusing an object that gives a key twice (:class:`DuplicateKeyError`)."""


def parse_jsonl_line(
    raw: bytes | None,
    number: int,
    path: str | os.PathLike[str],
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    gaps: bool = False,
) -> dict[str, Any] | InputError | LineGap | None:
    """Read one raw line of a JSONL file as :func:`iter_jsonl` does: ``None`` for a blank line.

    A line that is not valid UTF-8, not JSON or not a JSON object, that holds the same key twice
    in an object, a number too long to read or nesting too deep to read gives an
    :class:`InputError` naming ``path`` and the line ``number``; so does ``raw=None``, which
    :func:`iter_raw_lines` gives for a line longer than ``max_line_bytes``. A byte order mark is
    dropped from line 1. With ``gaps`` (the lines of a converted format) a :func:`line_gap` marker
    gives a :class:`LineGap`. Never raises.
    """
    if raw is None:
        return InputError(
            f"the line is longer than {max_line_bytes:,} bytes, the limit (raise it with --max-line-bytes)",
            path,
            number,
        )
    if number == 1 and raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if raw.startswith(INVALID_ROW):
        return _invalid_row(raw, path, number)
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return InputError(f"not valid UTF-8 (byte {exc.start + 1})", path, number)
    try:
        row = decode_json(text)
    except json.JSONDecodeError as exc:
        gap = _line_gap(raw) if gaps else None  # a marker is not JSON: looked for only here, off the common path
        if gap is not None:
            return gap
        return InputError(f"not valid JSON: {exc.msg} (column {exc.colno})", path, number)
    except DuplicateKeyError as exc:
        return InputError(
            f"the key {exc.key!r} appears twice in one JSON object; which value is meant is ambiguous", path, number
        )
    except ValueError:  # an integer longer than Python reads (json.loads raises a plain ValueError)
        digits = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        return InputError(f"not valid JSON here: a number has more than {digits} digits, the limit", path, number)
    except RecursionError:
        return InputError("not valid JSON here: arrays or objects nested too deeply to read", path, number)
    if not isinstance(row, dict):
        return InputError(f"expected a JSON object, got a JSON {_json_type(row)}", path, number)
    return row


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


EXAMPLES_FILE_BYTES = 1024 * 1024
"""The largest examples file read: a few-shot prompt holds a handful of rows; /dev/zero is not one."""


def read_small_file(path: str, option_name: str, limit: int, what: str) -> str:
    """The text of a small regular file an option names (a rubric), read as :func:`read_small_bytes` reads it.

    :raises UnicodeDecodeError: When it is not UTF-8 (a byte order mark is dropped).
    """
    return read_small_bytes(path, option_name, limit, what).decode("utf-8").removeprefix("\ufeff")


def read_small_bytes(path: str, option_name: str, limit: int, what: str) -> bytes:
    """The bytes of a small regular file an option names (a rubric, examples), read without waiting or filling memory.

    :raises OptionError: Naming ``option_name``, for a FIFO, a device or a folder (opened without
        blocking, so a FIFO is refused, not waited on), or a file over ``limit`` bytes (not ``what``).
    :raises OSError: When it cannot be opened or read.
    """
    try:
        return read_small_file_bytes(path, limit, what)
    except NotASmallFile as exc:
        raise OptionError(option_name, exc.detail) from None


def _example(row: Mapping[str, Any], roles: Mapping[str, str]) -> Example:
    # Imported here: every input file is read through this module, and the rubric catalogue is the rubric's alone.
    from answer_eval.llm.rubric_prompts import Example

    inputs = {name: row[role] for name, role in roles.items() if row.get(role) is not None}
    return Example.from_dict({"inputs": inputs, "score": row.get("score"), "explanation": row.get("explanation")})


def read_examples(path: str, roles: Mapping[str, str]) -> tuple[Example, ...]:
    """The graded examples of a JSONL file: per line the input fields, ``score`` and ``explanation``.

    :param roles: Each rubric input's field in a row (``instruction`` is read from ``question``).
    :raises OptionError: Naming ``examples_file`` and the line, for a file that cannot be read, a
        bad row, or no row at all.
    """
    examples = []
    try:
        data = read_small_bytes(path, "examples_file", EXAMPLES_FILE_BYTES, "a file of examples")
    except OSError as exc:
        raise OptionError("examples_file", f"cannot be read: {exc.strerror or exc}") from None
    # Line by line as an input file is read: the same rules, the same messages (the file is small:
    # under its byte limit, every line is under the input's line limit too).
    for number, raw in enumerate(data.split(b"\n"), 1):
        row = parse_jsonl_line(raw, number, path)
        if row is None:
            continue
        if not isinstance(row, dict):  # an InputError naming the file and the line (no gaps are asked for)
            raise OptionError("examples_file", str(row))
        try:
            examples.append(_example(row, roles))
        except ValueError as exc:
            raise OptionError("examples_file", f"{path}:{number}: {exc}") from None
    if not examples:
        raise OptionError("examples_file", "holds no example")
    return tuple(examples)
