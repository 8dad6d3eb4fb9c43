"""What identifies a chat generator's replies, what of it a signature may show, and the secrets it holds.

A generator's identity is what it talks to: its type, server, model and generation options, and for
a wrapper of generators (Haystack's ``FallbackChatGenerator``, ``chat_generators``; a wrapper of
one, ``chat_generator``) every generator it can reach, in order, so that two wrappers of two models
never share a reply cache key nor pass for one judge twice. A generator that names no model and
wraps no generator (a custom one) cannot be told (:func:`untold`): the reply cache refuses it
(:class:`~answer_eval.llm.calls.ChatCaller`), and a panel tells it from another only as another object.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from answer_eval.errors import OptionError
from answer_eval.llm.secrets import Redactor, url_secrets, without_credentials

__all__ = [
    "chat_messages",
    "check_cacheable",
    "describe_generator",
    "generator_secrets",
    "openai_compatible",
    "sent_options",
    "server_words",
    "shown_generator",
    "untold",
    "wrapped_generators",
]

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
