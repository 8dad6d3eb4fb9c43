"""A generator's sync ``run`` with a deadline on the whole call, whatever the generator.

An HTTP client's timeout bounds each wait for bytes, not the whole reply: a server that sends one
byte every half second is never "timed out". The only bound that holds for any Haystack chat
generator, without reaching into it, is to wait for its ``run`` for so long and no longer.
:func:`call_with_deadline` runs it in a daemon thread of its own and waits in the event loop; at the
deadline (or when the wait is cancelled, a second Ctrl-C) the call is *abandoned*: the thread is
left to end by itself (a daemon, it never keeps the process alive at exit, and nothing joins it),
and :class:`Abandoned` counts the ones still running, so a server that holds every request open
is seen (:meth:`Abandoned.check`) before it holds thousands.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import os
import threading
from collections.abc import Callable
from typing import Any

__all__ = [
    "DEFAULT_DEADLINE",
    "MAX_DEADLINE",
    "Abandoned",
    "DeadlinePassed",
    "call_with_deadline",
    "check_seconds",
    "generator_deadline",
]

DEFAULT_DEADLINE = 600.0
"""Seconds a request may take when neither the caller nor the generator says (the OpenAI SDK's own default)."""

MAX_DEADLINE = 86_400.0
"""The longest deadline accepted, a day (a socket cannot wait much longer; a longer one means none)."""

_OPENAI = frozenset({"OpenAIChatGenerator", "AzureOpenAIChatGenerator"})


class DeadlinePassed(TimeoutError):
    """The generator gave no complete reply within the deadline (a transient failure: retried)."""


def check_seconds(name: str, value: Any, *, zero: bool = False, optional: bool = False) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``value`` is a finite number of seconds, positive (or 0 with ``zero``).

    :param name: What to call it in the message.
    :param optional: Whether ``None`` is accepted.
    """
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ValueError(f"{name} must be a finite number of seconds {'>= 0' if zero else 'above 0'}, got {value!r}")


def generator_deadline(generator: Any, timeout: float | None) -> float:
    """The deadline of one call: ``timeout``, else the generator's own ``timeout``, else :data:`DEFAULT_DEADLINE`.

    OpenAI's generators without one wait ``OPENAI_TIMEOUT`` seconds (30 by default) for each read:
    the same figure bounds the whole call.
    """
    if timeout is not None:
        check_seconds("timeout", timeout)
        if timeout > MAX_DEADLINE:
            raise ValueError(f"timeout must be at most {MAX_DEADLINE:g} seconds (a day), got {timeout!r}")
        return float(timeout)
    own = getattr(generator, "timeout", None)
    if own is None and {kind.__name__ for kind in type(generator).__mro__} & _OPENAI:
        try:
            own = float(os.environ.get("OPENAI_TIMEOUT", "30.0"))
        except ValueError:
            own = None
    if isinstance(own, int | float) and not isinstance(own, bool) and math.isfinite(own) and own > 0:
        return min(float(own), MAX_DEADLINE)
    return DEFAULT_DEADLINE


class Abandoned:
    """The calls given up at their deadline whose threads still run; thread-safe."""

    def __init__(self) -> None:
        """None yet."""
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def add(self, thread: threading.Thread) -> None:
        """Count ``thread`` as abandoned (until it ends)."""
        with self._lock:
            self._threads.add(thread)

    def running(self) -> int:
        """How many abandoned calls are still running."""
        with self._lock:
            self._threads = {thread for thread in self._threads if thread.is_alive()}
            return len(self._threads)


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():  # given up already (the deadline, a cancellation): nobody reads it
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


async def call_with_deadline(call: Callable[[], Any], seconds: float, abandoned: Abandoned) -> Any:
    """``call()`` in a daemon thread, in a copy of the caller's context; its result, or :class:`DeadlinePassed`.

    A call given up (the deadline, or this coroutine cancelled) is counted in ``abandoned`` while
    its thread runs on.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def work() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (call(), None)
        except Exception as exc:  # noqa: BLE001 - handed to the waiting coroutine, which decides
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run ended without this reply
            loop.call_soon_threadsafe(_settle, done, *outcome)

    # The caller's context goes with the call: what it logs is told apart by run (haystack_warnings).
    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(work,), name="answer-eval-llm-call", daemon=True)
    thread.start()
    try:
        # asyncio.wait, not wait_for: a TimeoutError the generator raises is its own, not the deadline.
        await asyncio.wait({done}, timeout=seconds)
    except asyncio.CancelledError:
        done.cancel()
        abandoned.add(thread)
        raise
    if not done.done():
        done.cancel()
        abandoned.add(thread)
        raise DeadlinePassed(f"no complete reply within {seconds:g} s (the deadline of the whole request)")
    return done.result()
