"""Stopping a file run cleanly on SIGINT (Ctrl-C) or SIGTERM: between two batches of rows, or at once while reading.

:func:`deferred_interrupts` turns the first signal into a flag (:class:`Interrupts`) the row loop
asks for between batches (:func:`answer_eval.engine.runner.process_jsonl` then records a checkpoint
and raises :class:`Interrupted`). While the loop only reads the input (nothing half done: no batch
being scored or written), a signal stops it at once instead, by raising :class:`ReadingStopped` out
of the read (a pipe that never sends, a row that never ends), and the loop stops at the last row
boundary as it would between batches. The command line installs :func:`raise_interrupted` for
SIGTERM so that a signal outside a run still ends it with exit code 143, as Ctrl-C ends it with 130.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "Interrupts", "ReadingStopped", "deferred_interrupts", "raise_interrupted"]

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


class ReadingStopped(Interrupted):
    """A signal that came while the run was only reading its input: the run stops at its last row boundary.

    Raised out of the read by the signal handler of :func:`deferred_interrupts` (see
    :meth:`Interrupts.enter_reading`); the row loop catches it and stops as between two batches.
    """


class Interrupts:
    """The signal a run received (``None`` until one came), and whether the run is only reading its input.

    Called, it returns the first signal received. Between :meth:`enter_reading` and
    :meth:`leave_reading` (the input being read, no batch half done) a first signal raises
    :class:`ReadingStopped` at once, from wherever the read is (a read that blocks, a row that never
    ends); elsewhere it is only noted, for the loop to ask at its next safe point. A second signal
    always raises :class:`Interrupted` at once.
    """

    def __init__(self) -> None:
        self.received: list[int] = []
        self.reading = False

    def __call__(self) -> int | None:
        """The first signal received, or ``None``."""
        return self.received[0] if self.received else None

    def enter_reading(self) -> None:
        """From here the run only reads: a signal stops it at once (one that came already raises now)."""
        self.reading = True
        if self.received:
            self.reading = False
            raise ReadingStopped(self.received[0])

    def leave_reading(self) -> None:
        """From here the run works on what it read (scores, writes): a signal waits for the next safe point."""
        self.reading = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler (see the class docstring)."""
        if self.received:
            raise Interrupted(signum)
        self.received.append(signum)
        if self.reading:
            self.reading = False
            raise ReadingStopped(signum)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[Interrupts]:
    """Within the block, SIGINT and SIGTERM stop the work at the next safe point instead of at once.

    Yields an :class:`Interrupts`: called, it returns the signal received (``None`` until one is),
    and the loop asks it between batches and stops cleanly; while the loop says it is only reading
    (:meth:`Interrupts.enter_reading`), a signal raises :class:`ReadingStopped` at once. A second
    signal raises :class:`Interrupted` at once. Only signals left to their default action (or to
    :func:`raise_interrupted`) are taken over, only in the main thread (elsewhere no signal is ever
    noted); the previous handlers come back at the end of the block.
    """
    interrupts = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield interrupts
        return
    previous: dict[int, Any] = {}
    for stoppable in _STOPPABLE:
        if _ours(signal.getsignal(stoppable)):
            previous[stoppable] = signal.signal(stoppable, interrupts.handle)
    try:
        yield interrupts
    finally:
        interrupts.reading = False
        for signum, before in previous.items():
            signal.signal(signum, before)
