"""The limits of a request: a deadline on the whole call, the requests a server gets at once, and a run's stop.

An HTTP client's timeout bounds each wait for bytes, not the whole reply (a server sending one byte
every half second is never "timed out"), so the only bound that holds for any Haystack chat
generator is to wait for its ``run`` so long and no longer. :func:`call_with_deadline` runs it in a
daemon thread of a :class:`CallThreads` pool (threads kept between calls, each ending after
:data:`IDLE_SECONDS` idle: a thread per call cost a third of a request's own time at a few hundred a
second) and waits in the event loop; at the deadline, or a second Ctrl-C, the call is *abandoned*:
its thread ends it alone (a daemon, never joined) and another serves the next call.

A call given up still occupies the server (one that queues answers it in its turn), so
:class:`Abandoned` counts it until it ends and :class:`Slots` counts it against the run's
concurrency: the requests open at the server are never more than the limit. What ended, and when,
tells a server that *queues* (it answered others while this one waited: the grader's :class:`Pace`
halves its limit, and the item's failure says so) from one that *holds requests open* (nothing
answered for a whole deadline more while every open request is one given up: :class:`HeldOpen`,
and the run stops, :meth:`Pace.held_open`). That bookkeeping is the server's, shared by every
caller in the process that sends to its URL (:func:`server_calls`): a jury of two judges on one
local server shares its one queue.

A run that stops keeps what the server answered when asked to (:func:`keeping_answered`): a
component has no ``--resume``, so raising would throw the answered items away.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import logging
import math
import os
import queue
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from answer_eval.evaluators.base import shown_number
from answer_eval.llm.generators import GraderUnavailable, ServerMisbehaves, status_of

__all__ = [
    "DEFAULT_DEADLINE",
    "MAX_DEADLINE",
    "Abandoned",
    "CallThreads",
    "DeadlinePassed",
    "HeldOpen",
    "Pace",
    "RunStop",
    "Slots",
    "call_with_deadline",
    "check_seconds",
    "generator_deadline",
    "in_daemon_thread",
    "keeping_answered",
    "keeps",
    "one_stop",
    "run_stop",
    "seated",
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


logger = logging.getLogger("answer_eval.llm.calls")  # the caller's warnings, under the caller's name


class HeldOpen(Exception):
    """Every request open at the server was given up at its deadline, and none ended for a whole deadline more.

    :param open_calls: The requests still open.
    """

    def __init__(self, open_calls: int) -> None:
        """``open_calls`` requests held open."""
        super().__init__(f"{open_calls} requests held open")
        self.open_calls = open_calls


class Slots:
    """One run's request slots, in its event loop: at most ``limit()`` requests open at the server.

    A request holds a slot from :meth:`take` to :meth:`give`; a call given up at its deadline gives
    its slot back but is counted (``abandoned.running()``) until it ends, so it still keeps a
    request from being sent. A request that waits for a slot while every open request is one given
    up waits ``patience`` seconds from the last call given up or ended, no longer: :class:`HeldOpen`.
    """

    def __init__(self, abandoned: Abandoned, limit: Callable[[], int], patience: float) -> None:
        """Slots of ``limit()`` (read at each wait: it may be lowered while the run goes on)."""
        self.in_flight = 0
        self._abandoned, self._limit, self._patience = abandoned, limit, patience
        self._queue: collections.deque[object] = collections.deque()  # the requests waiting, in the order they came
        self._loop = asyncio.get_running_loop()
        self._changed: asyncio.Future[None] = self._loop.create_future()
        self._unlisten = abandoned.listen(self._from_thread)

    async def take(self) -> None:
        """Wait for a free slot, in turn, and take it; :class:`HeldOpen` when the server holds every open request.

        In turn: the requests take slots in the order they asked (the budget goes to the first items).
        """
        ticket = object()
        self._queue.append(ticket)
        try:
            while self._queue[0] is not ticket or self._full():
                wait: float | None = None  # a request in flight ends or is given up by its deadline: an event comes
                if self.in_flight == 0 and self._full():
                    wait = self._patience - (time.monotonic() - self._abandoned.last_event)
                    if wait <= 0:
                        raise HeldOpen(self._abandoned.running())
                await asyncio.wait({self._changed}, timeout=wait)
        finally:
            self._queue.remove(ticket)
            self.changed()  # the next in line looks again
        self.in_flight += 1

    def _full(self) -> bool:
        return self.in_flight + self._abandoned.running() >= self._limit()

    def give(self) -> None:
        """The request ended or was given up: its slot is free (a call given up stays counted by ``abandoned``)."""
        self.in_flight -= 1
        self.changed()

    def changed(self) -> None:
        """Wake the requests waiting for a slot, to look again."""
        if not self._changed.done():
            self._changed.set_result(None)
        self._changed = self._loop.create_future()

    def close(self) -> None:
        """The run has ended: no longer told of calls that end."""
        self._unlisten()

    def _from_thread(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run ended, nobody waits
            self._loop.call_soon_threadsafe(self.changed)


@dataclass
class Kept:
    """What :func:`keeping_answered` saw: the stop of a run that kept what was answered (``None``: none stopped)."""

    stop: GraderUnavailable | None = None


_KEEPS: ContextVar[Kept | None] = ContextVar("answer_eval_llm_keeps_answered", default=None)


@contextlib.contextmanager
def keeping_answered() -> Iterator[Kept]:
    """Within it, a run that stops (:class:`GraderUnavailable`) after the server answered some request keeps them.

    The items not asked yet are ``error`` (``not sent: the run stopped: ...``), a warning says so,
    and the run returns; a stop before any reply still raises. What a component's run uses: it
    has no ``--resume`` to keep the items graded for, so raising would throw them away. The
    command line uses it too, and then stops after writing the rows graded before the first
    failed one (:class:`Kept` says whether a run stopped).
    """
    with _within(_KEEPS, Kept()) as kept:
        yield kept


def keeps() -> Kept | None:
    """The :class:`Kept` of the :func:`keeping_answered` around this code (``None``: a stop raises)."""
    return _KEEPS.get()


@dataclass
class RunStop:
    """A run's stop, and which of its runs the server answered; shared by the runs of a panel (:func:`one_stop`).

    :param halted: The first failure that stopped the run (``None``: none): no request is sent after it.
    :param judge: The judge (:func:`seated`) whose request met it (``None``: not a panel's).
    :param runs: The runs sharing it (one, or a panel's judges).
    :param answered: The runs (by ``id``) the server answered at least once.
    """

    halted: GraderUnavailable | None = None
    judge: int | None = None
    runs: int = 0
    answered: set[int] = field(default_factory=set)

    def halt(self, stop: GraderUnavailable) -> None:
        """Stop with ``stop``, unless stopped already (the first stop is the one said)."""
        if self.halted is None:
            self.halted, self.judge = stop, _JUDGE.get()

    @property
    def keeps_answers(self) -> bool:
        """Whether a stop keeps what was answered: every run sharing it was answered (a panel: every judge).

        A panel one judge of which was never answered has graded no item as the panel asked; its
        stop raises, as a single grader's before its first answer does.
        """
        return 0 < self.runs == len(self.answered)


_PANEL: ContextVar[RunStop | None] = ContextVar("answer_eval_llm_panel_stop", default=None)
_JUDGE: ContextVar[int | None] = ContextVar("answer_eval_llm_judge", default=None)
V = TypeVar("V")


@contextlib.contextmanager
def one_stop() -> Iterator[RunStop]:
    """Within it, the runs started share one :class:`RunStop`: the judges of a panel stop together.

    A judge the server stops serving stops every judge, so no item is graded by the others alone as
    if it were the panel's; and the stop keeps what was answered only once every judge was answered
    (:attr:`RunStop.keeps_answers`).
    """
    with _within(_PANEL, RunStop()) as stop:
        yield stop


@contextlib.contextmanager
def _within(variable: ContextVar[V | None], value: V) -> Iterator[V]:
    """``variable`` set to ``value`` for the block, and reset after it."""
    token = variable.set(value)
    try:
        yield value
    finally:
        variable.reset(token)


def run_stop() -> RunStop:
    """The :class:`RunStop` of the panel around this code (:func:`one_stop`), or a new one of the run's own."""
    stop = _PANEL.get() or RunStop()
    stop.runs += 1
    return stop


async def seated(judge: int, work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` as judge number ``judge`` of a panel (in its own task): a stop it meets names that judge."""
    _JUDGE.set(judge)  # in this task's own copy of the context
    return await work()


class Pace:
    """A grader's pace at one server: its request limit, lowered each time the server is seen queueing.

    :param concurrency: The limit to start from (the grader's ``concurrency``).
    :param timeout: The deadline of one request, in seconds.
    :param abandoned: The server's calls given up and answered (shared by every grader sending to it).
    :param where: The server, in words, for messages (without credentials).
    """

    def __init__(self, concurrency: int, timeout: float, abandoned: Abandoned, where: Callable[[], str]) -> None:
        """Start at ``concurrency``."""
        self.limit = concurrency
        """Requests open at the server at most: ``concurrency``, halved each time the server is seen queueing."""
        self.lowered = 0  # times the limit was lowered: a request sent before the last lowering does not lower it
        self.timeout, self.abandoned, self.where = timeout, abandoned, where

    def slots(self) -> Slots:
        """One run's request slots at this pace (the limit read at each wait: it may be lowered meanwhile)."""
        return Slots(self.abandoned, lambda: self.limit, self.timeout)

    def held_open(self, held: HeldOpen) -> ServerMisbehaves:
        """The stop of a run whose server holds every open request (:class:`HeldOpen`), saying what to check."""
        before = self.abandoned.answered
        earlier = f" (it answered {before} requests before)" if before else ""
        return ServerMisbehaves(
            f"{held.open_calls} requests to the server are still open after their deadline of {self.timeout:g} s, "
            f"and it answered no request in the {self.timeout:g} s since{earlier}: it sends its replies too "
            "slowly (a byte at a time) or holds them open. The run stops rather than wait; check the server, or "
            f"give a longer timeout if one reply takes it over {2 * self.timeout:g} s"
        )

    def given_up(self, exc: Exception, others: int, lowered: int) -> Exception:
        """The failure of a request that timed out, saying why; lowers the limit of a server that queues.

        Timed out: given up at its deadline, or the generator's own timeout (a read that waited
        its ``timeout`` for a byte: what a queued request meets when the deadline is longer).

        The rule: a request given up while the server answered ``others`` (> 0) requests of this
        process (any caller's: :func:`~answer_eval.llm.call_limits.server_calls`) was queued behind them,
        not held open; when it was sent after the last lowering (``lowered``: the requests sent
        before it were sent under the old limit), :attr:`limit` is halved (down to 1) for this
        grader's later requests, this run's and the next ones', and a warning says so. It is never
        raised again: a server found queueing stays so.
        """
        if not others:
            if not isinstance(exc, DeadlinePassed):
                return exc  # the generator's own words
            return DeadlinePassed(
                f"{exc}, and no other request was answered meanwhile: the server takes longer than that per reply, "
                "or sends it a byte at a time (give a longer timeout, or check the server)"
            )
        if lowered == self.lowered and self.limit > 1:
            before, self.limit = self.limit, max(1, self.limit // 2)
            self.lowered += 1
            where = self.where()
            logger.warning(
                "The server (%s) answered %d other request(s) while one waited past its deadline of %g s: it queues "
                "requests, serving fewer at once than sent. Concurrency lowered from %d to %d for this grader; "
                "to avoid these timeouts give concurrency=%d (--concurrency) or a longer timeout (--timeout)",
                where,
                others,
                self.timeout,
                before,
                self.limit,
                self.limit,
            )
        why = (
            f", while the server answered {others} other(s): it queues requests, serving fewer at once than sent "
            f"(concurrency now {self.limit}; give a lower concurrency or a longer timeout)"
        )
        if isinstance(exc, DeadlinePassed):
            return DeadlinePassed(f"{exc}{why}")
        return TimeoutError(f"{type(exc).__name__}: {exc}{why}")  # still a timeout: retried, counted unanswered
