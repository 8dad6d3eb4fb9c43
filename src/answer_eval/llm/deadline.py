"""A generator's sync ``run`` with a deadline on the whole call, whatever the generator.

An HTTP client's timeout bounds each wait for bytes, not the whole reply: a server that sends one
byte every half second is never "timed out". The only bound that holds for any Haystack chat
generator, without reaching into it, is to wait for its ``run`` for so long and no longer.
:func:`call_with_deadline` runs it in a daemon thread of a :class:`CallThreads` pool and waits in
the event loop; at the deadline (or when the wait is cancelled, a second Ctrl-C) the call is
*abandoned*: its thread is left to end the call by itself (a daemon, it never keeps the process
alive at exit, and nothing joins it), another thread serves the next call, and :class:`Abandoned`
counts the calls still running, so a server that holds every request open is seen
(:meth:`Abandoned.running`) before it holds thousands.

A call given up still occupies the server (a server that queues requests answers it in its turn,
whoever waits for it): :class:`Abandoned` counts it until it ends, and tells when calls last ended,
for :mod:`answer_eval.llm.pacing` to keep the requests open at the server within the limit and to
tell a server that queues from one that holds requests open. That bookkeeping is the server's,
shared by every caller in the process that sends to its URL (:func:`server_calls`).

The threads are kept between calls (each ends after :data:`IDLE_SECONDS` without one): a thread
started per call costs its start and one more hand-over of the GIL per request, which at a few
hundred requests a second was a third of the time a request took beyond the server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from answer_eval.evaluators.base import shown_number
from answer_eval.llm.call_failures import status_of

__all__ = [
    "DEFAULT_DEADLINE",
    "IDLE_SECONDS",
    "MAX_DEADLINE",
    "Abandoned",
    "CallThreads",
    "DeadlinePassed",
    "call_with_deadline",
    "check_seconds",
    "generator_deadline",
    "in_daemon_thread",
    "server_calls",
]

T = TypeVar("T")

DEFAULT_DEADLINE = 600.0
"""Seconds a request may take when neither the caller nor the generator says (the OpenAI SDK's own default)."""

MAX_DEADLINE = 86_400.0
"""The longest deadline accepted, a day (a socket cannot wait much longer; a longer one means none)."""

IDLE_SECONDS = 10.0
"""Seconds a call thread waits for another call before it ends."""

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
    if not _finite(value) or value < 0 or (value == 0 and not zero):
        shown = shown_number(value, 40)  # an int of 400 digits is shown cut
        raise ValueError(f"{name} must be a finite number of seconds {'>= 0' if zero else 'above 0'}, got {shown}")


def _finite(value: float) -> bool:
    """Whether ``value`` is a finite float, or an int a float holds (one of 400 digits is not: no float is that big)."""
    try:
        return math.isfinite(value)
    except OverflowError:  # math.isfinite converts an int to a float first
        return False


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
    if isinstance(own, int | float) and not isinstance(own, bool) and _finite(own) and own > 0:
        return min(float(own), MAX_DEADLINE)
    return DEFAULT_DEADLINE


class _Call:
    """One call handed to a thread: whether it has ended (set by :meth:`Abandoned.finish`)."""

    __slots__ = ("ended",)

    def __init__(self) -> None:
        self.ended = False


class Abandoned:
    """The calls given up at their deadline that still run, and what every call's end said; thread-safe.

    Besides the calls still running, it counts the calls the server *answered* (a reply, or an
    HTTP error: the server was serving them), in time or after their deadline, and keeps the time
    of the last call given up or ended; each listener (:meth:`listen`) is told when a call given up ends.
    """

    def __init__(self) -> None:
        """None yet."""
        self._calls: set[_Call] = set()
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        self.answered = 0
        """Calls the server answered so far (read without the lock: an int, only ever growing)."""
        self.last_event = time.monotonic()
        """``time.monotonic()`` when a call was last given up or ended."""

    def add(self, call: _Call) -> None:
        """Count ``call`` as abandoned, until it ends (not at all when it has ended already)."""
        with self._lock:
            if not call.ended:
                self._calls.add(call)
                self.last_event = time.monotonic()

    def finish(self, call: _Call, answered: bool = False) -> None:
        """``call`` has ended (``answered``: the server sent a reply or an HTTP error): no longer counted."""
        with self._lock:
            call.ended = True
            given_up = call in self._calls
            self._calls.discard(call)
            self.answered += int(answered)
            self.last_event = time.monotonic()
            # A call in time gives its slot back in its run's loop; only the end of one given up is news there.
            listeners = list(self._listeners) if given_up else []
        for listener in listeners:  # outside the lock: a listener may read running()
            listener()

    def running(self) -> int:
        """How many abandoned calls are still running."""
        with self._lock:
            return len(self._calls)

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` (from the ending call's thread) whenever a call given up ends; returns what stops it."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return stop


_SERVERS: weakref.WeakValueDictionary[str, Abandoned] = weakref.WeakValueDictionary()
_SERVERS_LOCK = threading.Lock()


def server_calls(url: object) -> Abandoned:
    """The :class:`Abandoned` of the server at ``url``, shared by every caller sending there while one holds it.

    Without a URL (OpenAI's own API, a generator that names none) each caller has one of its own.
    """
    if not isinstance(url, str) or not url.strip():
        return Abandoned()
    key = url.strip().rstrip("/")
    with _SERVERS_LOCK:
        calls = _SERVERS.get(key)
        if calls is None:
            calls = Abandoned()
            _SERVERS[key] = calls
        return calls


class CallThreads:
    """Daemon threads that run calls, as many as are running at once; an idle one ends after ``idle_seconds``.

    A call never waits for a thread: when none is idle, one is started. A thread busy with an
    abandoned call is simply not idle, so a server that holds calls open never starves the others.
    """

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        """No thread yet."""
        self._tasks: queue.SimpleQueue[Callable[[], Callable[[], None] | None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # threads waiting for a task, less the tasks already promised to them
        self._idle_seconds = idle_seconds

    def submit(self, task: Callable[[], Callable[[], None] | None]) -> None:
        """Run ``task`` in an idle thread, else in a new one; then the callable it returns, if any.

        ``task`` must not raise an ``Exception``. What it returns runs once its thread counts as
        idle again: handing a result back there means that the call it lets start next finds the
        thread free, rather than starting one more.
        """
        with self._lock:
            self._tasks.put(task)
            if self._idle:
                self._idle -= 1  # an idle thread takes it
                return
        threading.Thread(target=self._serve, name="answer-eval-llm-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                task = self._tasks.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    # A task put since the wait ended was promised to an idle thread: this one takes it.
                    if self._tasks.empty():
                        self._idle -= 1
                        return
                continue
            then = task()  # never raises an Exception; anything else ends this thread, which was not counted idle
            with self._lock:
                self._idle += 1
            if then is not None:
                with contextlib.suppress(Exception):  # a thread counted idle must reach the next wait
                    then()


def _settle(done: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if done.done():  # given up already (the deadline, a cancellation): nobody reads it
        return
    if error is not None:
        done.set_exception(error)
    else:
        done.set_result(result)


def _hand_over(loop: asyncio.AbstractEventLoop, done: asyncio.Future[Any], outcome: tuple[Any, Any]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: the run ended without this reply
        loop.call_soon_threadsafe(_settle, done, *outcome)


async def call_with_deadline(
    call: Callable[[], Any], seconds: float, abandoned: Abandoned, threads: CallThreads | None = None
) -> Any:
    """``call()`` in a daemon thread of ``threads``; its result, or :class:`DeadlinePassed` after ``seconds``.

    Without ``threads``, a thread of the call's own. A call given up (the deadline, or this
    coroutine cancelled) is counted in ``abandoned`` while it runs on.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    token = _Call()

    def work() -> Callable[[], None]:
        outcome: tuple[Any, BaseException | None]
        answered = False
        try:
            outcome = (call(), None)
            answered = True
        except Exception as exc:  # noqa: BLE001 - handed to the waiting coroutine, which decides
            outcome = (None, exc)
            answered = status_of(exc) is not None  # an HTTP error: the server was serving it, not holding it
        finally:
            abandoned.finish(token, answered)
        return lambda: _hand_over(loop, done, outcome)

    # The caller's context goes with the call: what it logs is told apart by run (haystack_warnings).
    context = contextvars.copy_context()
    (threads or CallThreads(0.0)).submit(lambda: context.run(work))
    try:
        # asyncio.wait, not wait_for: a TimeoutError the generator raises is its own, not the deadline.
        await asyncio.wait({done}, timeout=seconds)
    except asyncio.CancelledError:
        done.cancel()
        abandoned.add(token)
        raise
    if not done.done():
        done.cancel()
        abandoned.add(token)
        raise DeadlinePassed(f"no complete reply within {seconds:g} s (the deadline of the whole request)")
    return done.result()


def in_daemon_thread(work: Callable[[], T], name: str) -> T:
    """``work()`` run in a daemon thread of its own, waited for: its result, or its exception raised here.

    A daemon thread, so that a call given up at its deadline inside ``work`` never holds the process at exit.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def in_thread() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=in_thread, name=name, daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]
