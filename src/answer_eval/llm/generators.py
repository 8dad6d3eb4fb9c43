"""A chat generator as the calls see it: what identifies its replies, the secrets it holds, how its calls fail.

Keeping credentials out of everything the LLM graders write or print.

A grader's reply is untrusted text: a server, a proxy or a prompt injection can make it quote the
request's ``Authorization`` header. :class:`Redactor` removes from any text the API key itself,
any ``Bearer`` token, the value of an ``Authorization``, ``api-key`` or ``x-api-key`` header, and
the password or key a server URL carries (``https://user:PASSWORD@host``, ``?api-key=...``). The
LLM graders pass every reply, explanation and error through it before it is cached, returned,
written or printed.

A key of fewer than 8 characters (a local server's placeholder such as ``ollama``) is replaced
only where it stands as a whole word, so that it does not turn every word holding it into ``***``.

What identifies a chat generator's replies, what of it a signature may show, and the secrets it holds.

A generator's identity is what it talks to: its type, server, model and generation options, and for
a wrapper of generators (Haystack's ``FallbackChatGenerator``, ``chat_generators``; a wrapper of
one, ``chat_generator``) every generator it can reach, in order, so that two wrappers of two models
never share a reply cache key nor pass for one judge twice. A generator that names no model and
wraps no generator (a custom one) cannot be told (:func:`untold`): the reply cache refuses it
(:class:`~answer_eval.llm.calls.ChatCaller`), and a panel tells it from another only as another object.

How a failed generator call is told apart: transient (retried), fatal to the run, or this item's alone.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from answer_eval.errors import OptionError

__all__ = [
    "GraderUnavailable",
    "Redactor",
    "ServerMisbehaves",
    "StructuredRefused",
    "backoff_wait",
    "chat_messages",
    "check_cacheable",
    "cut_words",
    "describe_generator",
    "generator_secrets",
    "openai_compatible",
    "plausible_variable_name",
    "refuses_option",
    "sent_options",
    "server_words",
    "shown_generator",
    "status_of",
    "stop_run",
    "timed_out",
    "transient",
    "unreachable",
    "untold",
    "url_secrets",
    "without_credentials",
    "words_for",
]

MASK = "***"

_SHORT_KEY = 8
# A Bearer token (8 token characters or more, so "the bearer of bad news" stays), or a credential
# header's value after its scheme, as a reply might quote them ("Authorization: Bearer sk-...").
_BEARER = re.compile(
    r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{7,}[A-Za-z0-9_~+/=-]"
)  # a full stop after it is the sentence's
_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?(?:authorization|x-api-key|api-key|api_key)[\"']?\s*[:=]\s*[\"']?(?:(?:basic|token)\s+)?)"
    r"(?!bearer\b)[^\s\"',;]*[^\s\"',;.)\]]"
)
_SECRET_QUERY = re.compile(r"(?i)^(?:api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature)$")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def plausible_variable_name(name: object) -> bool:
    """Whether ``name`` could be an environment variable's name (letters, digits, ``_``; not a digit first).

    An API key given where the name of its variable is asked for is told by this: keys hold ``-``
    or other characters a variable's name has not, so such a value is refused without being shown.
    """
    return isinstance(name, str) and _VARIABLE.fullmatch(name) is not None


def url_secrets(url: str | None) -> list[str]:
    """The password and the secret query values a server URL carries (to redact wherever they appear)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        found = [parts.password] if parts.password else []
    except ValueError:
        return []
    found += [value for name, value in parse_qsl(parts.query, keep_blank_values=False) if _SECRET_QUERY.match(name)]
    return [value for value in found if value]


def without_credentials(url: str | None) -> str | None:
    """``url`` with its password and secret query values masked (what a signature or a message may show)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}:{MASK}@{host}"
        query = [(name, MASK if _SECRET_QUERY.match(name) else value) for name, value in parse_qsl(parts.query, True)]
    except ValueError:
        return MASK  # not a URL one can take apart: show none of it
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), parts.fragment))


class Redactor:
    """Removes the secrets it is given, and any Bearer token or credential header, from text."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        """Redact each of ``secrets`` (empty ones ignored), longest first so no part of one is left."""
        kept = sorted({secret for secret in secrets if isinstance(secret, str) and secret.strip()}, key=len)
        self.secrets = tuple(reversed(kept))
        patterns = [
            re.escape(secret) if len(secret) >= _SHORT_KEY else rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])"
            for secret in self.secrets
        ]
        self._own = re.compile("|".join(patterns)) if patterns else None

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        if not text:
            return text
        if self._own is not None:
            text = self._own.sub(MASK, text)
        text = _BEARER.sub(rf"\g<1>{MASK}", text)
        return _HEADER.sub(rf"\g<1>{MASK}", text)


_OPENAI_GENERATORS = frozenset({"OpenAIChatGenerator", "AzureOpenAIChatGenerator"})

MAX_WRAPPING = 8
"""How deep wrappers of generators are followed: past it (a wrapper holding itself), a generator cannot be told."""

_SERVER_FIELDS = ("azure_endpoint", "base_url", "url", "endpoint")
"""Where a generator other than OpenAI's keeps its server (Azure's endpoint, Ollama's ``url``)."""

_MODEL_FIELDS = ("model_name", "model_id")
"""Where a generator keeps its model when not in ``model``."""

_NESTED_FIELDS = (("api_params", "model"), ("api_params", "url"), ("huggingface_pipeline_kwargs", "model"))
"""A model or server kept in a mapping (Hugging Face's generators: ``api_params``, ``huggingface_pipeline_kwargs``)."""


def wrapped_generators(generator: Any) -> list[Any] | None:
    """The generators ``generator`` wraps, in order: ``chat_generators`` (a fallback's), else ``chat_generator``.

    ``None``: it wraps none (it talks to a server itself).
    """
    members = getattr(generator, "chat_generators", None)
    if isinstance(members, list | tuple):
        return list(members)
    member = getattr(generator, "chat_generator", None)
    if member is not None and callable(getattr(member, "run", None)):
        return [member]
    return None


def _named(generator: Any) -> dict[str, str]:
    """The servers and models a generator names besides ``api_base_url`` and ``model``: only those set."""
    found = {name: getattr(generator, name, None) for name in (*_SERVER_FIELDS, *_MODEL_FIELDS)}
    for holder, name in _NESTED_FIELDS:
        values = getattr(generator, holder, None)
        found[f"{holder}.{name}"] = values.get(name) if isinstance(values, dict) else None
    return {name: value for name, value in found.items() if isinstance(value, str) and value.strip()}


def describe_generator(generator: Any, depth: int = 0) -> dict[str, Any]:
    """What identifies a generator's replies: its type, server, model and generation options (``n`` excepted).

    Other servers and models it names (``azure_endpoint``, ``url``...) are added only when set, and a
    wrapper's generators as ``reaches`` (each described so, at most :data:`MAX_WRAPPING` deep): so
    OpenAI's generator is described as earlier versions described it, and their caches still serve.
    The cache key hashes it as it is; :func:`shown_generator` is what a signature may show.
    """
    options = dict(getattr(generator, "generation_kwargs", None) or {})
    options.pop("n", None)
    kind = type(generator)
    described = {
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "api_base_url": getattr(generator, "api_base_url", None),
        "model": getattr(generator, "model", None),
        "generation_kwargs": options,
        **_named(generator),
    }
    members = wrapped_generators(generator)
    if members is not None:
        too_deep = depth >= MAX_WRAPPING  # a wrapper holding itself: untold, so never a cache key
        described["reaches"] = None if too_deep else [describe_generator(one, depth + 1) for one in members]
    return described


def untold(generator: Any, depth: int = 0) -> str | None:
    """Why what ``generator`` talks to cannot be told, in words; ``None`` when it can.

    A generator is told by a model it names (``model``, ``model_name``, ``model_id``, Hugging Face's
    ``api_params`` or pipeline ``model``), a wrapper by every generator it wraps being told.
    """
    name = type(generator).__name__
    members = wrapped_generators(generator)
    if members is not None:
        if depth >= MAX_WRAPPING:
            return f"{name} wraps generators more than {MAX_WRAPPING} deep (does it hold itself?)"
        if not members:
            return f"{name} wraps no generator"
        return next((why for why in (untold(one, depth + 1) for one in members) if why is not None), None)
    model = getattr(generator, "model", None)
    if (isinstance(model, str) and model.strip()) or any(key not in _SERVER_FIELDS for key in _named(generator)):
        return None
    return (
        f"{name} names no model (a 'model' attribute) and wraps no generator ('chat_generators', "
        "'chat_generator'), so what it talks to cannot be told"
    )


def check_cacheable(generator: Any) -> None:
    """Raise :class:`OptionError` naming ``cache_path`` when ``generator``'s replies cannot be cached (:func:`untold`).

    Its cache key would name no model, so two models behind it would share, and replay, each other's
    replies: refused, rather than cached on a guess or silently not cached.
    """
    why = untold(generator)
    if why is not None:
        raise OptionError(
            "cache_path",
            f"cannot cache this chat generator's replies: {why}. Its replies would share a cache key with another "
            "model's; leave cache_path out, or give the generator a 'model' attribute naming its model",
        )


def shown_generator(generator: Any, depth: int = 0) -> dict[str, Any]:
    """:func:`describe_generator` with its credentials masked: the server URL's password, header values, tokens.

    Generation options may carry headers (``extra_headers={"Authorization": ...}``): they are shown
    by name only. A wrapper's ``api_base_url`` and ``model`` are its generators', in order (a tuple),
    so that a signature names what a fallback can reach.
    """
    described = describe_generator(generator, MAX_WRAPPING)  # its own fields: its members are shown below
    described.pop("reaches", None)
    redact = Redactor(generator_secrets(generator))
    options = {
        name: "***" if name in ("extra_headers", "extra_query", "extra_body") else redact(str(value))
        for name, value in described["generation_kwargs"].items()
    }
    urls = ("api_base_url", *_SERVER_FIELDS)
    shown = {
        name: without_credentials(value) if name in urls and isinstance(value, str) else value
        for name, value in described.items()
    }
    shown["generation_kwargs"] = options
    members = wrapped_generators(generator)
    if members is not None and depth < MAX_WRAPPING:
        reached = [shown_generator(one, depth + 1) for one in members]
        shown["reaches"] = reached
        shown["api_base_url"] = tuple(one["api_base_url"] for one in reached)
        shown["model"] = tuple(one["model"] for one in reached)
    return shown


def server_words(generator: Any) -> str:
    """The server(s) ``generator`` talks to, for a message: its URL without credentials, a wrapper's every one."""
    urls = shown_generator(generator)["api_base_url"]
    flat, pending = [], [urls]
    while pending:  # a wrapper's URLs are a tuple, a wrapper of wrappers' a tuple of tuples: flattened in order
        value = pending.pop(0)
        if isinstance(value, tuple):
            pending[:0] = list(value)
        else:
            flat.append(value or "OpenAI's API")
    return ", ".join(dict.fromkeys(flat))


def generator_secrets(generator: Any, depth: int = 0) -> list[str]:
    """The secrets a generator holds: its API key, the password and key its server URL carries; its members' too."""
    found: list[str] = []
    try:
        value = generator.api_key.resolve_value()
    except Exception:  # noqa: BLE001 - no key, a key that cannot be resolved: nothing to hide
        value = None
    if isinstance(value, str) and value:
        found.append(value)
    for name in ("api_base_url", *_SERVER_FIELDS):
        url = getattr(generator, name, None)
        found += url_secrets(url) if isinstance(url, str) else []
    members = wrapped_generators(generator)
    if members is not None and depth < MAX_WRAPPING:
        # A fallback's members send their own keys: a reply quoting one is redacted as the wrapper's own would be.
        found += [secret for one in members for secret in generator_secrets(one, depth + 1)]
    return found


def openai_compatible(generator: Any) -> bool:
    """Whether ``generator`` is OpenAI's chat generator or a subclass (which speak OpenAI's wire format)."""
    return _openai_class(generator.__class__)


@functools.lru_cache(maxsize=64)
def _openai_class(kind: type) -> bool:
    return bool({base.__name__ for base in kind.__mro__} & _OPENAI_GENERATORS)


def sent_options(generator: Any, options: dict[str, Any]) -> dict[str, Any]:
    """Generation options as handed to ``generator.run``: for OpenAI's generator, ``response_format`` in ``extra_body``.

    Haystack's OpenAIChatGenerator sends a request with a ``response_format`` through the OpenAI
    SDK's ``parse`` endpoint, whose typing of the schema and parsing of the reply cost 3-4 ms of
    CPU a request, half the client's (``benchmarks/llm_latency.py``). From ``extra_body`` the same
    JSON reaches the server through ``create``. The generator's own ``extra_body`` is kept (this
    request's is laid over it, as Haystack lays a run's options over the generator's), and its own
    ``response_format``, which would bring ``parse`` back (and have the SDK parse the reply against
    it), is overridden, as the option was before. A subclass that builds its request its own way
    (OpenRouter's puts every option in ``extra_body``) gets the option as it is. What is cached and
    how a refusal is recognised still see ``response_format``.
    """
    if "response_format" not in options or not _builds_openai_requests(generator.__class__):
        return options
    sent = dict(options)
    own = getattr(generator, "generation_kwargs", None) or {}
    body = dict(own.get("extra_body") or {})
    body.update(sent.get("extra_body") or {})
    body["response_format"] = sent.pop("response_format")
    sent["extra_body"] = body
    if own.get("response_format") is not None:
        sent["response_format"] = None  # Haystack drops a falsy one and calls create
    return sent


@functools.lru_cache(maxsize=64)
def _builds_openai_requests(kind: type) -> bool:
    """OpenAI's generator class, or a subclass that builds its requests as OpenAI's does (Azure's); once per class."""
    if not _openai_class(kind):
        return False
    from haystack.components.generators.chat import OpenAIChatGenerator  # imported already: it is in the MRO

    return getattr(kind, "_prepare_api_call", None) is OpenAIChatGenerator._prepare_api_call


@functools.cache
def _message_type() -> Any:
    from haystack.dataclasses import ChatMessage  # lazily: haystack is not imported with the package

    return ChatMessage


def chat_messages(messages: Sequence[tuple[str, str]]) -> list[Any]:
    """``(role, text)`` pairs as Haystack chat messages: ``system`` as a system message, any other as the user's."""
    chat = _message_type()
    return [chat.from_system(text) if role == "system" else chat.from_user(text) for role, text in messages]


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
    refused alike (:mod:`answer_eval.llm.caller_setup`). An :class:`~answer_eval.errors.OptionError` of
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

    Such a request may have been queued at the server, not lost: see :meth:`answer_eval.llm.call_limits.Pace.given_up`.
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
    get the same, so such an error is not retried (:mod:`answer_eval.llm.caller_setup`).
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
