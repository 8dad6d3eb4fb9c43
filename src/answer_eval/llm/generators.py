"""What identifies a chat generator's replies, what of it a signature may show, and the secrets it holds."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from answer_eval.llm.secrets import Redactor, url_secrets, without_credentials

__all__ = [
    "chat_messages",
    "describe_generator",
    "generator_secrets",
    "openai_compatible",
    "sent_options",
    "shown_generator",
]

_OPENAI_GENERATORS = frozenset({"OpenAIChatGenerator", "AzureOpenAIChatGenerator"})


def describe_generator(generator: Any) -> dict[str, Any]:
    """What identifies a generator's replies: its type, server, model and generation options (``n`` excepted).

    The cache key hashes it as it is; :func:`shown_generator` is what a signature may show.
    """
    options = dict(getattr(generator, "generation_kwargs", None) or {})
    options.pop("n", None)
    kind = type(generator)
    return {
        "type": f"{kind.__module__}.{kind.__qualname__}",
        "api_base_url": getattr(generator, "api_base_url", None),
        "model": getattr(generator, "model", None),
        "generation_kwargs": options,
    }


def shown_generator(generator: Any) -> dict[str, Any]:
    """:func:`describe_generator` with its credentials masked: the server URL's password, header values, tokens.

    Generation options may carry headers (``extra_headers={"Authorization": ...}``): they are shown
    by name only.
    """
    described = describe_generator(generator)
    redact = Redactor(generator_secrets(generator))
    options = {
        name: "***" if name in ("extra_headers", "extra_query", "extra_body") else redact(str(value))
        for name, value in described["generation_kwargs"].items()
    }
    url = described["api_base_url"]
    return {
        **described,
        "api_base_url": without_credentials(url) if isinstance(url, str) else url,
        "generation_kwargs": options,
    }


def generator_secrets(generator: Any) -> list[str]:
    """The secrets a generator holds: its API key, and the password and key its server URL carries."""
    found: list[str] = []
    try:
        value = generator.api_key.resolve_value()
    except Exception:  # noqa: BLE001 - no key, a key that cannot be resolved: nothing to hide
        value = None
    if isinstance(value, str) and value:
        found.append(value)
    url = getattr(generator, "api_base_url", None)
    return found + (url_secrets(url) if isinstance(url, str) else [])


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
