"""What a checkpoint is made of: the names of a run's work files, its position, its options and its errors.

The files of a run writing ``DIR/out.jsonl`` are ``DIR/.out.jsonl.partial`` (the rows so far),
``DIR/.out.jsonl.partial.json`` (the record of the position) and, while a record is being
replaced, ``DIR/.out.jsonl.partial.json.tmp``. :class:`answer_eval.engine.checkpoint.Checkpoint` writes
and reads them; this module names them and the record's contents, and reads a record and the rows written.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from answer_eval.errors import InputError

__all__ = [
    "CHECKPOINT_SECONDS",
    "FORMAT",
    "NEUTRAL_OPTIONS",
    "Kept",
    "Position",
    "checkpoint_paths",
    "damaged",
    "kept_by",
    "note_kept",
    "option_changes",
    "parse_record",
    "read_rows",
    "run_options",
    "work_files",
]

CHECKPOINT_SECONDS = 5.0
"""The default longest time between two records of a running file command's position."""
FORMAT = 1
"""The version of the record's layout; a record of another version is refused as damaged."""
NEUTRAL_OPTIONS = frozenset(
    {"file", "output", "format", "no_progress", "jobs", "resume", "command", "handler", "checkpoint_seconds"}
)
"""Command-line options that do not change what is written: they may differ between a run and its resumption."""


def run_options(command: str, args: Any, elsewhere: Collection[str] = ()) -> dict[str, Any]:
    """The options of a command-line run that shape its output, as JSON-ready values.

    Every option of ``args`` (an ``argparse.Namespace``) except those that only change how the
    run goes (:data:`NEUTRAL_OPTIONS`: the input and output paths, ``--format``,
    ``--no-progress``, ``--jobs``, ``--resume``, ``--checkpoint-seconds``) and those named in
    ``elsewhere`` (held by another part of the record in a resolved form, such as the
    evaluator's signature); values that are not JSON scalars or lists of them are left out. An
    option added later is in the record unless it is declared neutral: a resume can only be
    refused too often, never accepted with an output-shaping option changed.
    """
    options: dict[str, Any] = {"command": command}
    for name, value in sorted(vars(args).items()):
        if name not in NEUTRAL_OPTIONS and name not in elsewhere and _is_plain(value):
            options[name] = list(value) if isinstance(value, tuple) else value
    return options


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def checkpoint_paths(target: Path) -> tuple[Path, Path]:
    """The partial output and its record for an output path: ``(.NAME.partial, .NAME.partial.json)``."""
    return target.with_name(f".{target.name}.partial"), target.with_name(f".{target.name}.partial.json")


def work_files(target: Path) -> dict[Path, str]:
    """Every file a run writing ``target`` may write, truncate, rename or remove, and what it is."""
    partial, record = checkpoint_paths(target)
    return {
        target: "the output",
        partial: "the partial output",
        record: "the checkpoint record",
        record.with_name(record.name + ".tmp"): "the checkpoint record's temporary file",
    }


@dataclass
class Position:
    """Where a run is: the next input byte and line, and the output written and lines skipped so far."""

    input_offset: int = 0
    input_line: int = 0
    output_offset: int = 0
    rows: int = 0
    invalid_lines: int = 0

    @classmethod
    def from_record(cls, data: Any) -> Position:
        """The position a record holds; ``ValueError`` unless every field is a count."""
        if not isinstance(data, dict):
            raise ValueError("the position is not a JSON object")
        values = {name: data.get(name) for name in cls.__dataclass_fields__}
        counts = {name: value for name, value in values.items() if type(value) is int and value >= 0}
        if len(counts) != len(values):
            raise ValueError("a position is not a count")
        return cls(**counts)


@dataclass(frozen=True)
class Kept:
    """What a run that failed kept for ``--resume``: its partial output and the rows its record counts."""

    partial: Path
    rows: int


_KEPT = "answer_eval_kept"


def note_kept(error: BaseException, kept: Kept) -> None:
    """Say on ``error`` (any exception) that its run kept rows for ``--resume``: the command line tells the user."""
    with contextlib.suppress(AttributeError, TypeError):  # an exception that takes no attribute: said nowhere
        setattr(error, _KEPT, kept)


def kept_by(error: BaseException) -> Kept | None:
    """What the run that raised ``error`` kept for ``--resume`` (``None``: nothing)."""
    kept = getattr(error, _KEPT, None)
    return kept if isinstance(kept, Kept) else None


def damaged(path: Path, why: str) -> InputError:
    """The error of a checkpoint ``--resume`` cannot use: exit 2, every file left as it was."""
    return InputError(
        f"the checkpoint {path} is damaged ({why}); nothing was changed. Run without --resume to start over "
        "(the checkpoint is then replaced), or remove it"
    )


def parse_record(raw: bytes, path: Path) -> dict[str, Any]:
    """A record's content, checked to be one a run writes (its position is read by the caller).

    :raises InputError: "damaged", naming ``path`` and what is wrong.
    """
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("format") != FORMAT:
            raise ValueError(f"unknown record format {data.get('format')!r}")
        Position.from_record(data.get("position"))
        for key in ("options", "input", "input_sha256"):
            if key not in data:
                raise KeyError(key)
        if not isinstance(data["options"], dict) or not isinstance(data["input_sha256"], str):
            raise ValueError("its options or input fingerprint are not what a run records")
    except RecursionError:  # a record edited to arrays nested past Python's recursion limit
        raise damaged(path, "arrays or objects nested too deeply to read") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise damaged(path, str(exc).strip("'") or "unreadable") from None
    return data


def _shown(value: Any) -> str:
    return "absent" if value is ... else json.dumps(value, ensure_ascii=False)


def option_changes(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The options that differ from the record's, in words: ``column_prefix: "", now "ae_"``."""
    from answer_eval.evaluators.base import signature_differences

    changes = []
    for name in sorted({*recorded, *now}):
        old, new = recorded.get(name, ...), now.get(name, ...)
        if old == new:
            continue
        if name == "signature" and isinstance(old, str) and isinstance(new, str):
            changes.extend(signature_differences(old, new))
        else:
            changes.append(f"{name}: {_shown(old)}, now {_shown(new)}")
    return changes


def read_rows(rows: IO[bytes], size: int, partial: Path) -> Iterator[dict[str, Any]]:
    """The rows in the first ``size`` bytes of a partial output, in order.

    :raises InputError: "damaged" (naming ``partial``) for bytes that are not whole JSON-object
        lines, or a size that falls inside a line.
    """
    left = size
    number = 0
    while left > 0:
        line = rows.readline(left)
        number += 1
        left -= len(line)
        if not line.endswith(b"\n"):
            raise damaged(partial, f"its record ends inside row {number:,}")
        try:
            row = json.loads(line.decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8 (NUL bytes, garbage), not JSON, or nested too deeply
            raise damaged(partial, f"row {number:,} is not a JSON line") from None
        if not isinstance(row, dict):
            raise damaged(partial, f"row {number:,} is not a JSON object")
        yield row
