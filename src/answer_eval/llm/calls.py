"""Asking a Haystack chat generator for replies: bounded concurrency, retries, a call budget, a cache, usage.

:class:`ChatCaller` wraps any Haystack chat generator (an object with ``run(messages=...)`` that
returns ``{"replies": [ChatMessage, ...]}``). One implementation serves sync and async callers:
the work is a coroutine, run in the caller's event loop (``run_async``) or in one of its own
(``run_sync``), and the generator's sync ``run`` is called in at most ``concurrency`` threads. Each
run has its own limit, budget and usage, so two runs of one component never share them.

Failures are data. A request that fails with a transient error (HTTP 408, 409, 429 or 5xx, a
timeout, a lost connection) is retried with exponential backoff, a bounded number of times; any
other error, or the last transient one, makes the item's :attr:`Drawn.failure` ``error``. A
refused key or an unknown model (HTTP 401, 403, 404) stops the run (:class:`GraderUnavailable`):
no item could be graded. Once the budget is spent, the items still waiting get ``budget_stop``.
Nothing loops unbounded.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from answer_eval.evaluators.failures import FailureKind
from answer_eval.llm.cache import ReplyCache, cache_key

__all__ = ["Budget", "ChatCaller", "Drawn", "GraderUnavailable", "Sample", "Usage", "describe_generator"]

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_TRANSIENT_NAMES = ("Timeout", "Connection", "RateLimit", "InternalServer", "ServiceUnavailable")
_N_GENERATORS = frozenset({"OpenAIChatGenerator", "AzureOpenAIChatGenerator"})
_FATAL_STATUS = frozenset({401, 403, 404})


@dataclass(frozen=True)
class Sample:
    """One reply.

    :param text: Its text (empty when the reply held none).
    :param finish_reason: Why the model stopped (``stop``, ``length``, ``content_filter``...), when reported.
    """

    text: str
    finish_reason: str | None = None


@dataclass
class Drawn:
    """The replies drawn for one prompt, and what they cost.

    :param samples: The replies (fewer than asked when :attr:`failure` is set).
    :param failure: ``error`` or ``budget_stop`` when not every sample could be had; else ``None``.
    :param detail: What went wrong, in words (no secret in it).
    :param calls: Requests sent for this prompt (retries included; 0 when all came from the cache).
    :param prompt_tokens: Prompt tokens the generator reported for them.
    :param completion_tokens: Completion tokens the generator reported.
    :param cached: Samples taken from the cache.
    """

    samples: list[Sample] = field(default_factory=list)
    failure: str | None = None
    detail: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: int = 0


@dataclass
class Usage:
    """What a run of a caller cost: requests, tokens, cache hits and retries."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0

    def as_dict(self) -> dict[str, int]:
        """The figures by name."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
        }


def describe_generator(generator: Any) -> dict[str, Any]:
    """What identifies a generator's replies: its type, server, model and generation options (``n`` excepted)."""
    options = dict(getattr(generator, "generation_kwargs", None) or {})
    options.pop("n", None)
    kind = type(generator)
    return {
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "api_base_url": getattr(generator, "api_base_url", None),
        "model": getattr(generator, "model", None),
        "generation_kwargs": options,
    }


def _status(exc: BaseException) -> int | None:
    # openai's errors carry status_code; httpx's HTTPStatusError carries it on its response.
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _transient(exc: BaseException) -> bool:
    status = _status(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    return isinstance(exc, TimeoutError | ConnectionError) or any(n in type(exc).__name__ for n in _TRANSIENT_NAMES)


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = None if headers is None else headers.get("retry-after")
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None


class GraderUnavailable(RuntimeError):
    """The grader cannot answer any item: the key is refused (HTTP 401, 403) or the model is not there (404).

    Raised out of the run rather than written as an ``error`` for every item, so that a wrong key
    or model name stops an evaluation at once instead of filling its results with failures.
    """


class Budget:
    """The requests a run (or a whole file, on the command line) may still send; safe across threads."""

    def __init__(self, max_calls: int | None) -> None:
        """A budget of ``max_calls`` requests (``None``: no limit)."""
        self.max_calls = max_calls
        self.sent = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Count one request to be sent; ``False`` (and nothing counted) when the budget is spent."""
        with self._lock:
            if self.max_calls is not None and self.sent >= self.max_calls:
                return False
            self.sent += 1
            return True


@dataclass
class _Run:
    """One run's own state: so two runs of one caller (two threads, two tasks) never share a limit."""

    usage: Usage
    budget: Budget
    gate: asyncio.Semaphore
    pool: ThreadPoolExecutor
    inflight: dict[str, asyncio.Future[Drawn]] = field(default_factory=dict)


_RUN: ContextVar[_Run | None] = ContextVar("answer_eval_llm_run", default=None)


class ChatCaller:
    """Draws replies from a Haystack chat generator, within a concurrency limit, a retry bound and a budget.

    :param generator: Any Haystack chat generator.
    :param sampling: How several samples are drawn: ``n`` (one request asking for ``n`` replies,
        topped up when the server gives fewer), ``calls`` (one request a sample), ``auto`` (``n``
        for OpenAI's generators, ``calls`` otherwise).
    :param concurrency: Requests in flight at most, per run.
    :param retries: Retries of a request after a transient error (0: none).
    :param backoff: Seconds before the first retry; doubled each time, at most ``max_backoff``
        (a server's ``Retry-After`` is honoured up to it).
    :param max_backoff: The longest wait between two attempts, in seconds.
    :param max_calls: Requests one run may send (``None``: no limit), unless the run is given a
        :class:`Budget` of its own; then ``budget_stop``. A generator's own retries happen inside
        one request: give it ``max_retries=0`` for a hard bound on HTTP requests.
    :param cache: A reply cache (``None``: none).
    :param redact: Strings never to show in an error's words (an API key).
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
    ) -> None:
        """Wrap ``generator``; ``ValueError`` for a bad limit."""
        if sampling not in ("auto", "n", "calls"):
            raise ValueError(f"sampling is 'auto', 'n' or 'calls', got {sampling!r}")
        for name, value, lowest in (("concurrency", concurrency, 1), ("retries", retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
                raise ValueError(f"{name} must be an integer of at least {lowest}, got {value!r}")
        if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0):
            raise ValueError(f"max_calls must be a non-negative integer or None, got {max_calls!r}")
        if not callable(getattr(generator, "run", None)):
            raise TypeError(f"chat_generator must be a Haystack chat generator, got {type(generator).__name__}")
        self.generator = generator
        names = {kind.__name__ for kind in type(generator).__mro__}
        self.asks_n = sampling == "n" or (sampling == "auto" and bool(names & _N_GENERATORS))
        self.concurrency, self.retries, self.max_calls = concurrency, retries, max_calls
        self.backoff, self.max_backoff = backoff, max_backoff
        self.cache = cache
        self.redact = tuple(secret for secret in redact if secret)
        self._described = describe_generator(generator)

    def new_budget(self) -> Budget:
        """A budget of this caller's ``max_calls``, to share between runs (a file's batches)."""
        return Budget(self.max_calls)

    def run_sync(self, work: Callable[[], Awaitable[T]], budget: Budget | None = None) -> tuple[T, Usage]:
        """Run ``work`` (a coroutine function using :meth:`draw`) from sync code: its result and what it cost.

        The generator's sync ``run`` is called in at most ``concurrency`` threads, in an event loop
        of this run's own (in a thread of its own when called from inside a running loop).
        """

        def go() -> tuple[T, Usage]:
            return asyncio.run(self.run_async(work, budget))

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return go()
        # Called from inside an event loop (a notebook, an async pipeline's sync component): a loop of our own.
        with ThreadPoolExecutor(1) as outer:
            return outer.submit(go).result()

    async def run_async(self, work: Callable[[], Awaitable[T]], budget: Budget | None = None) -> tuple[T, Usage]:
        """Run ``work`` in the running loop: its result and what it cost.

        The generator's sync ``run`` is called in threads even here: an async client is bound to
        the event loop that made it, and a pipeline run again with ``asyncio.run`` has a new one.
        """
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="answer-eval-llm") as pool:
            run = _Run(Usage(), budget or self.new_budget(), asyncio.Semaphore(self.concurrency), pool)
            token = _RUN.set(run)
            try:
                return await work(), run.usage
            finally:
                _RUN.reset(token)

    async def draw(self, messages: Sequence[tuple[str, str]], samples: int = 1) -> Drawn:
        """Up to ``samples`` replies to ``messages``: cached ones first, then requests until there are enough.

        The same prompt asked twice in one run is sent once; the second gets the first's replies.
        """
        run = _RUN.get()
        assert run is not None, "draw() runs inside run_sync() or run_async()"
        key = cache_key(messages, self._described)
        asked = run.inflight.get(f"{key}:{samples}")
        if asked is not None:
            first = await asked
            return Drawn(list(first.samples), first.failure, first.detail, cached=len(first.samples))
        future: asyncio.Future[Drawn] = asyncio.get_running_loop().create_future()
        run.inflight[f"{key}:{samples}"] = future
        try:
            drawn = await self._draw(run, key, messages, samples)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a prompt nobody else asked must not warn
            raise
        future.set_result(drawn)
        return drawn

    async def _draw(self, run: _Run, key: str, messages: Sequence[tuple[str, str]], samples: int) -> Drawn:
        drawn = Drawn()
        if self.cache is not None:
            drawn.samples = [Sample(s["text"], s.get("finish_reason")) for s in self.cache.get(key)[:samples]]
            drawn.cached = len(drawn.samples)
            run.usage.cache_hits += drawn.cached
        requests = 0
        while len(drawn.samples) < samples and drawn.failure is None and requests < samples:
            requests += 1
            got = await self._request(run, messages, samples - len(drawn.samples), drawn)
            if got:
                drawn.samples.extend(got)
                if self.cache is not None:
                    self.cache.put(key, [{"text": s.text, "finish_reason": s.finish_reason} for s in drawn.samples])
        if len(drawn.samples) < samples and drawn.failure is None:
            drawn.failure, drawn.detail = FailureKind.ERROR, "the generator gave fewer replies than asked"
        return drawn

    async def _request(self, run: _Run, messages: Sequence[tuple[str, str]], wanted: int, drawn: Drawn) -> list[Sample]:
        """One request (with its retries); the failure noted in ``drawn``."""
        kwargs = {"n": wanted} if self.asks_n and wanted > 1 else {}
        for attempt in range(self.retries + 1):
            if not run.budget.take():
                drawn.failure = FailureKind.BUDGET_STOP
                drawn.detail = f"the budget of {run.budget.max_calls} calls is spent"
                return []
            run.usage.calls += 1
            drawn.calls += 1
            try:
                replies = await self._send(run, messages, kwargs)
            except Exception as exc:  # noqa: BLE001 - any generator error is this item's failure, not the batch's
                if _status(exc) in _FATAL_STATUS:
                    raise GraderUnavailable(f"the grader refused the request: {self._words(exc)}") from None
                if attempt < self.retries and _transient(exc):
                    run.usage.retries += 1
                    await asyncio.sleep(self._wait(exc, attempt))
                    continue
                drawn.failure, drawn.detail = FailureKind.ERROR, self._words(exc)
                return []
            return self._samples(run, replies, drawn)
        return []  # not reached: the last attempt returns or fails above

    def _wait(self, exc: BaseException, attempt: int) -> float:
        wait = self.backoff * (2**attempt)
        told = _retry_after(exc)
        return min(self.max_backoff, wait if told is None else max(told, 0.0))

    def _words(self, exc: BaseException) -> str:
        status = _status(exc)
        words = f"{type(exc).__name__}{'' if status is None else f' (HTTP {status})'}: {exc}"
        for secret in self.redact:
            words = words.replace(secret, "***")  # before cutting, so no part of a secret is left
        return words[:300]

    async def _send(self, run: _Run, messages: Sequence[tuple[str, str]], kwargs: dict[str, Any]) -> list[Any]:
        call: dict[str, Any] = {"messages": _chat_messages(messages)}
        if kwargs:
            call["generation_kwargs"] = kwargs
        async with run.gate:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(run.pool, functools.partial(self.generator.run, **call))
        return list(result.get("replies") or [])

    def _samples(self, run: _Run, replies: list[Any], drawn: Drawn) -> list[Sample]:
        if not replies:
            drawn.failure, drawn.detail = FailureKind.ERROR, "the generator gave no reply"
            return []
        usage = (getattr(replies[0], "meta", None) or {}).get("usage") or {}
        # One request's usage is repeated on each of its choices: counted once.
        prompt, completion = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        drawn.prompt_tokens += prompt
        drawn.completion_tokens += completion
        run.usage.prompt_tokens += prompt
        run.usage.completion_tokens += completion
        return [_sample(reply) for reply in replies]


def _sample(reply: Any) -> Sample:
    meta = getattr(reply, "meta", None) or {}
    return Sample(getattr(reply, "text", None) or "", meta.get("finish_reason"))


def _tokens(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@functools.cache
def _message_type() -> Any:
    from haystack.dataclasses import ChatMessage

    return ChatMessage


def _chat_messages(messages: Sequence[tuple[str, str]]) -> list[Any]:
    chat = _message_type()
    return [chat.from_system(text) if role == "system" else chat.from_user(text) for role, text in messages]
