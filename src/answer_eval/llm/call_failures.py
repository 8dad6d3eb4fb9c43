"""How a failed generator call is told apart: transient (retried), fatal to the run, or this item's alone."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

__all__ = [
    "GraderUnavailable",
    "ServerMisbehaves",
    "fatal",
    "not_a_completion",
    "refuses_option",
    "retry_after",
    "status_of",
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

    Such a request may have been queued at the server, not lost: see :meth:`answer_eval.llm.calls.ChatCaller._given_up`.
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
