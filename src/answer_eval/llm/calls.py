"""Asking a Haystack chat generator for replies: bounded concurrency, retries, a call budget, a cache, usage.

:class:`ChatCaller` wraps any Haystack chat generator (an object with ``run(messages=...)`` that
returns ``{"replies": [ChatMessage, ...]}``; ``run_async`` used when the caller runs async). One
implementation serves both: the work is a coroutine, and the sync entry point runs it in an event
loop of its own, calling the generator's sync ``run`` in at most ``concurrency`` threads (so a sync
pipeline and an async one hold the same limit).

Failures are data. A request that fails with a transient error (HTTP 429 or 5xx, a timeout, a
lost connection) is retried with exponential backoff, a bounded number of times; any other error,
or the last transient one, makes the item's :attr:`Drawn.failure` ``error``. Once ``max_calls``
requests have been sent, the items still waiting get ``budget_stop``. Nothing loops unbounded.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from answer_eval.evaluators.failures import FailureKind
from answer_eval.llm.cache import ReplyCache, cache_key

__all__ = ["ChatCaller", "Drawn", "Sample", "Usage", "describe_generator"]

T = TypeVar("T")

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_TRANSIENT_NAMES = ("Timeout", "Connection", "RateLimit", "InternalServer", "ServiceUnavailable")
_N_GENERATORS = frozenset({"OpenAIChatGenerator", "AzureOpenAIChatGenerator"})


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
    """What identifies a generator's replies: its type, model and generation options (``n`` excepted)."""
    options = dict(getattr(generator, "generation_kwargs", None) or {})
    options.pop("n", None)
    kind = type(generator)
    return {"type": f"{kind.__module__}.{kind.__qualname__}", "model": getattr(generator, "model", None), **options}


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


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


class ChatCaller:
    """Draws replies from a Haystack chat generator, within a concurrency limit, a retry bound and a budget.

    :param generator: Any Haystack chat generator.
    :param sampling: How several samples are drawn: ``n`` (one request asking for ``n`` replies,
        topped up when the server gives fewer), ``calls`` (one request a sample), ``auto`` (``n``
        for OpenAI's generators, ``calls`` otherwise).
    :param concurrency: Requests in flight at most.
    :param retries: Retries of a request after a transient error (0: none).
    :param backoff: Seconds before the first retry; doubled each time, at most ``max_backoff``
        (a server's ``Retry-After`` is honoured up to it).
    :param max_backoff: The longest wait between two attempts, in seconds.
    :param max_calls: Requests this caller may send in all (``None``: no limit); then ``budget_stop``.
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
        for name, value in (("concurrency", concurrency), ("retries", retries + 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if max_calls is not None and (isinstance(max_calls, bool) or not isinstance(max_calls, int) or max_calls < 0):
            raise ValueError(f"max_calls must be a non-negative integer or None, got {max_calls!r}")
        if not hasattr(generator, "run"):
            raise TypeError(f"chat_generator must be a Haystack chat generator, got {type(generator).__name__}")
        self.generator = generator
        names = {kind.__name__ for kind in type(generator).__mro__}
        self.asks_n = sampling == "n" or (sampling == "auto" and bool(names & _N_GENERATORS))
        self.concurrency, self.retries, self.max_calls = concurrency, retries, max_calls
        self.backoff, self.max_backoff = backoff, max_backoff
        self.cache = cache
        self.redact = tuple(secret for secret in redact if secret)
        self.usage = Usage()
        self._described = describe_generator(generator)
        self._pool: ThreadPoolExecutor | None = None
        self._gate: asyncio.Semaphore | None = None

    def reset(self) -> None:
        """Start a new run: usage and the call budget from zero."""
        self.usage = Usage()

    def run_sync(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` (a coroutine function using :meth:`draw`) from sync code, the generator's ``run`` in threads."""

        def go() -> T:
            with ThreadPoolExecutor(self.concurrency, thread_name_prefix="answer-eval-llm") as pool:
                self._pool = pool
                try:
                    return asyncio.run(self._gated(work))
                finally:
                    self._pool = None

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return go()
        # Called from inside an event loop (a notebook, an async pipeline's sync component): a loop of our own.
        with ThreadPoolExecutor(1) as outer:
            return outer.submit(go).result()

    async def run_async(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` in the running loop, with the generator's ``run_async`` when it has one."""
        return await self._gated(work)

    async def _gated(self, work: Callable[[], Awaitable[T]]) -> T:
        self._gate = asyncio.Semaphore(self.concurrency)
        try:
            return await work()
        finally:
            self._gate = None

    async def draw(self, messages: Sequence[tuple[str, str]], samples: int = 1) -> Drawn:
        """Up to ``samples`` replies to ``messages``: cached ones first, then requests until there are enough."""
        key = cache_key(messages, self._described) if self.cache is not None else ""
        drawn = Drawn()
        if self.cache is not None:
            drawn.samples = [Sample(s["text"], s.get("finish_reason")) for s in self.cache.get(key)[:samples]]
            drawn.cached = len(drawn.samples)
            self.usage.cache_hits += drawn.cached
        requests = 0
        while len(drawn.samples) < samples and drawn.failure is None and requests < samples:
            requests += 1
            got = await self._request(messages, samples - len(drawn.samples), drawn)
            if got:
                drawn.samples.extend(got)
                if self.cache is not None:
                    self.cache.put(key, [{"text": s.text, "finish_reason": s.finish_reason} for s in drawn.samples])
        if len(drawn.samples) < samples and drawn.failure is None:
            drawn.failure, drawn.detail = FailureKind.ERROR, "the generator gave fewer replies than asked"
        return drawn

    async def _request(self, messages: Sequence[tuple[str, str]], wanted: int, drawn: Drawn) -> list[Sample]:
        """One request (with its retries); the failure noted in ``drawn``."""
        kwargs = {"n": wanted} if self.asks_n and wanted > 1 else {}
        for attempt in range(self.retries + 1):
            if self.max_calls is not None and self.usage.calls >= self.max_calls:
                drawn.failure, drawn.detail = FailureKind.BUDGET_STOP, f"the budget of {self.max_calls} calls is spent"
                return []
            self.usage.calls += 1
            drawn.calls += 1
            try:
                replies = await self._send(messages, kwargs)
            except Exception as exc:  # noqa: BLE001 - any generator error is this item's failure, not the batch's
                if attempt < self.retries and _transient(exc):
                    self.usage.retries += 1
                    await asyncio.sleep(self._wait(exc, attempt))
                    continue
                drawn.failure, drawn.detail = FailureKind.ERROR, self._words(exc)
                return []
            return self._samples(replies, drawn)
        return []  # not reached: the last attempt returns or fails above

    def _wait(self, exc: BaseException, attempt: int) -> float:
        wait = self.backoff * (2**attempt)
        told = _retry_after(exc)
        return min(self.max_backoff, wait if told is None else max(told, 0.0))

    def _words(self, exc: BaseException) -> str:
        status = _status(exc)
        words = f"{type(exc).__name__}{'' if status is None else f' (HTTP {status})'}: {exc}"[:300]
        for secret in self.redact:
            words = words.replace(secret, "***")
        return words

    async def _send(self, messages: Sequence[tuple[str, str]], kwargs: dict[str, Any]) -> list[Any]:
        assert self._gate is not None, "draw() runs inside run_sync() or run_async()"
        chat = _chat_messages(messages)
        call: dict[str, Any] = {"messages": chat}
        if kwargs:
            call["generation_kwargs"] = kwargs
        async with self._gate:
            if self._pool is None and hasattr(self.generator, "run_async"):
                result = await self.generator.run_async(**call)
            else:
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(self._pool, functools.partial(self.generator.run, **call))
        return list(result.get("replies") or [])

    def _samples(self, replies: list[Any], drawn: Drawn) -> list[Sample]:
        if not replies:
            drawn.failure, drawn.detail = FailureKind.ERROR, "the generator gave no reply"
            return []
        usage = (getattr(replies[0], "meta", None) or {}).get("usage") or {}
        # One request's usage is repeated on each of its choices: counted once.
        prompt, completion = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
        drawn.prompt_tokens += prompt
        drawn.completion_tokens += completion
        self.usage.prompt_tokens += prompt
        self.usage.completion_tokens += completion
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
