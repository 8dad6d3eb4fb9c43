"""Asking a Haystack chat generator for replies: concurrency, retries, a call budget, a cache, usage, warnings.

Haystack's warning for each cut reply, counted for the run that caused it instead of printed.

Haystack's ``OpenAIChatGenerator`` (and its Azure subclass) logs a warning for every reply cut
by the token limit (``finish_reason: length``) or by the content filter: in one graded file,
dozens of lines on standard error, over the progress bar. A grader already reads those replies
as data (``budget_stop``, ``refusal``, or graded when still readable) and counts them
(``cut_replies``), so while a run is on, :func:`counting_warnings` takes that warning off the
generator's logger and counts it in the run's :class:`WarningCount` instead.

The filter is the run's only: a warning is taken only when it was logged in the context of a run
(the generator's call runs in a thread that carries its caller's context, see
:func:`answer_eval.llm.call_limits.call_with_deadline`), so the same generator used by other code at
the same time warns as it always did. Runs may overlap, in threads or tasks: the filter is put on
the logger when the first starts and taken off when the last ends, under a lock.

Asking a Haystack chat generator for replies: bounded concurrency, retries, a call budget, a cache, usage.

:class:`ChatCaller` wraps any Haystack chat generator (an object with ``run(messages=...)`` that
returns ``{"replies": [ChatMessage, ...]}``). One implementation serves sync and async callers:
the work is a coroutine, run in the caller's event loop (``run_async``) or in one of its own
(``run_sync``), and the generator's sync ``run`` is called in threads the caller keeps
(:class:`~answer_eval.llm.call_limits.CallThreads`), at most ``concurrency`` requests at once. Each
run has its own limit, budget and usage, so two runs of one component never share them.

Each request has a deadline on the whole call (:mod:`answer_eval.llm.call_limits`): a reply that
trickles in is given up at it, as a slow one is, whatever the generator's own timeouts do. How
many requests are open at once, and what one given up says about its server (it queues: the
concurrency is halved; it holds requests open: the run stops), is :mod:`answer_eval.llm.call_limits`'s.

Failures are data. A request that fails with a transient error (HTTP 408, 409, 429 or 5xx, a
timeout or the deadline, a lost connection) is retried with exponential backoff, a bounded number
of times; any other error, or the last transient one, makes the item's :attr:`Drawn.failure`
``error``. What no item could get past stops the run (:class:`GraderUnavailable`): a refused key or
an unknown model (HTTP 401, 403, 404), a server that answers with something other than a chat
completion (a stream, a web page), or one that holds requests open past their deadline. Once the
budget is spent, the items still waiting get ``budget_stop``. Nothing loops unbounded.

Only what the grader could read is cached (the caller says what that is: ``draw(readable=...)``),
so a failed reply is asked again on the next run rather than replayed. Every reply's text and every
error's words go through a :class:`answer_eval.llm.generators.Redactor` first: the API key, any Bearer
token and the server URL's password are never cached, returned, written or printed.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from answer_eval.errors import FailureKind
from answer_eval.llm.batches import Served, current_book, earlier_tries
from answer_eval.llm.call_limits import (
    Abandoned,
    CallThreads,
    HeldOpen,
    Pace,
    RunStop,
    Slots,
    call_with_deadline,
    check_seconds,
    generator_deadline,
    in_daemon_thread,
    keeps,
    run_stop,
    server_calls,
)
from answer_eval.llm.generators import (
    GraderUnavailable,
    Redactor,
    backoff_wait,
    chat_messages,
    cut_words,
    describe_generator,
    generator_secrets,
    refuses_option,
    sent_options,
    server_words,
    stop_run,
    timed_out,
    transient,
    unreachable,
    words_for,
)
from answer_eval.llm.reply_cache import ReplyCache, cache_key
from answer_eval.llm.spending import Budget, Drawn, Sample, Usage, cut_replies, plain_readable, take_replies

__all__ = ["LOGGERS", "ChatCaller"]

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


T = TypeVar("T")
X = TypeVar("X")

logger = logging.getLogger(__name__)

_AHEAD = 2
"""Items in progress per request slot: enough that a freed slot finds the next request ready, few enough that
the items not begun cost nothing (an item begun before its turn would read and hash its prompt long before)."""

_N_GENERATORS = frozenset({"OpenAIChatGenerator", "AzureOpenAIChatGenerator"})


@dataclass
class _Run:
    """One run's own state: so two runs of one caller (two threads, two tasks) never share a limit."""

    usage: Usage
    budget: Budget
    slots: Slots
    progress: Callable[[], object]  # called as each item of ChatCaller.each is done (none given: object, a no-op)
    inflight: dict[str, asyncio.Future[Drawn]] = field(default_factory=dict)
    keeps: bool = False  # a stop marks the items left rather than raise (keeping_answered)
    stop: RunStop = field(default_factory=RunStop)  # the run's, or its panel's (pacing.one_stop)

    @property
    def halted(self) -> GraderUnavailable | None:
        """The first failure that stopped the run (or its panel): no request is sent after it."""
        return self.stop.halted

    @halted.setter
    def halted(self, stop: GraderUnavailable) -> None:
        self.stop.halt(stop)


_RUN: ContextVar[_Run | None] = ContextVar("answer_eval_llm_run", default=None)


class ChatCaller:
    """Draws replies from a Haystack chat generator, within a concurrency limit, a retry bound, a deadline and a budget.

    :param generator: Any Haystack chat generator.
    :param sampling: How several samples are drawn: ``n`` (one request asking for ``n`` replies,
        topped up when the server gives fewer), ``calls`` (one request a sample), ``auto`` (``n``
        for OpenAI's generators, ``calls`` otherwise).
    :param concurrency: Requests in flight at most, per run.
    :param retries: Retries of a request after a transient error (0: none).
    :param backoff: Seconds before the first retry (0: at once); doubled each time, at most
        ``max_backoff`` (a server's ``Retry-After`` is honoured up to it).
    :param max_backoff: The longest wait between two attempts, in seconds.
    :param max_calls: Requests one run may send (``None``: no limit), unless the run is given a
        :class:`Budget` of its own; then ``budget_stop``. A generator's own retries happen inside
        one request: give it ``max_retries=0`` for a hard bound on HTTP requests.
    :param cache: A reply cache (``None``: none); opened when a run starts, before any request.
    :param redact: Strings never to show (an API key); the generator's own key and its server
        URL's password are added.
    :param timeout: Seconds one request may take in all, from sending it to its last byte
        (``None``: the generator's own ``timeout``, else 600). A request past it is given up
        (a transient failure, retried), its thread left to end by itself, counted against the
        concurrency until it ends. Given up while the server answered others, it was queued: the
        concurrency is halved (:attr:`limit`). When every open request is one given up and none
        is answered for ``timeout`` seconds more, the server holds them: the run stops
        (:class:`ServerMisbehaves`).
    """

    def __init__(
        self,
        generator: Any,
        *,
        sampling: str = "auto",
        concurrency: int = 4,
        retries: int = 2,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_calls: int | None = None,
        cache: ReplyCache | None = None,
        redact: Sequence[str] = (),
        timeout: float | None = None,
    ) -> None:
        """Wrap ``generator``; ``ValueError`` for a bad limit."""
        if sampling not in ("auto", "n", "calls"):
            raise ValueError(f"sampling is 'auto', 'n' or 'calls', got {sampling!r}")
        for name, value, lowest in (("concurrency", concurrency, 1), ("retries", retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
                raise ValueError(f"{name} must be an integer of at least {lowest}, got {value!r}")
        if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0):
            raise ValueError(f"max_calls must be a non-negative integer or None, got {max_calls!r}")
        check_seconds("backoff", backoff, zero=True)
        check_seconds("max_backoff", max_backoff, zero=True)
        if not callable(getattr(generator, "run", None)):
            raise TypeError(f"chat_generator must be a Haystack chat generator, got {type(generator).__name__}")
        self.generator = generator
        names = {kind.__name__ for kind in type(generator).__mro__}
        self.asks_n = sampling == "n" or (sampling == "auto" and bool(names & _N_GENERATORS))
        self.concurrency, self.retries, self.max_calls = concurrency, retries, max_calls
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.timeout = generator_deadline(generator, timeout)
        self.cache = cache
        self.redact = Redactor([*redact, *generator_secrets(generator)])
        self.threads = CallThreads()
        self._described = describe_generator(generator)
        self.abandoned: Abandoned = server_calls(self._described["api_base_url"] or self._described.get("url"))
        """The server's calls given up and answered, shared with every caller sending to its URL."""
        self.pace = Pace(concurrency, self.timeout, self.abandoned, lambda: server_words(generator))
        """The requests open at the server at most (``pace.limit``), lowered when it is seen queueing."""

    def new_budget(self) -> Budget:
        """A budget of this caller's ``max_calls``, to share between runs (a file's batches)."""
        return Budget(self.max_calls)

    def run_sync(self, work: Callable[[], Awaitable[T]], budget: Budget | None = None, **run: Any) -> tuple[T, Usage]:
        """Run ``work`` (a coroutine function using :meth:`draw`) from sync code: its result and what it cost.

        The work runs in an event loop of this run's own (in a daemon thread of its own when called
        from inside a running loop), each generator call in a thread of its own. ``run``: as :meth:`run_async`'s.
        """

        def go() -> tuple[T, Usage]:
            return asyncio.run(self.run_async(work, budget, **run))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return go()
        # Inside a running loop (a notebook, an async pipeline's sync component): a loop of our own, in a thread,
        # in the caller's context (keeping_answered).
        context = contextvars.copy_context()
        return in_daemon_thread(lambda: context.run(go), "answer-eval-llm-run")

    async def run_async(
        self, work: Callable[[], Awaitable[T]], budget: Budget | None = None, progress: Callable[[], None] | None = None
    ) -> tuple[T, Usage]:
        """Run ``work`` in the running loop: its result and cost (``progress()`` as each :meth:`each` item ends).

        The generator's sync ``run`` is called in threads even here: an async client is bound to
        the event loop that made it, and a pipeline run again with ``asyncio.run`` has a new one.
        The cache is opened first, so a cache that cannot serve stops the run before any request.
        Haystack's warnings for cut replies are counted in the usage, not printed (``cut_reply_warnings``).
        """
        if self.cache is not None:
            self.cache.open()
        slots = self.pace.slots()
        kept = keeps()
        run = _Run(
            Usage(), budget or self.new_budget(), slots, progress or object, keeps=kept is not None, stop=run_stop()
        )
        token = _RUN.set(run)
        try:
            with counting_warnings(WarningCount()) as warnings:
                result = await work()
        finally:
            _RUN.reset(token)
            slots.close()
        if run.halted is not None:
            if not run.stop.keeps_answers:  # nothing answered to keep: the stop is the run's outcome, as without
                raise type(run.halted)(str(run.halted))
            logger.warning("%s; the items graded before are returned, the others are error", run.halted)
            if kept is not None and kept.stop is None:
                kept.stop = run.halted
        return result, replace(run.usage, cut_reply_warnings=warnings.total)

    def count(self, name: str, amount: int = 1) -> None:
        """Add ``amount`` to the running run's usage figure ``name`` (a grader's own: ``structured_fallbacks``)."""
        usage = _RUN.get().usage  # type: ignore[union-attr]  # called inside a run, as draw() is
        setattr(usage, name, getattr(usage, name) + amount)

    def halt(self, stop: GraderUnavailable) -> GraderUnavailable:
        """Stop the running run with ``stop`` (no request is sent after it); ``stop``, for the caller to raise."""
        run = _RUN.get()
        if run is not None:
            run.halted = stop
        return stop

    @property
    def server(self) -> dict[str, Any]:
        """What names the servers and models asked, as the reply cache keys them (generation options aside).

        The type, URL and model, any other server or model field set (Azure's endpoint, a ``url``),
        and a wrapper's every generator: two Azure endpoints of one deployment name are two servers.
        """
        return {name: value for name, value in self._described.items() if name != "generation_kwargs"}

    async def each(self, work: Callable[[X], Awaitable[T]], items: Sequence[X]) -> list[T]:
        """``work(item)`` for every item, the results in order; the items begun in order, a few per request slot.

        As ``asyncio.gather`` over every item, with the same order of requests (the budget goes to the first
        items), but the items wait their turn unbegun: a thousand coroutines started at once would each build
        and hash its prompt before any reply is read. The budget is told which item each request is for.
        """
        results: list[T | None] = [None] * len(items)
        turns = iter(range(len(items)))

        async def worker() -> None:
            for index in turns:  # one iterator shared: each item is taken once, in order
                with _RUN.get().budget.on(index):  # type: ignore[union-attr]  # inside a run, as draw() is
                    results[index] = await work(items[index])
                _RUN.get().progress()  # type: ignore[union-attr]  # inside a run (each worker task copies its context)

        workers = [asyncio.ensure_future(worker()) for _ in range(min(len(items), _AHEAD * self.concurrency))]
        try:
            await asyncio.gather(*workers)
        finally:  # one worker's stop ends the others (gather leaves them running, to ask on after the run)
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        return results  # type: ignore[return-value]  # every slot filled: each worker ran to the end

    async def draw(
        self,
        messages: Sequence[tuple[str, str]],
        samples: int = 1,
        readable: Callable[[Sample], bool] | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> Drawn:
        """Up to ``samples`` replies to ``messages``: cached ones first, then requests until there are enough.

        ``readable`` says which replies the caller can read (a grade, a verdict): only those are
        cached, or taken from the cache; the default is :func:`plain_readable`. The same prompt
        asked twice in one run is sent once; the second gets the first's replies.

        ``request``: generation options of this draw's requests (a ``response_format``, ``logprobs``),
        over the generator's own. They are part of the cache key: a reply to another request is not
        this one's.
        """
        run = _RUN.get()
        assert run is not None, "draw() runs inside run_sync() or run_async()"
        asked_for = dict(request or {})
        # Without extra options the key is the one earlier versions wrote: their caches still serve.
        key = cache_key(messages, {**self._described, "request": asked_for} if asked_for else self._described)
        asked = run.inflight.get(f"{key}:{samples}")
        if asked is not None:
            first = await asked
            again = Drawn(list(first.samples), first.failure, first.detail, cached=len(first.samples))
            again.refused_format = first.refused_format
            return again
        future: asyncio.Future[Drawn] = asyncio.get_running_loop().create_future()
        run.inflight[f"{key}:{samples}"] = future
        try:
            drawn = await self._draw(run, key, messages, samples, readable or plain_readable, asked_for)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a prompt nobody else asked must not warn
            raise
        future.set_result(drawn)
        return drawn

    async def _draw(
        self,
        run: _Run,
        key: str,
        messages: Sequence[tuple[str, str]],
        samples: int,
        readable: Callable[[Sample], bool],
        request: Mapping[str, Any],
    ) -> Drawn:
        drawn = Drawn()
        book = current_book()
        # A batch run's own replies are read from its batches, as the first pass had them, not from the cache.
        if self.cache is not None and (book is None or key not in book.cached):
            cached = [self._clean(Sample.from_cached(s)) for s in self.cache.get(key)]
            drawn.samples = [sample for sample in cached if readable(sample)][:samples]
            drawn.cached = len(drawn.samples)
            run.usage.cache_hits += drawn.cached
        requests = 0
        while len(drawn.samples) < samples and drawn.failure is None and requests < samples:
            requests += 1
            got = await self._request(run, messages, samples - len(drawn.samples), drawn, request)
            if got:
                drawn.samples.extend(got)
                if self.cache is not None and any(readable(sample) for sample in got):
                    kept = [s.cached() for s in drawn.samples if readable(s)]
                    self.cache.put(key, kept)
                    if book is not None:
                        book.cached.add(key)
        if len(drawn.samples) < samples and drawn.failure is None:
            drawn.failure, drawn.detail = FailureKind.ERROR, "the generator gave fewer replies than asked"
        return drawn

    async def _request(
        self,
        run: _Run,
        messages: Sequence[tuple[str, str]],
        wanted: int,
        drawn: Drawn,
        request: Mapping[str, Any] | None = None,
    ) -> list[Sample]:
        """One request (with its retries); the failure noted in ``drawn``.

        The budget and the server's state are asked once a slot is free, just before sending: a
        request waiting for a slot has spent nothing yet. A backoff waits without a slot.
        """
        kwargs = {**(request or {}), **({"n": wanted} if self.asks_n and wanted > 1 else {})}
        for attempt in range(self.retries + 1):
            failed: Exception | None = None
            if (run.halted is not None and run.keeps) or not await self._take_slot(run):
                return self._unsent(run, drawn)
            try:
                if run.halted is not None:  # another item's request stopped the run while this one waited
                    if run.keeps:
                        return self._unsent(run, drawn)
                    raise type(run.halted)(str(run.halted))
                if not run.budget.take():
                    drawn.failure, drawn.detail = FailureKind.BUDGET_STOP, run.budget.refusal()
                    return []
                run.usage.calls += 1
                drawn.calls += 1
                answered, lowered = self.abandoned.answered, self.pace.lowered
                try:
                    replies = await self._send(messages, kwargs)
                except Exception as exc:  # noqa: BLE001 - any generator error is this item's failure, not the batch's
                    failed = (
                        self.pace.given_up(exc, self.abandoned.answered - answered, lowered) if timed_out(exc) else exc
                    )
            finally:
                run.slots.give()
            self._count_batch_tries(run, drawn, replies if failed is None else failed)
            if failed is None:
                run.stop.answered.add(id(run))
                return [self._clean(sample) for sample in take_replies(replies, wanted, drawn, run.usage)]
            run.usage.unreachable += int(unreachable(failed))
            try:
                stop_run(failed, self._words(failed), server_words(self.generator))
            except GraderUnavailable as stop:
                run.halted = stop
                if run.keeps:  # this item's own request met the stop: its failure is the stop itself
                    drawn.failure, drawn.detail = FailureKind.ERROR, str(stop)
                    return []
                raise
            if attempt < self.retries and self._again(failed, kwargs):
                run.usage.retries += 1
                await asyncio.sleep(backoff_wait(failed, attempt, self.backoff, self.max_backoff))
                continue
            drawn.failure, drawn.detail = FailureKind.ERROR, self._words(failed)
            # Read on the whole message (its body is bounded by the client): a refusal named past the cut counts.
            asked = kwargs.get("response_format")
            drawn.refused_format = asked is not None and refuses_option(failed, {"response_format": asked})
            return []
        return []  # not reached: the last attempt returns or fails above

    @staticmethod
    def _again(failed: Exception, kwargs: Mapping[str, Any]) -> bool:
        """Whether a failed try is asked again now: transient, not a refusal of the draw's own options, not a batch's.

        A server refusing this draw's own options (a response_format) would refuse every try alike; a batch's
        failure is asked again by the next batch (:mod:`answer_eval.llm.batches`), not here.
        """
        book = current_book()
        return transient(failed) and not refuses_option(failed, kwargs) and (book is None or book.live)

    @staticmethod
    def _count_batch_tries(run: _Run, drawn: Drawn, outcome: object) -> None:
        """A batch's earlier failed tries of the request ``outcome`` ends were calls and retries, as live ones are.

        They spend the budget too, so that the items after them meet ``budget_stop`` where the live run's do.
        """
        tried = earlier_tries(outcome)
        for _ in range(tried):
            run.budget.take()
        run.usage.calls += tried
        run.usage.retries += tried
        drawn.calls += tried

    async def _take_slot(self, run: _Run) -> bool:
        """A request slot (``True``); :class:`ServerMisbehaves` (the run halted) when the server holds all open.

        ``False`` instead of raising when the run keeps what was answered
        (:func:`~answer_eval.llm.call_limits.keeping_answered`).
        """
        try:
            await run.slots.take()
        except HeldOpen as held:
            run.halted = stop = self.pace.held_open(held)
            if run.keeps:
                return False
            raise stop from None
        return True

    @staticmethod
    def _unsent(run: _Run, drawn: Drawn) -> list[Sample]:
        """No request for ``drawn``: the run stopped (``run.halted``), and keeps what was answered."""
        drawn.failure, drawn.detail = FailureKind.ERROR, f"not sent: the run stopped: {run.halted}"
        return []

    def _words(self, exc: BaseException) -> str:
        return cut_words(self.redact(words_for(exc)), 300)  # redacted before cutting, so no part of a secret is left

    def _clean(self, sample: Sample) -> Sample:
        """``sample`` with its secrets redacted (a reply quoting the request's headers)."""
        text = self.redact(sample.text)
        return sample if text == sample.text else replace(sample, text=text)

    async def _send(self, messages: Sequence[tuple[str, str]], kwargs: dict[str, Any]) -> list[Any]:
        call: dict[str, Any] = {"messages": chat_messages(messages)}
        if kwargs:
            call["generation_kwargs"] = sent_options(self.generator, kwargs)
        book = current_book()
        served = None if book is None else book.serve(self.generator, call["messages"], call.get("generation_kwargs"))
        if served is not None and not served.live:
            return served  # a Served list: the replies, and the tries a batch made of it before
        replies = await self._send_live(call)
        return replies if served is None else Served(replies, served.earlier_tries)

    async def _send_live(self, call: dict[str, Any]) -> list[Any]:
        run = functools.partial(self.generator.run, **call)
        try:
            result = await call_with_deadline(run, self.timeout, self.abandoned, self.threads)
        except Exception as exc:
            cut = cut_replies(exc)  # a cut reply the SDK's parse endpoint raised for is a reply
            if cut is None:
                raise
            return cut
        return list(result.get("replies") or []) if isinstance(result, dict) else []
