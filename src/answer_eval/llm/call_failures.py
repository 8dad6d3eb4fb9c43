"""How a failed generator call is told apart: transient (retried), fatal to the run, or this item's alone."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from answer_eval.errors import OptionError

__all__ = [
    "GraderUnavailable",
    "ServerMisbehaves",
    "StructuredRefused",
    "backoff_wait",
    "cut_words",
    "fatal",
    "not_a_completion",
    "refuses_option",
    "retry_after",
    "status_of",
    "stop_run",
    "timed_out",
    "transient",
    "unreachable",
    "words_for",
]

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_TRANSIENT_NAMES = ("Timeout", "Connection", "RateLimit", "InternalServer", "ServiceUnavailable")
_FATAL_STATUS = frozenset({401, 403, 404})
_NO_ANSWER_NAMES = ("ConnectionError", "ConnectError", "Timeout")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an error carries, when it carries one."""
    # openai's errors carry status_code; httpx's HTTPStatusError carries it on its response.
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def transient(exc: BaseException) -> bool:
    """Whether another try may succeed: HTTP 408, 409, 429, 5xx, a timeout (the deadline too), a lost connection."""
    status = status_of(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    return isinstance(exc, TimeoutError | ConnectionError) or any(n in type(exc).__name__ for n in _TRANSIENT_NAMES)


def retry_after(exc: BaseException) -> float | None:
    """The seconds a server's ``Retry-After`` asks for (``None``: none, or not a finite number)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = None if headers is None else headers.get("retry-after")
    try:
        told = None if value is None else float(value)
    except (TypeError, ValueError):
        return None
    return None if told is None or not math.isfinite(told) else max(0.0, told)  # "nan", "inf": not a wait


class GraderUnavailable(RuntimeError):
    """The grader cannot answer any item: the key is refused (HTTP 401, 403) or the model is not there (404).

    Raised out of the run rather than written as an ``error`` for every item, so that a wrong key
    or model name stops an evaluation at once instead of filling its results with failures.
    """


class ServerMisbehaves(GraderUnavailable):
    """The server answers in a way no item can get past: not a chat completion, or requests held open past the deadline.

    Its message says what the server did and what to check.
    """


class StructuredRefused(GraderUnavailable, OptionError):
    """The server refused the structured output given explicitly (``structured="json_schema"``, ``json_object``).

    Raised at the first refusal, before the server ever answered in that format: every item would be
    refused alike (:mod:`answer_eval.llm.structured`). An :class:`~answer_eval.errors.OptionError` of
    ``structured`` too (a ``ValueError``): its message says which value to give instead; the command line
    exits 2 with it, keeping the rows done.
    """

    def __init__(self, message: str) -> None:
        """The refusal in words (``str(exc)`` is ``message``, so that a run stopped by it can raise it again)."""
        GraderUnavailable.__init__(self, message)
        self.option, self.detail = "structured", message


def cut_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, ``...`` marking the cut (whole when it fits)."""
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 3)]
    space = head.rfind(" ")
    if space >= limit // 2:  # a word boundary not too far back; a text of one long word is cut inside it
        head = head[:space]
    return head.rstrip(" ,:;") + "..."


def not_a_completion(exc: BaseException) -> str | None:
    """What the server sent, when the generator failed because its reply was not a chat completion; else ``None``.

    Haystack's OpenAIChatGenerator asserts that a non-streaming request got a ChatCompletion: the
    OpenAI client hands it the body as text when the server sent a stream or another content type
    (under ``python -O`` the assertion is gone and the text's missing attribute is what fails). A
    body sent as JSON that does not parse is told by its start: server-sent events or a web page.
    """
    words = str(exc)
    if (isinstance(exc, AssertionError) and "Unexpected response type" in words) or (
        isinstance(exc, AttributeError) and "'str' object has no attribute" in words
    ):
        return "a stream of server-sent events, or a body of another content type (a web page, plain text)"
    if isinstance(exc, json.JSONDecodeError) and isinstance(exc.doc, str):
        start = exc.doc.lstrip()[:200].lower()
        if start.startswith(("data:", "event:", ":")):
            return "a stream of server-sent events, labelled as JSON"
        if start.startswith("<"):
            return "a web page (HTML), labelled as JSON"
    return None


def words_for(exc: BaseException) -> str:
    """An error in words: its type, its HTTP status when it has one, its message (not yet redacted or cut)."""
    status = status_of(exc)
    words = f"{type(exc).__name__}{'' if status is None else f' (HTTP {status})'}: {exc}"
    if isinstance(exc, json.JSONDecodeError):
        words = f"the server's reply is not valid JSON ({words}): a body cut short, or not a chat completion"
    return words


def timed_out(exc: BaseException) -> bool:
    """Whether the request timed out without an answer: the deadline, or a client's timeout (``APITimeoutError``).

    Such a request may have been queued at the server, not lost: see :meth:`answer_eval.llm.pacing.Pace.given_up`.
    """
    if status_of(exc) is not None:
        return False
    return isinstance(exc, TimeoutError) or any("Timeout" in kind.__name__ for kind in type(exc).__mro__)


def unreachable(exc: BaseException) -> bool:
    """Whether the request got no answer at all: no connection (refused, reset, no such host) or a timeout.

    openai's ``APIConnectionError`` (``APITimeoutError`` is one), httpx's ``ConnectError`` and
    ``TimeoutException``, Python's ``ConnectionError`` and ``TimeoutError`` (the deadline too).
    """
    if status_of(exc) is not None:
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return any(name in kind.__name__ for kind in type(exc).__mro__ for name in _NO_ANSWER_NAMES)


def fatal(exc: BaseException) -> bool:
    """A refused key or an unknown model (HTTP 401, 403, 404): no request would get past it."""
    return status_of(exc) in _FATAL_STATUS


_OPTION_WORDS = ("json_schema", "schema")
"""Words besides an option's own name by which a server says it refused a ``response_format``."""


def refuses_option(exc: BaseException, options: Mapping[str, object]) -> bool:
    """Whether ``exc`` (HTTP 400, 422 or 5xx) names one of a request's own ``options``: a server that cannot serve it.

    llama.cpp's server answers a ``json_schema`` response format with HTTP 500: retrying it would
    get the same, so such an error is not retried (:mod:`answer_eval.llm.structured`).
    """
    status = status_of(exc)
    if not options or status is None or not (status in (400, 422) or status >= 500):
        return False
    words = str(exc).lower()
    named = [name for name in options if name != "n"]  # "n" is in every other word
    if "response_format" in options:
        named += _OPTION_WORDS
    return any(name.lower() in words for name in named)


def stop_run(exc: BaseException, words: str, where: str) -> None:
    """Raise :class:`GraderUnavailable` for a failure every other request would meet too.

    :param words: The failure in words (redacted, cut); ``where``: the server, in words.
    """
    if fatal(exc):
        raise GraderUnavailable(f"the grader refused the request: {words}") from None
    sent = not_a_completion(exc)
    if sent is not None:
        raise ServerMisbehaves(
            f"the server ({where}) answered a chat completion request with something that is not a JSON chat "
            f"completion: {sent}. Every request would get the same. Check that the URL is the server's "
            "OpenAI-compatible API (it usually ends in /v1) and that no proxy or server setting forces streaming"
        ) from None


def backoff_wait(exc: BaseException, attempt: int, backoff: float, max_backoff: float) -> float:
    """Seconds before retry ``attempt + 1``: ``backoff`` doubled each time, or the server's ``Retry-After``.

    At most ``max_backoff``.
    """
    wait = backoff * (2.0 ** min(attempt, 60))
    told = retry_after(exc)
    return min(max_backoff, wait if told is None else told)
