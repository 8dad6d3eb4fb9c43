"""What goes wrong, on the ground floor: the errors every layer raises and catches, and why a wrong answer is wrong.

This module imports nothing of the package's, so any module may import it without an import circle.

The hierarchy: :class:`InputError` (a bad input, with the file and line it was found on) is the base of
:class:`RowsKept` (a stop that is no row's fault) and :class:`ItemError` (one item an evaluator cannot
score); :class:`OptionError` names a bad option; :class:`DuplicateKeyError` a JSON object that gives a
key twice; :class:`CalibrationFileError` a judge calibration that cannot be used; :class:`NothingGraded`
a run that went to its end with nothing to show for it (the command line exits 3).

The failure kinds (:class:`FailureKind`, :data:`FAILURE_KINDS`) are one taxonomy of why a wrong
answer is wrong, for every evaluator of the package.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = [
    "FAILURE_KINDS",
    "CalibrationFileError",
    "DuplicateKeyError",
    "FailureKind",
    "InputError",
    "ItemError",
    "NothingGraded",
    "OptionError",
    "RowsKept",
    "StoppedAfter",
    "count_failures",
]


class InputError(ValueError):
    """Bad input, with the file and line it was found on when there is one."""

    skippable = True
    """Whether ``--skip-invalid`` may skip the line it was found on (a malformed line: yes; a refused
    option such as a column the output would overwrite: no)."""
    keeps_rows = True
    """Whether a run it stops keeps the rows done before it for ``--resume`` (a bad line, which can be
    mended before resuming: yes; a refused option, which a resume with other options cannot use: no)."""

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None, line: int | None = None) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        where = ":".join(str(part) for part in (self.path, line) if part is not None)
        super().__init__(f"{where}: {message}" if where else message)


class RowsKept(InputError):
    """A stop that is no row's fault (an LLM grader became unavailable mid-run): never skipped as an invalid line.

    The run keeps its checkpoint at the last row boundary, as every failure does (see
    :func:`answer_eval.engine.runner.process_jsonl`), so that ``--resume`` continues without
    paying again for the rows already graded.
    """

    skippable = False


class StoppedAfter(RowsKept):
    """A stop in the middle of a batch, after its first ``done`` items were scored (``columns``: the batch's).

    The rows of those items are written and kept for ``--resume``; the run stops at the next.
    """

    def __init__(self, message: str, done: int, columns: dict[str, list[Any]]) -> None:
        """Stopped for ``message`` after the first ``done`` items of the batch's ``columns``."""
        super().__init__(message)
        self.done = done
        self.columns = columns


class ItemError(InputError):
    """One item an evaluator cannot score: which input (``role``), which item (``position``), why (``message``).

    Each layer places it: the command line as ``file:line: field 'answers': ...``, the Dask engine
    by shard and row, a component by position. ``role`` is ``None`` when no one input is to blame.
    """

    def __init__(self, message: str, role: str | None = None, position: int = 0) -> None:
        super().__init__(message)
        self.role = role
        self.position = position


class OptionError(ValueError):
    """A bad option value: which option (its field name) and why; each layer names it its own way (a flag)."""

    def __init__(self, option: str, detail: str) -> None:
        super().__init__(f"{option} {detail}")
        self.option = option
        self.detail = detail


class DuplicateKeyError(ValueError):
    """A JSON object that gives a key twice (``inputs.jsonl.decode_json`` refuses it; ``key`` is the key)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class CalibrationFileError(ValueError):
    """A calibration file (or dict) that cannot be used: damaged, hand-edited wrong, or made for another judge."""


class NothingGraded(RuntimeError):
    """A run that went to its end and gave nothing to use: no item graded, or no request reached the grader.

    Raised by the command line after the summary is printed and the output written (what was paid
    for is kept), so that a script or a CI job cannot take the run for a success (exit 3).
    """


class FailureKind:
    """The failure kinds a wrong answer can get, as plain strings."""

    PARSE_FAILURE = "parse_failure"
    """No answer text: the output is not a string and carries none, or the text is blank."""
    BUDGET_STOP = "budget_stop"
    """A limit stopped the run: a partial answer with a limit note, or a length finish reason."""
    REFUSAL = "refusal"
    """A step of the run was refused or content-filtered, or the output is a refused result."""
    NOT_IN_DOCUMENT = "not_in_document"
    """An answer was expected and the reader said the document does not hold one."""
    WRONG = "wrong"
    """Anything else, an answer given to an unanswerable question included."""
    ERROR = "error"
    """The output is a failed result: an exception, or a mapping with ``error`` or ``status: error``."""
    NO_LOGPROBS = "no_logprobs"
    """An LLM grader scoring by log-probabilities (``scoring="logprobs"``) got a reply it read, but no usable
    log-probabilities of the score's token (the server returned none, malformed ones, or the score spans several
    tokens). Only that grader gives it, so it is not in :data:`FAILURE_KINDS`."""


FAILURE_KINDS = (
    FailureKind.PARSE_FAILURE,
    FailureKind.BUDGET_STOP,
    FailureKind.REFUSAL,
    FailureKind.NOT_IN_DOCUMENT,
    FailureKind.WRONG,
    FailureKind.ERROR,
)
"""Every failure kind the package assigns, in the order they are tried."""


def count_failures(kinds: Iterable[str | None]) -> dict[str, int]:
    """Count failure kinds: every standard kind is present (0 when absent), carried kinds appended."""
    counts = dict.fromkeys(FAILURE_KINDS, 0)
    # Counter counts in C and keeps first-seen order, so carried kinds are appended as they appear.
    for kind, number in Counter(kinds).items():
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + number
    return counts
