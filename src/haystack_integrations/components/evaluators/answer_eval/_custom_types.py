"""Custom question types in a saved pipeline: functions saved by import path, loaded through Haystack's allow-list."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from haystack.core.errors import SerializationError
from haystack.utils import deserialize_callable, serialize_callable

__all__ = ["load_custom_types", "save_custom_types"]


def save_custom_types(functions: Mapping[str, Callable[[str, str], float]]) -> dict[str, str] | None:
    """Each function's import path (`module.function`), or `None` when there is none.

    :raises SerializationError: For a lambda, a nested function or a method: only module-level
        functions can be saved.
    """
    if not functions:
        return None
    paths = {}
    for name, function in functions.items():
        try:
            paths[name] = serialize_callable(function)
        except SerializationError as exc:
            raise SerializationError(
                f"custom type {name!r} cannot be saved: {exc} Give a module-level function instead."
            ) from exc
    return paths


def load_custom_types(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a component's `to_dict`) with its custom types' import paths replaced by the functions.

    The functions are imported by Haystack's `deserialize_callable`, which only imports modules on
    Haystack's deserialization allow-list.

    :raises DeserializationError: If a custom type's module is not allowed or not found.
    :raises TypeError: If `custom_types` is not a dict of name to import path.
    """
    parameters = data.get("init_parameters", {})
    custom = parameters.get("custom_types")
    if custom is not None and (
        not isinstance(custom, dict) or not all(isinstance(path, str) for path in custom.values())
    ):
        raise TypeError("custom_types must be a dict of type name to a function's import path (module.function)")
    if not custom:
        return data
    functions = {name: deserialize_callable(path) for name, path in custom.items()}
    return {**data, "init_parameters": {**parameters, "custom_types": functions}}
