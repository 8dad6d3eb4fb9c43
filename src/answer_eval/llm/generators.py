"""What identifies a chat generator's replies, what of it a signature may show, and the secrets it holds."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from answer_eval.llm.secrets import Redactor, url_secrets, without_credentials

__all__ = ["chat_messages", "describe_generator", "generator_secrets", "shown_generator"]


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


@functools.cache
def _message_type() -> Any:
    from haystack.dataclasses import ChatMessage  # lazily: haystack is not imported with the package

    return ChatMessage


def chat_messages(messages: Sequence[tuple[str, str]]) -> list[Any]:
    """``(role, text)`` pairs as Haystack chat messages: ``system`` as a system message, any other as the user's."""
    chat = _message_type()
    return [chat.from_system(text) if role == "system" else chat.from_user(text) for role, text in messages]
