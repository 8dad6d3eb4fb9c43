"""The failure kinds: why a wrong answer is wrong, one taxonomy for every evaluator of the package."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

__all__ = ["FAILURE_KINDS", "FailureKind", "count_failures"]


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
