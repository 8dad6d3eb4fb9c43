"""``answer-eval rubric --examples FILE``: graded examples read from a small JSONL file of labelled rows."""

from __future__ import annotations

import json
from collections.abc import Mapping

from answer_eval.engine.files import NotASmallFile, read_small_file_bytes
from answer_eval.errors import OptionError
from answer_eval.llm.rubrics import Example

__all__ = ["EXAMPLES_FILE_BYTES", "read_examples", "read_small_file"]

EXAMPLES_FILE_BYTES = 1024 * 1024
"""The largest examples file read: a few-shot prompt holds a handful of rows; /dev/zero is not one."""


def read_small_file(path: str, option_name: str, limit: int, what: str) -> str:
    """The text of a small regular file an option names (a rubric, examples), read without waiting or filling memory.

    :raises OptionError: Naming ``option_name``, for a FIFO, a device or a folder (opened without
        blocking, so a FIFO is refused, not waited on), or a file over ``limit`` bytes (not ``what``).
    :raises OSError: When it cannot be opened or read.
    """
    try:
        data = read_small_file_bytes(path, limit, what)
    except NotASmallFile as exc:
        raise OptionError(option_name, exc.detail) from None
    return data.decode("utf-8")


def _example(line: str, roles: Mapping[str, str]) -> Example:
    row = json.loads(line)
    if not isinstance(row, dict):
        raise ValueError(f"a row is a JSON object, got {type(row).__name__}")
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
        text = read_small_file(path, "examples_file", EXAMPLES_FILE_BYTES, "a file of examples")
    except OSError as exc:
        raise OptionError("examples_file", f"cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise OptionError("examples_file", "is not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            examples.append(_example(line, roles))
        except (ValueError, RecursionError) as exc:
            raise OptionError("examples_file", f"line {number}: {exc}") from None
    if not examples:
        raise OptionError("examples_file", "holds no example")
    return tuple(examples)
