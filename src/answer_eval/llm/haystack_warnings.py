"""Haystack's warning for each cut reply, counted for the run that caused it instead of printed.

Haystack's ``OpenAIChatGenerator`` (and its Azure subclass) logs a warning for every reply cut
by the token limit (``finish_reason: length``) or by the content filter: in one graded file,
dozens of lines on standard error, over the progress bar. A grader already reads those replies
as data (``budget_stop``, ``refusal``, or graded when still readable) and counts them
(``cut_replies``), so while a run is on, :func:`counting_warnings` takes that warning off the
generator's logger and counts it in the run's :class:`WarningCount` instead.

The filter is the run's only: a warning is taken only when it was logged in the context of a run
(the generator's call runs in a thread that carries its caller's context, see
:func:`answer_eval.llm.deadline.call_with_deadline`), so the same generator used by other code at
the same time warns as it always did. Runs may overlap, in threads or tasks: the filter is put on
the logger when the first starts and taken off when the last ends, under a lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["LOGGERS", "WarningCount", "counting_warnings"]

LOGGERS = ("haystack.components.generators.chat.openai",)
"""The loggers whose cut-reply warnings are counted (the module that logs them, whatever subclass warns)."""

_CUT_REASONS = frozenset({"length", "content_filter"})


class WarningCount:
    """The warnings taken off the log during one run, by finish reason; safe across threads."""

    def __init__(self) -> None:
        """No warning yet."""
        self._lock = threading.Lock()
        self.by_reason: dict[str, int] = {}

    def add(self, reason: str) -> None:
        """Count one warning for a reply that stopped for ``reason``."""
        with self._lock:
            self.by_reason[reason] = self.by_reason.get(reason, 0) + 1

    @property
    def total(self) -> int:
        """Every warning counted."""
        with self._lock:
            return sum(self.by_reason.values())


_COUNT: ContextVar[WarningCount | None] = ContextVar("answer_eval_haystack_warnings", default=None)
_LOCK = threading.Lock()
_RUNS = 0


def _take_cut_reply_warning(record: logging.LogRecord) -> bool:
    """A logging filter: ``False`` (taken, counted) for a cut-reply warning logged within a run."""
    reason = getattr(record, "finish_reason", None)
    count = _COUNT.get()
    if count is None or record.levelno != logging.WARNING or reason not in _CUT_REASONS:
        return True
    count.add(str(reason))
    return False


@contextmanager
def counting_warnings(count: WarningCount) -> Iterator[WarningCount]:
    """Within the block, Haystack's cut-reply warnings logged in this context are counted in ``count``, not shown."""
    global _RUNS
    with _LOCK:
        if _RUNS == 0:
            for name in LOGGERS:
                logging.getLogger(name).addFilter(_take_cut_reply_warning)
        _RUNS += 1
    token = _COUNT.set(count)
    try:
        yield count
    finally:
        _COUNT.reset(token)
        with _LOCK:
            _RUNS -= 1
            if _RUNS == 0:
                for name in LOGGERS:
                    logging.getLogger(name).removeFilter(_take_cut_reply_warning)
