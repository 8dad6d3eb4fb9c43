"""The chat generator a component is given: its default and its deserialisation (its check: ``llm.jury``'s)."""

from __future__ import annotations

import copy
from typing import Any

from haystack.utils.deserialization import deserialize_chatgenerator_inplace

__all__ = ["default_generator", "deserialize_generator"]


def default_generator() -> Any:
    """The generator used when none is given, as Haystack's own LLM evaluators do: OpenAI, key from the environment."""
    from haystack.components.generators.chat import OpenAIChatGenerator

    return OpenAIChatGenerator()


def deserialize_generator(data: dict[str, Any], key: str = "chat_generator") -> dict[str, Any]:
    """A copy of ``data`` with ``init_parameters[key]`` turned back into a generator (``data`` itself untouched).

    A list (a jury's) is turned back member by member.

    :raises TypeError: When it is not a serialised component (naming ``key``).
    """
    parameters = dict(data.get("init_parameters") or {})
    copied = {**data, "init_parameters": parameters}
    value = parameters.get(key)
    if value is None:
        return copied
    if isinstance(value, list):
        members = [deserialize_generator({"init_parameters": {key: one}}, key) for one in value]
        parameters[key] = [member["init_parameters"][key] for member in members]
        return copied
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise TypeError(f"{key} must be a serialised chat generator (a dict with 'type'), got {type(value).__name__}")
    # A deep copy: some Haystack releases turn the nested secrets into objects where they find them.
    parameters[key] = copy.deepcopy(value)
    deserialize_chatgenerator_inplace(parameters, key=key)
    return copied
