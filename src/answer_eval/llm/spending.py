"""What a grader's calls draw and spend: the replies and their cost, a run's budget, the cost estimated before any call.

What a draw of replies is: the replies, what they cost, what a run spent, and the budget it spends from.

What a run of an LLM grader would cost, counted before any call: requests, tokens and money, as bounds.

Pure functions over the requests a dry run recorded (:func:`dry_caller`, below):

- **prompt tokens** are estimated by one stated rule, :data:`TOKEN_RULE`: the characters of every
  message of a request, divided by 4, rounded up. No tokenizer is used: the model behind an
  OpenAI-compatible server is unknown here (a llama.cpp or vLLM model has its own), and a
  tokenizer that downloads its tables at run time would break the promise that a dry run sends
  nothing. A request for ``n`` replies is one prompt, counted once (as OpenAI bills it);
- **completion tokens** have an upper bound only, ``max_tokens`` per reply asked; without
  ``max_tokens`` there is none (the server's own limit applies);
- **money** is the tokens at a price per million tokens, prompt and completion apart (``IN OUT``);
  with no completion bound, only the prompt's part is known. A price is a finite number of 0 or
  more (``-0`` is 0), and a cost always finite: prices whose cost no float holds (``1e308``) are
  refused (:class:`CostTooLarge`), never printed as ``inf`` or written as ``Infinity``.

With a call budget (``max_calls``), the figures are also given for the first ``max_calls``
requests, the ones the run would send before the rest become ``budget_stop``.

**A dry run** records the requests a caller would send and sends none. The grader runs as it would
(the same prompts, samples, ``n``, top-ups, the reply cache read first), but its generator is a
:class:`RequestRecorder` that answers each request at once with empty replies, which no reader
takes for a grade and which are never cached. :func:`dry_caller` turns a caller made as the real run
makes it (so the cache keys are the real run's) into one that records, the cache read without being
made, marked or written (:class:`ReadOnlyCache`): no API key is needed, and nothing is written.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from answer_eval.errors import FailureKind
from answer_eval.llm.reply_cache import Logprobs, ReplyCache, from_cache, from_meta, to_cache

if TYPE_CHECKING:
    from answer_eval.llm.calls import ChatCaller

__all__ = [
    "MAX_TOKEN_COUNT",
    "TOKEN_RULE",
    "Budget",
    "CostTooLarge",
    "Drawn",
    "Estimate",
    "Planned",
    "Price",
    "Sample",
    "Usage",
    "current_item",
    "cut_replies",
    "dry_caller",
    "estimate",
    "estimated_tokens",
    "figures",
    "money",
    "plain_readable",
    "price",
    "take_replies",
    "unanswered",
]

_UNREADABLE_FINISH = frozenset({"length", "refusal", "content_filter"})
_ITEM: ContextVar[int | None] = ContextVar("answer_eval_llm_item", default=None)


@dataclass(frozen=True)
class Sample:
    """One reply.

    :param text: Its text (empty when the reply held none).
    :param finish_reason: Why the model stopped (``stop``, ``length``, ``content_filter``...), when reported;
        ``refusal`` for a reply with no content at all and no tool call (see :mod:`answer_eval.llm.calls`).
    :param logprobs: Its tokens' log-probabilities, within bounds (:mod:`answer_eval.llm.reply_cache`), when
        the server sent some; ``None`` when it did not.
    """

    text: str
    finish_reason: str | None = None
    logprobs: Logprobs | None = None

    def cached(self) -> dict[str, Any]:
        """As the reply cache keeps it: the text, the finish reason and (usable ones only) the log-probabilities."""
        kept: dict[str, Any] = {"text": self.text, "finish_reason": self.finish_reason}
        if self.logprobs is not None and self.logprobs.problem is None:
            kept["logprobs"] = to_cache(self.logprobs)
        return kept

    @classmethod
    def from_cached(cls, data: Mapping[str, Any]) -> Sample:
        """A sample the reply cache gave (:meth:`cached`'s form, checked by the cache)."""
        return cls(data["text"], data.get("finish_reason"), from_cache(data.get("logprobs")))


def plain_readable(sample: Sample) -> bool:
    """What is cached when the caller does not say: a sample with text, not cut, refused or filtered."""
    return bool(sample.text.strip()) and sample.finish_reason not in _UNREADABLE_FINISH


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
    :param refused_format: Whether the failure is the server refusing the request's ``response_format``:
        decided on the error's whole message, before :attr:`detail` is cut for display
        (:func:`answer_eval.llm.generators.refuses_option`).
    """

    samples: list[Sample] = field(default_factory=list)
    failure: str | None = None
    detail: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: int = 0
    refused_format: bool = False


@dataclass
class Usage:
    """What a run of a caller cost: requests, tokens, cache hits and retries.

    ``unreachable``: requests (each try counted, as in ``calls``) that got no answer from the
    server at all: the connection failed or timed out. ``cut_reply_warnings``: the warnings
    Haystack's generator logged for replies cut by the token limit or the content filter, counted
    here instead of printed (:mod:`answer_eval.llm.calls`). ``structured_fallbacks``:
    the formats of structured output the server refused, so that the run moved to the next
    (:mod:`answer_eval.llm.caller_setup`).
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    unreachable: int = 0
    cut_reply_warnings: int = 0
    structured_fallbacks: int = 0

    def as_dict(self) -> dict[str, int]:
        """The figures by name."""
        return {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "unreachable": self.unreachable,
            "cut_reply_warnings": self.cut_reply_warnings,
            "structured_fallbacks": self.structured_fallbacks,
        }


def unanswered(sent: Usage, server: str) -> str | None:
    """Why a run is no result when every request it sent (``sent``) got no answer from ``server``, or ``None``.

    A dead server, a wrong port: refused, reset or timed out, every try. The command line exits 3
    with this reason (:class:`answer_eval.errors.NothingGraded`), though some rows may have been
    graded from the cache or without a call.
    """
    if not sent.calls or sent.unreachable != sent.calls:
        return None
    tries = "the 1 request" if sent.calls == 1 else f"all {sent.calls:,} requests (tries included)"
    return (
        f"{tries} to {server} got no answer (no connection, or none within --timeout): check that the server "
        "is up at that URL, or give a longer --timeout"
    )


class Budget:
    """The requests a run (or a whole file, on the command line) may still send; safe across threads."""

    def __init__(self, max_calls: int | None) -> None:
        """A budget of ``max_calls`` requests (``None``: no limit)."""
        self.max_calls = max_calls
        self.sent = 0
        self._lock = threading.Lock()

    def resume(self, sent: int) -> None:
        """Count ``sent`` requests already made (by the run a ``--resume`` continues)."""
        with self._lock:
            self.sent = max(self.sent, sent)

    def take(self) -> bool:
        """Count one request to be sent; ``False`` (and nothing counted) when the budget is spent.

        A panel's budget (:class:`answer_eval.llm.jury.PanelBudget`) buys whole items: it reads which
        item the request is for from :meth:`on`; this one counts requests.
        """
        with self._lock:
            if self.max_calls is not None and self.sent >= self.max_calls:
                return False
            self.sent += 1
            return True

    @contextmanager
    def on(self, item: int) -> Iterator[None]:
        """Within it, the requests of this task (and of the tasks it starts) are for the run's item ``item``."""
        token = _ITEM.set(item)
        try:
            yield
        finally:
            _ITEM.reset(token)
            self.finish(item)

    def finish(self, item: int) -> None:
        """The run is done with item ``item``: nothing here (a panel's budget frees what it held for it)."""

    def refusal(self) -> str:
        """Why :meth:`take` refused the request, in words (an item's failure detail)."""
        return f"the budget of {self.max_calls} calls is spent"


def current_item() -> int | None:
    """The run's item the running task's requests are for (:meth:`Budget.on`); ``None``: not known."""
    return _ITEM.get()


def sample_of(reply: Any) -> Sample:
    """A generator's reply (a ChatMessage) as a :class:`Sample`: its text and finish reason.

    A reply with no text at all and no tool calls is recorded as finish reason ``refusal``: OpenAI's
    API sends that only with its ``refusal`` field set (content ``null``), which Haystack's generator
    does not pass on; an empty text (``""``) is not one.
    """
    meta = getattr(reply, "meta", None) or {}
    text, reason = getattr(reply, "text", None), meta.get("finish_reason")
    reason = reason if isinstance(reason, str) else None
    if text is None and not getattr(reply, "tool_calls", None) and reason not in ("length", "content_filter"):
        reason = "refusal"  # no content at all: what OpenAI's API sends with its refusal field
    return Sample(text if isinstance(text, str) else "", reason, from_meta(meta) if isinstance(meta, dict) else None)


MAX_TOKEN_COUNT = 10**9
"""The largest token count of one request's ``usage`` taken as it is: no model reads or writes a billion tokens
in one request, so a larger count (a 400-digit integer from a hostile server) is no count, and read as 0."""


def token_count(usage: Any, name: str) -> int:
    """A token count from a reply's ``usage`` dict: 0 when absent, not an int, negative or over :data:`MAX_TOKEN_COUNT`.

    The server is not trusted: a negative count would take tokens off the run's usage, and a huge one
    would make every figure built on it meaningless.
    """
    value = usage.get(name) if isinstance(usage, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKEN_COUNT:
        return 0
    return value


_CUT_ERRORS = frozenset({"LengthFinishReasonError", "ContentFilterFinishReasonError"})


def cut_replies(exc: BaseException) -> list[Any] | None:
    """The replies of a completion cut by the token limit or the content filter, that the client raised for.

    The OpenAI SDK's ``parse`` endpoint, which Haystack's OpenAIChatGenerator calls for a
    ``response_format`` option, raises rather than return a cut reply; ``create`` returns it with
    its finish reason. OpenAI's generator gets the schema in ``extra_body`` (``create``), but a
    generator of the user's that hands the option to OpenAI's still meets ``parse``. Given back as
    the ChatMessages the generator would have returned (text, finish reason, usage), so that a cut
    reply is read and counted alike either way. ``None``: not such an error.
    """
    completion: Any = getattr(exc, "completion", None)
    if type(exc).__name__ not in _CUT_ERRORS or not getattr(completion, "choices", None):
        return None
    from haystack.dataclasses import ChatMessage

    usage: Any = getattr(completion, "usage", None)
    shown = usage.model_dump() if callable(getattr(usage, "model_dump", None)) else {}
    return [
        ChatMessage.from_assistant(
            choice.message.content, meta={"finish_reason": choice.finish_reason, "usage": shown, "index": choice.index}
        )
        for choice in completion.choices
    ]


def take_replies(replies: list[Any], wanted: int, drawn: Drawn, usage: Usage) -> list[Sample]:
    """The samples of one request's ``replies`` (at most ``wanted``), their tokens added to ``drawn`` and ``usage``.

    No reply is ``drawn``'s failure (``error``).
    """
    if not replies:
        drawn.failure, drawn.detail = FailureKind.ERROR, "the generator gave no reply"
        return []
    # A server may send more choices than the request's n: only the first are samples, else a grade
    # would rest on more samples than asked (a confidence of 5.0 from five choices to a request for one).
    replies = replies[:wanted]
    counts = (getattr(replies[0], "meta", None) or {}).get("usage") or {}
    # One request's usage is repeated on each of its choices: counted once.
    prompt, completion = token_count(counts, "prompt_tokens"), token_count(counts, "completion_tokens")
    drawn.prompt_tokens += prompt
    drawn.completion_tokens += completion
    usage.prompt_tokens += prompt
    usage.completion_tokens += completion
    return [sample_of(reply) for reply in replies]


TOKEN_RULE = "characters/4"
"""The rule prompt tokens are estimated by (see the module docstring)."""

_CHARACTERS_PER_TOKEN = 4


def estimated_tokens(texts: Sequence[str]) -> int:
    """Prompt tokens of one request whose messages are ``texts``: their characters / 4, rounded up."""
    return math.ceil(sum(len(text) for text in texts) / _CHARACTERS_PER_TOKEN)


@dataclass(frozen=True)
class Planned:
    """One request a run would send.

    :param prompt_tokens: Its prompt's estimated tokens (:func:`estimated_tokens`).
    :param replies: The replies it asks for (``n``; 1 when it asks for one).
    """

    prompt_tokens: int
    replies: int = 1


@dataclass(frozen=True)
class Price:
    """A price per million tokens: of the prompt, and of the completion."""

    prompt: float
    completion: float


def price(values: Sequence[Any]) -> Price:
    """The price of two numbers (``IN OUT``, per million tokens); ``ValueError`` unless both are finite and >= 0."""
    if len(values) != 2:
        raise ValueError(f"takes two numbers, the prices of a million prompt and completion tokens; got {len(values)}")
    numbers = []
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"takes numbers, got {value!r}") from None
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"takes finite numbers of 0 or more, got {value}")
        numbers.append(number + 0.0)  # -0 is 0: a price is never printed as "-0"
    return Price(numbers[0], numbers[1])


@dataclass(frozen=True)
class Estimate:
    """What some requests would cost.

    :param requests: Requests sent.
    :param replies: Replies asked for (a request for ``n`` asks ``n``).
    :param prompt_tokens: Prompt tokens, by :data:`TOKEN_RULE`.
    :param completion_tokens_max: At most this many completion tokens (``max_tokens`` a reply); ``None``: no bound.
    :param prompt_cost: The prompt tokens' price (``None``: no price given).
    :param completion_cost_max: The completion tokens' price at most (``None``: no price, or no bound).
    :param cost_max: Both together, at most (``None`` when either is unknown).
    """

    requests: int
    replies: int
    prompt_tokens: int
    completion_tokens_max: int | None
    prompt_cost: float | None = None
    completion_cost_max: float | None = None
    cost_max: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The figures as a JSON object (every field, by name)."""
        return asdict(self)


class CostTooLarge(ValueError):
    """The tokens at the prices given make a cost no float holds (prices near 1e308): no figure is printed."""


def money(tokens: int, per_million: float) -> float:
    """``tokens`` at ``per_million`` a million tokens; :class:`CostTooLarge` when that is past the largest float."""
    try:
        cost = tokens * per_million / 1_000_000
    except OverflowError:  # a count too large for a float
        cost = math.inf
    if not math.isfinite(cost):
        raise CostTooLarge(f"{tokens:,} tokens at {per_million:g} a million cost more than any float holds")
    return cost + 0.0


def estimate(requests: Sequence[Planned], max_tokens: int | None, paid: Price | None = None) -> Estimate:
    """The cost of ``requests``, their completions bounded by ``max_tokens`` a reply, at ``paid`` when given.

    Every cost is a finite number of 0 or more: :class:`CostTooLarge` (a ``ValueError``) when the
    prices make one past the largest float, rather than an infinite cost printed or ``Infinity`` written.
    """
    replies = sum(request.replies for request in requests)
    prompt = sum(request.prompt_tokens for request in requests)
    completion = None if max_tokens is None else max_tokens * replies
    if paid is None:
        return Estimate(len(requests), replies, prompt, completion)
    prompt_cost = money(prompt, paid.prompt)
    completion_cost = None if completion is None else money(completion, paid.completion)
    total = None if completion_cost is None else prompt_cost + completion_cost
    if total is not None and not math.isfinite(total):
        both = f"a prompt cost of {prompt_cost:g} and a completion cost of {completion_cost:g}"
        raise CostTooLarge(f"{both} add up to more than any float holds")
    return Estimate(len(requests), replies, prompt, completion, prompt_cost, completion_cost, total)


def figures(
    requests: Sequence[Planned], max_tokens: int | None, paid: Price | None, max_calls: int | None
) -> tuple[Estimate, Estimate | None]:
    """The estimate of every request, and of the first ``max_calls`` (``None`` without a budget)."""
    every = estimate(requests, max_tokens, paid)
    within = None if max_calls is None else estimate(requests[:max_calls], max_tokens, paid)
    return every, within


class RequestRecorder:
    """A chat generator's stand-in that records each request (its prompt's tokens, the replies asked) and sends none."""

    def __init__(self) -> None:
        """No request recorded yet."""
        self._lock = threading.Lock()
        self.requests: list[Planned] = []
        """The requests in the order they were made (the order the run's budget is spent in)."""

    def run(self, messages: Sequence[Any], generation_kwargs: dict[str, Any] | None = None, **_more: Any) -> Any:
        """Record one request; reply with as many empty replies as it asks for."""
        from haystack.dataclasses import ChatMessage

        wanted = int((generation_kwargs or {}).get("n") or 1)
        texts = [message.text or "" for message in messages]
        with self._lock:
            self.requests.append(Planned(estimated_tokens(texts), wanted))
        return {"replies": [ChatMessage.from_assistant("") for _ in range(wanted)]}


class ReadOnlyCache(ReplyCache):
    """A reply cache read as the run would read it, but never made, marked or appended to.

    A missing file is an empty cache; a file that cannot serve is refused as the run would refuse it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """The cache at ``path`` (nothing read yet)."""
        super().__init__(path)
        self.prompts_found = 0
        """Prompts asked of the cache that it holds replies for."""

    def open(self) -> ReadOnlyCache:
        """Read the file, if there is one (through no link, a regular file only); write nothing."""
        with self._lock:
            if self._opened:
                return self
            try:
                status = os.lstat(self.path)
            except FileNotFoundError:
                self._opened = True
                return self
            except OSError as exc:
                raise self._refusal(f"cannot be looked at ({exc.strerror})") from None
            self._check(status)
            try:
                with open(self.path, "rb") as handle:
                    self._check(os.fstat(handle.fileno()))
                    self._read_lines(handle)
            except OSError as exc:
                raise self._refusal(f"cannot be read ({exc.strerror})") from None
            self._opened = True
        return self

    def get(self, key: str) -> list[dict[str, Any]]:
        """The samples cached for ``key``, counting the prompts found."""
        found = super().get(key)
        if found:
            with self._lock:
                self.prompts_found += 1
        return found

    def put(self, key: str, samples: Sequence[Any]) -> None:
        """Nothing: a dry run writes no file."""


def dry_caller(caller: ChatCaller, cache_path: str | None) -> tuple[RequestRecorder, ReadOnlyCache | None]:
    """Make ``caller`` record its requests instead of sending them, its reply cache ``cache_path`` read only.

    ``caller`` keeps its description of the real generator (the cache keys) and its way of asking
    for samples; the recorder and the cache are returned to read the figures from after the run.
    """
    recorder = RequestRecorder()
    cache = None if cache_path is None else ReadOnlyCache(cache_path)
    caller.generator = recorder
    caller.cache = cache
    return recorder, cache
