"""How many requests a server gets at once, and what a request given up at its deadline says about it.

A request given up still occupies the server (one that queues requests answers it in its turn,
whoever waits for it), so :class:`Slots` counts it against the run's concurrency until it ends:
the requests open at the server are never more than the limit. What ended, and when, tells a
server that *queues* (it answered other requests, one at a time, while this one waited: the
grader's :class:`Pace` halves its limit, and the item's failure says so) from one that *holds
requests open* (it answers nothing for a whole deadline more while every open request is one given
up: :class:`HeldOpen`, and the run stops, :meth:`Pace.held_open`). The bookkeeping is the server's
(:func:`~answer_eval.llm.deadline.server_calls`): a jury of two judges on one local server shares
its one queue, and an answer to either judge shows that the server is serving.

A run that stops keeps what the server answered when asked to (:func:`keeping_answered`): a
component has no ``--resume``, so raising would throw the answered items away.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TypeVar

from answer_eval.llm.call_failures import GraderUnavailable, ServerMisbehaves
from answer_eval.llm.deadline import Abandoned, DeadlinePassed

__all__ = [
    "HeldOpen",
    "Kept",
    "Pace",
    "RunStop",
    "Slots",
    "keeping_answered",
    "keeps",
    "one_stop",
    "run_stop",
    "seated",
]

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
T = TypeVar("T")
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
        process (any caller's: :func:`~answer_eval.llm.deadline.server_calls`) was queued behind them,
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
