"""Stopping a file run cleanly on SIGINT (Ctrl-C) or SIGTERM: between two rows, never mid-write.

:func:`deferred_interrupts` turns the first signal into a flag the row loop asks for between rows
(:func:`answer_eval.engine.runner.process_jsonl` then records a checkpoint and raises
:class:`Interrupted`); the command line installs :func:`raise_interrupted` for SIGTERM so that a
signal outside a run still ends it with exit code 143, as Ctrl-C ends it with 130.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "deferred_interrupts", "raise_interrupted"]

_STOPPABLE = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal: SIGINT (exit code 130) or SIGTERM (exit code 143).

    :param signum: The signal.
    :param checkpoint: The partial output kept for ``--resume``, if any.
    :param rows: Rows written before the stop.
    """

    def __init__(self, signum: int, checkpoint: Path | None = None, rows: int = 0) -> None:
        super().__init__(signum)
        self.signum = signum
        self.checkpoint = checkpoint
        self.rows = rows

    @property
    def exit_code(self) -> int:
        """128 plus the signal number, as a shell reports a process the signal ended."""
        return 128 + self.signum


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """A signal handler: raise :class:`Interrupted` (the command line's handler for SIGTERM)."""
    raise Interrupted(signum)


def _ours(handler: Any) -> bool:
    # Handlers that only end the program: taking them over within a run changes nothing else.
    return handler in (signal.default_int_handler, signal.SIG_DFL, raise_interrupted)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Callable[[], int | None]]:
    """Within the block, SIGINT and SIGTERM stop the work at the next safe point instead of at once.

    Yields a function that returns the signal received (``None`` until one is): the loop asks it
    between rows and stops cleanly. A second signal raises :class:`Interrupted` at once. Only
    signals left to their default action (or to :func:`raise_interrupted`) are taken over, only in
    the main thread; the previous handlers come back at the end of the block.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if received:
            raise Interrupted(signum)
        received.append(signum)

    previous: dict[int, Any] = {}
    for stoppable in _STOPPABLE:
        if _ours(signal.getsignal(stoppable)):
            previous[stoppable] = signal.signal(stoppable, handler)
    try:
        yield lambda: received[0] if received else None
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
