"""Reading a grader's reply: a score on a scale, a pairwise choice, or yes/no, with the explanation.

The prompts ask for one JSON object; models still wrap it in a code fence, put words around it,
or answer plainly ("4 - the summary is good", "Yes, the candidate is correct."). Each reader
takes the JSON object when there is one, then a plain reply that starts with the verdict, and
otherwise says the reply could not be read (``None``): never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Read", "read_choice", "read_score", "read_yes_no", "refused"]

T = TypeVar("T")


@dataclass(frozen=True)
class Read(Generic[T]):
    """What a reply says.

    :param value: The verdict (a score, ``"A"``/``"B"``/``"TIE"``, or a bool); ``None`` when unreadable.
    :param explanation: The grader's reasoning (the whole reply when it gave no separate explanation).
    """

    value: T | None
    explanation: str


_LEADING_NUMBER = re.compile(r"^\W*?(?:(?:score|rating)\s*[:=]?\s*)?([+-]?\d+)(?:\.0+)?(?!\d|\.\d)", re.IGNORECASE)
# An explicit "Score: 4" anywhere wins over a number the reply starts with ("1. The response...").
_NAMED_NUMBER = re.compile(r"\b(?:score|rating)\s*(?:is|of)?\s*[:=]?\s*([+-]?\d+)(?:\.0+)?(?!\d|\.\d)", re.IGNORECASE)
_LEADING_TIE = re.compile(r"^\W*(?:it\s+is\s+|it's\s+)?(?:a\s+)?tie\b", re.IGNORECASE)
_LEADING_CHOICE = re.compile(
    r"^\W*(?:(?:the\s+)?(?:choice|winner|better(?:\s+response)?)\s*(?:is)?\s*[:=]?\s*)?(?:response\s+)?(A|B|TIE)"
    r"(?=\s*(?:[.,:;)!\]]|$|\s+(?:is|wins|was)\b))",
    re.IGNORECASE,
)
_LEADING_YES_NO = re.compile(
    r"^\W*(?:(yes|no|true|false)\b(?!\s+doubt)|(correct|incorrect)(?=\s*(?:[.,!;:]|$)))", re.IGNORECASE
)
_REFUSAL = re.compile(
    r"^\W*(?:as an ai[^,.]*[,.]\s*)?(?:i'm sorry|i am sorry|sorry)?\W*(?:but\s+)?i\s+(?:can(?:no|')t|cannot|won't|"
    r"will not|am unable to|am not able to)\s+(?:help|assist|comply|grade|evaluate|provide|do that)(?!\s+but\b)",
    re.IGNORECASE,
)


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (words or a code fence around it, or more braces after it, allowed)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            data, _ = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(data, dict):
            return data
        start = text.find("{", start + 1)
    return None


def _explanation(data: dict[str, Any], text: str) -> str:
    for key in ("explanation", "reasoning", "reason", "rationale"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return text.strip()


def _read(
    text: str, keys: tuple[str, ...], from_json: Callable[[Any], T | None], plain: Callable[[str], T | None]
) -> Read[T]:
    data = _json_object(text)
    if data is not None:
        for key in keys:
            if key in data:
                return Read(from_json(data[key]), _explanation(data, text))
    return Read(plain(text), text.strip())


def read_score(text: str, allowed: Callable[[int], bool]) -> Read[int]:
    """A score the scale ``allowed`` (JSON ``score`` or ``rating``; a plain reply starting with the number)."""

    def from_json(value: Any) -> int | None:
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            match = _LEADING_NUMBER.match(value)
            return from_json(int(match.group(1))) if match else None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return value if isinstance(value, int) and allowed(value) else None

    def plain(reply: str) -> int | None:
        named = _NAMED_NUMBER.findall(reply)
        if named:
            return from_json(int(named[-1]))
        match = _LEADING_NUMBER.match(reply)
        return from_json(int(match.group(1))) if match else None

    return _read(text, ("score", "rating"), from_json, plain)


def read_choice(text: str) -> Read[str]:
    """``"A"``, ``"B"`` or ``"TIE"`` (JSON ``choice`` or ``winner``; a plain reply starting with it)."""

    def from_json(value: Any) -> str | None:
        if not isinstance(value, str):
            return None
        word = value.strip().upper().removeprefix("RESPONSE ").strip()
        if word in ("A", "B", "TIE"):
            return word
        return "TIE" if word in ("EQUAL", "SAME", "NEITHER", "BOTH") else None

    def plain(reply: str) -> str | None:
        if _LEADING_TIE.match(reply):
            return "TIE"
        match = _LEADING_CHOICE.match(reply)
        return match.group(1).upper() if match else None

    return _read(text, ("choice", "winner", "better"), from_json, plain)


def read_yes_no(text: str) -> Read[bool]:
    """Whether the grader said correct (JSON ``correct``; a plain reply starting with yes or no)."""

    def from_json(value: Any) -> bool | None:
        if isinstance(value, bool):
            return value
        return plain(value) if isinstance(value, str) else None

    def plain(reply: str) -> bool | None:
        match = _LEADING_YES_NO.match(reply)
        return None if match is None else (match.group(1) or match.group(2)).lower() in ("yes", "true", "correct")

    return _read(text, ("correct", "verdict", "answer"), from_json, plain)


def refused(text: str) -> bool:
    """Whether an unreadable reply is the grader declining ("I'm sorry, but I can't help with that")."""
    return _REFUSAL.match(text.replace("\u2019", "'")) is not None
