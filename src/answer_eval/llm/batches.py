"""Grading through a provider's batch API: the live run's own requests, answered within a day at about half the price.

A batch run is the live run, done in passes. Each pass grades every row as the live path does (the
same prompts, samples, structured output, jury and escalation rules, the reply cache read first),
but a request is not sent: :meth:`ChatCaller._send <answer_eval.llm.calls.ChatCaller>` asks the
:class:`Book` of the run (:func:`serving`) instead. The book answers from what the file's batches
answered; a request they did not answer is noted (:attr:`Book.pending`) and fails at once
(:class:`NotAskedYet`). A pass that noted requests is no result: they go into a new batch (the
first pass notes every request), and the next pass, once it has ended, is graded from its
answers. A pass that noted none is the result, read exactly as the live path reads replies: a
batch's answer becomes the ChatMessages Haystack's ``OpenAIChatGenerator`` makes of a live
completion (its own conversion and finish-reason warnings), and a failed request the error the
OpenAI SDK raises for its status, so failure kinds, retries and the run's stops are the live
path's. Replies go into ``--cache`` as live ones do, so a rerun pays nothing.

**Requests.** A request is the body Haystack's generator would send (its ``_prepare_api_call``,
with ``response_format`` in ``extra_body`` as the live path sends it), named by its SHA-256
(:func:`custom_id`): an answer is served only to the very request it answers, whatever the
batch file's order, and two rows asking the same thing share one line. A top-up for fewer replies
than asked asks fewer (``n``), so it is another request.

**What is sent again.** As the live path retries a transient failure, a request a batch answered
with HTTP 408, 409, 429 or 5xx, or did not run (the batch expired or was cancelled, or its line
could not be read), goes into the next batch, in all at most ``max_rounds`` batches (the
retries, plus one); then the last failure is the item's ``error``. Any other failure is the
item's ``error`` at once (401, 403 and 404 stop the run, as live). With ``live`` (the command
line's ``--finish-live``), what the batches left is sent live instead, through the real generator.

**Bounds.** A batch's result file is the server's, so it is read as a live reply is: a line over
:data:`MAX_LINE_BYTES` or nested too deeply is no answer (its request is asked again), a line
for a request the batch did not hold is counted and dropped, and the file is never held whole
(:func:`read_results`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import IO, Any

from answer_eval.inputs.jsonl import iter_raw_lines, json_failure
from answer_eval.llm.generators import cut_words, describe_generator, sent_options, without_credentials

__all__ = [
    "ENDPOINT",
    "FATAL_STATUS",
    "MAX_LINE_BYTES",
    "Answer",
    "Book",
    "NotACompletion",
    "NotAskedYet",
    "Pending",
    "Results",
    "Served",
    "batch_refusal",
    "chat_messages_of",
    "current_book",
    "custom_id",
    "earlier_tries",
    "final_error",
    "read_results",
    "request_body",
    "server_of",
    "serving",
    "status_error",
]

ENDPOINT = "/v1/chat/completions"
"""The endpoint every request of a batch is for."""

MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest line of a batch's result file that is read (a reply cache's line is bounded alike)."""

_TRANSIENT = frozenset({408, 409, 429})
FATAL_STATUS = frozenset({401, 403, 404})
"""The statuses that stop a run (a refused key, an unknown model): their answers are asked again once mended."""


class NotAskedYet(Exception):
    """The request is not answered by any batch yet: it goes into the next one (the pass is no result)."""


class NotACompletion(Exception):
    """A batch's answer to a request is not a chat completion (the item's ``error``, as a live body that is not)."""


@dataclass(frozen=True)
class Answer:
    """A batch's answer to one request.

    :param status: The HTTP status the request got (``None``: not run, the batch expired or was cancelled).
    :param body: The chat completion (status 200) or the error body.
    :param error: The batch's own error code for a request it did not run (``batch_expired``...).
    """

    status: int | None
    body: Any = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As the batch run's replies file keeps it."""
        return {"status": self.status, "body": self.body, "error": self.error}

    @property
    def answered(self) -> bool:
        """Whether the request got a completion."""
        return self.status == 200

    @property
    def sent_again(self) -> bool:
        """Whether another batch may answer it: not run, or a transient failure (408, 409, 429, 5xx)."""
        return self.status is None or self.status in _TRANSIENT or self.status >= 500


@dataclass(frozen=True)
class Pending:
    """A request a pass found unanswered: what the next batch sends, and to which server and model."""

    custom_id: str
    body: dict[str, Any]
    server: str
    model: str
    generator: Any = field(compare=False, repr=False)


def request_body(
    generator: Any, messages: Sequence[Any], generation_kwargs: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The JSON body ``generator`` (Haystack's OpenAIChatGenerator) would POST for ``messages``, as the live path asks.

    The live path hands ``response_format`` over in ``extra_body`` (:func:`sent_options`), which the
    OpenAI SDK merges into the body: so does this. Options the SDK keeps out of the body (headers,
    query, timeout) are left out.
    """
    options = sent_options(generator, dict(generation_kwargs or {}))
    args = generator._prepare_api_call(messages=list(messages), generation_kwargs=options)
    args.pop("openai_endpoint", None)
    extra = args.pop("extra_body", None) or {}
    for name in ("extra_headers", "extra_query", "timeout"):
        args.pop(name, None)
    return {**args, **extra}


def custom_id(body: Mapping[str, Any], server: str = "") -> str:
    """The request's name in a batch: the SHA-256 of its server and body (keys sorted).

    So an answer reaches only its request: two judges of one model name on two servers send one body, and
    each server's batch answers its own.
    """
    text = server + "\n" + json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "ae-" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def batch_refusal(generator: Any, samples: int = 1, asks_n: bool = True) -> str | None:
    """Why ``generator`` cannot grade through a batch API (``None``: it can).

    A batch holds OpenAI Chat Completions bodies, which only a generator that builds its requests as
    Haystack's OpenAIChatGenerator does can say; several samples must be one request's ``n`` (drawn
    one request a sample, each would be the same body, one line).
    """
    from answer_eval.llm.generators import _builds_openai_requests

    kind: type = type(generator)
    if not _builds_openai_requests(kind):
        return (
            f"a batch holds OpenAI chat completion requests, and {type(generator).__name__} does not build them "
            "(use Haystack's OpenAIChatGenerator on an OpenAI-compatible server)"
        )
    if samples > 1 and not asks_n:
        return "several samples are one request's n in a batch: give sampling='n' (or 'auto'), not 'calls'"
    return None


def server_of(generator: Any) -> tuple[str, str]:
    """The server (its URL without credentials; ``None``: OpenAI's) and model a generator's requests go to."""
    described = describe_generator(generator)
    url = without_credentials(described.get("api_base_url")) or "https://api.openai.com/v1"
    return str(url), str(described.get("model") or "")


class Book:
    """What a file's batches answered, by request, and the requests a pass found unanswered.

    :param answers: Every batch's answers so far, by custom id.
    :param rounds: The batches each request was sent in.
    :param failures: The tries of each request a batch answered with a failure: calls, as the live path's
        retries are (an answer served, or a last failure, counts them: :attr:`Served.earlier_tries`).
    :param max_rounds: Batches a request is sent in at most (the retries, plus one).
    :param live: Send what the batches left through the real generator (``--finish-live``).
    """

    def __init__(
        self,
        answers: Mapping[str, Answer] | None = None,
        rounds: Mapping[str, int] | None = None,
        failures: Mapping[str, int] | None = None,
        cached: Iterable[str] = (),
        *,
        max_rounds: int = 3,
        live: bool = False,
    ) -> None:
        """A book of ``answers``; nothing pending yet."""
        self.cached = set(cached)
        """The reply cache's keys this batch run wrote: read from the batches, not the cache (calls as live)."""
        self.answers = dict(answers or {})
        self.rounds = dict(rounds or {})
        self.failures = dict(failures or {})
        self.max_rounds, self.live = max_rounds, live
        self.pending: dict[str, Pending] = {}
        """The requests this pass found unanswered, in the order they were asked (the next batch's lines)."""
        self.served = 0
        """Requests answered from the batches in this pass."""
        self.fatal: set[str] = set()
        """Requests whose answer stopped the run (HTTP 401, 403, 404): forgotten, so a mended run asks them again."""
        self._servers: dict[int, tuple[str, str]] = {}  # by generator: described once a pass, not once a request
        self._lock = threading.Lock()

    def serve(self, generator: Any, messages: Sequence[Any], generation_kwargs: Mapping[str, Any] | None) -> Served:
        """The replies the live path would get for this request, from the batches.

        :returns: The ChatMessages, or, to be sent live (``live``, unanswered), none marked :attr:`Served.live`.
        :raises NotAskedYet: When the next batch is to ask it (noted in :attr:`pending`).
        :raises openai.APIStatusError: The SDK's error for a request the batch answered with a failure.
        """
        body = request_body(generator, messages, generation_kwargs)
        if id(generator) not in self._servers:
            self._servers[id(generator)] = server_of(generator)
        server, model = self._servers[id(generator)]
        name = custom_id(body, server)
        with self._lock:
            answer = self.answers.get(name)
            earlier = self.failures.get(name, 0)
            if answer is not None and answer.answered:
                self.served += 1
                return Served(chat_messages_of(answer.body), earlier)
            if answer is not None and not answer.sent_again:
                if answer.status in FATAL_STATUS:  # stops the run; once the key or model is mended, asked again
                    self.fatal.add(name)
                raise _tried(status_error(answer, generator), earlier - 1)
            if self.live:  # sent live, its batch tries counted with the live reply
                return Served([], earlier, live=True)
            if answer is not None and self.rounds.get(name, 0) >= self.max_rounds:
                raise _tried(final_error(answer, self.rounds.get(name, 0), generator), earlier - 1)
            if name not in self.pending:
                self.pending[name] = Pending(name, body, server, model, generator)
        # Its earlier failed tries are calls of this pass too: the budget (--max-calls) spends them as live.
        raise _tried(NotAskedYet("not answered yet: asked in the next batch"), earlier)


class Served(list[Any]):
    """A batch's replies to a request, and its earlier tries a batch answered with a failure (calls, as retries)."""

    def __init__(self, replies: list[Any], earlier_tries: int, *, live: bool = False) -> None:
        """``replies``, after ``earlier_tries`` failed tries; ``live``: none yet, the request is to be sent live."""
        super().__init__(replies)
        self.earlier_tries, self.live = earlier_tries, live


def _tried(error: Exception, earlier_tries: int) -> Exception:
    """``error``, saying the tries before it that failed too (for the caller's count of calls and retries)."""
    error.earlier_tries = max(0, earlier_tries)  # type: ignore[attr-defined]
    return error


def earlier_tries(outcome: object) -> int:
    """The failed tries a batch made of a request before ``outcome`` (its replies, or its last error): 0 live."""
    tries = getattr(outcome, "earlier_tries", 0)
    return tries if isinstance(tries, int) else 0


_BOOK: ContextVar[Book | None] = ContextVar("answer_eval_batch_book", default=None)


@contextmanager
def serving(book: Book) -> Iterator[Book]:
    """Within the block, every LLM caller of this context asks ``book`` instead of its server."""
    token = _BOOK.set(book)
    try:
        yield book
    finally:
        _BOOK.reset(token)


def current_book() -> Book | None:
    """The book the running context's callers ask (``None``: they send live)."""
    return _BOOK.get()


def chat_messages_of(body: Any) -> list[Any]:
    """The ChatMessages Haystack's OpenAIChatGenerator makes of the completion ``body``, finish-reason warnings too.

    The SDK builds a reply's objects without validating them, and so does this; a body that is not a
    completion at all is :class:`NotACompletion` (the item's ``error``).
    """
    from haystack.components.generators.chat.openai import (
        _check_finish_reason,
        _convert_chat_completion_to_chat_message,
    )
    from openai.types.chat import ChatCompletion

    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise NotACompletion("the batch's answer to this request is not a chat completion")
    fields = {key: value for key, value in body.items() if isinstance(key, str) and not key.startswith("_")}
    try:
        completion = ChatCompletion.construct(**fields)
        messages = [_convert_chat_completion_to_chat_message(completion, choice) for choice in completion.choices]
        for message in messages:
            _check_finish_reason(message.meta)
    except Exception as exc:  # noqa: BLE001 - any shape the conversion cannot read is this item's failure
        raise NotACompletion(f"the batch's answer to this request is not a chat completion ({exc})") from None
    return messages


def status_error(answer: Answer, generator: Any) -> Exception:
    """The error the OpenAI SDK raises for a live request answered as the batch answered this one.

    Made by the generator's own client from the status and body, so its class and words are the live ones.
    """
    import httpx2  # the HTTP client the OpenAI SDK is built on

    status = int(answer.status or 500)
    request = httpx2.Request("POST", "https://batch.invalid" + ENDPOINT)
    content = json.dumps(answer.body).encode("utf-8") if answer.body is not None else b""
    response = httpx2.Response(status, request=request, content=content)
    made: Exception = generator.client._make_status_error_from_response(response)
    return made


def final_error(answer: Answer, rounds: int, generator: Any) -> Exception:
    """The item's failure for a request no batch of ``rounds`` ran or answered: its last batch's failure."""
    if answer.status is not None:
        return status_error(answer, generator)
    batches = "1 batch" if rounds == 1 else f"{rounds} batches"
    return RuntimeError(f"not answered in {batches} ({answer.error or 'not run'}): give --finish-live to send it live")


@dataclass
class Results:
    """What one batch's result files said: the answers to its requests, and the lines that were none."""

    answers: dict[str, Answer] = field(default_factory=dict)
    unknown: int = 0  # lines for a request the batch did not hold
    unreadable: int = 0  # lines not JSON, too long, too deep, or not a result line
    repeated: int = 0  # a second line for one request (the first is kept)
    problems: list[str] = field(default_factory=list)  # the first few unreadable lines, in words

    def add(self, other: Results) -> None:
        """Add another file's results (the error file's to the output file's)."""
        for name, answer in other.answers.items():
            if name in self.answers:
                self.repeated += 1
            else:
                self.answers[name] = answer
        self.unknown += other.unknown
        self.unreadable += other.unreadable
        self.repeated += other.repeated
        self.problems = (self.problems + other.problems)[:3]


def read_results(handle: IO[bytes], asked: frozenset[str] | set[str]) -> Results:
    """The answers a batch's output or error file gives to the requests ``asked``, read a line at a time.

    A line is ``{"custom_id", "response": {"status_code", "body"}, "error"}``. Out of order is fine;
    a line over :data:`MAX_LINE_BYTES`, not JSON, nested too deeply or of another shape is counted
    unreadable (its request, unanswered, is asked again); one for a request not ``asked`` is counted
    and dropped; a second line for a request is counted, the first kept.
    """
    results = Results()
    for number, (raw, _size) in enumerate(iter_raw_lines(handle, MAX_LINE_BYTES), start=1):
        if raw is not None and not raw.strip():
            continue
        try:
            if raw is None:
                raise ValueError(f"over {MAX_LINE_BYTES:,} bytes")
            data = json.loads(raw)
            name, answer = _result_line(data)
        except (ValueError, RecursionError) as exc:
            results.unreadable += 1
            if len(results.problems) < 3:
                words = str(exc) if type(exc) is ValueError else json_failure(exc)
                results.problems.append(f"line {number}: {cut_words(words, 200)}")
            continue
        if name not in asked:
            results.unknown += 1
        elif name in results.answers:
            results.repeated += 1
        else:
            results.answers[name] = answer
    return results


def _result_line(data: Any) -> tuple[str, Answer]:
    """The request a result line is for and its answer; ``ValueError`` for a line of another shape."""
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        raise ValueError("not a batch result line (no custom_id)")
    response, error = data.get("response"), data.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            raise ValueError("its response has no HTTP status")
        return data["custom_id"], Answer(status, response.get("body"))
    code = error.get("code") if isinstance(error, dict) else None
    return data["custom_id"], Answer(None, error if isinstance(error, dict) else None, str(code or "not run")[:100])
