"""``answer-eval rubric --examples FILE``: graded examples read from a small JSONL file of labelled rows.

The file is read line by line by the rules of an input file (:func:`answer_eval.engine.files.parse_jsonl_line`):
a byte order mark is dropped from line 1, and a line that is not UTF-8, not JSON, not an object,
or gives a key twice (which value is meant is ambiguous) is refused naming ``FILE:LINE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from answer_eval.engine.files import NotASmallFile, parse_jsonl_line, read_small_file_bytes
from answer_eval.errors import OptionError
from answer_eval.llm.rubrics import Example

__all__ = ["EXAMPLES_FILE_BYTES", "read_examples", "read_small_bytes", "read_small_file"]

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
