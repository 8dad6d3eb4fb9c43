"""Type checks of parameters, shared by the core's options and the Haystack components (so ``from_dict`` validates)."""

from __future__ import annotations

from typing import Any

__all__ = ["check_bool", "check_instance", "check_names", "check_number", "check_str", "shown_number"]


def check_bool(name: str, value: Any) -> None:
    """Raise `TypeError` unless ``value`` is a bool."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def check_str(name: str, value: Any, *, optional: bool = False) -> None:
    """Raise `TypeError` unless ``value`` is a str (or ``None`` when ``optional``)."""
    check_instance(name, value, str, "a str", optional=optional)


def check_instance(name: str, value: Any, kinds: type | tuple[type, ...], what: str, *, optional: bool = False) -> None:
    """Raise `TypeError` saying ``what`` was expected unless ``value`` is a ``kinds`` (or ``optional`` None)."""
    if optional and value is None:
        return
    if not isinstance(value, kinds):
        raise TypeError(f"{name} must be {what}{' or None' if optional else ''}, got {type(value).__name__}")


def check_number(name: str, value: Any, *, integer: bool = False, optional: bool = False) -> None:
    """Raise `TypeError` unless ``value`` is a number (an int when ``integer``; ``None`` when ``optional``)."""
    if optional and value is None:
        return
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        what = "an int" if integer else "a number"
        raise TypeError(f"{name} must be {what}{' or None' if optional else ''}, got {type(value).__name__}")


def shown_number(value: object, limit: int) -> str:
    """``value`` for a message: its ``repr``, cut past ``limit`` characters (an int of 400 digits).

    A cut one is its first 20 characters and how many digits it has.
    """
    text = repr(value)
    return text if len(text) <= limit else f"{text[:20]}... ({len(text.lstrip('-')):,} digits)"


def check_names(name: str, value: Any, *, optional: bool = False) -> list[str]:
    """Return ``value`` as a list after checking it is a list (or tuple) of str; `TypeError` otherwise.

    With ``optional``, ``None`` is accepted and gives an empty list.
    """
    if optional and value is None:
        return []
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{name} must be a list of str{' or None' if optional else ''}")
    return list(value)
