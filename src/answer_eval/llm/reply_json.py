"""The top-level JSON objects of a grader's reply, found in one pass: linear time, no recursion.

A reply is words, code fences and JSON objects mixed. An object is a ``{`` that starts a valid
JSON object; it is *top-level* when no other object holds it. The objects are found left to
right by an iterative parser (a stack, never the call stack): from each ``{`` it reads tokens
until the object closes (an object, and the search goes on after it) or a token does not fit
(no object there, and the search goes on *from that token*, not from the next ``{``: a ``{``
the failed attempt already read as part of its would-be object is not tried again, which is
what keeps the whole scan linear where trying every ``{`` took quadratic time).

An object nested deeper than :data:`MAX_DEPTH` levels is no grader's verdict (a verdict is one
flat object): the scan stops and says so, and the reader treats the reply as unreadable, since
reading what is inside such an object would take a nested object for a top-level one.

Strings may hold raw control characters (a newline in an explanation), as graders write them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_DEPTH", "JsonObject", "JsonScan", "scan_json_objects"]

MAX_DEPTH = 32
"""The deepest nesting of objects and arrays a reply's JSON object may have."""

# One JSON token after optional whitespace. Each alternative starts with a character the others
# cannot start with, and a string consumes one character (or one escape) per step, so a token
# that does not close (a string with no closing quote) fails after one pass to the end.
_TOKEN = re.compile(
    r'[ \t\r\n]*(?:(")(?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)(?![0-9A-Za-z_.])"
    r"|(true|false|null|NaN|-?Infinity)(?![0-9A-Za-z_])"
    r"|([{}\[\]:,]))"
)

# What the parser expects next.
_VALUE, _KEY_OR_CLOSE, _KEY, _COLON, _COMMA_OR_CLOSE, _VALUE_OR_CLOSE = range(6)


@dataclass(frozen=True)
class JsonObject:
    """One top-level JSON object: where it is in the reply, and its members in order (a key may repeat)."""

    start: int
    end: int
    pairs: tuple[tuple[str, Any], ...]


@dataclass
class JsonScan:
    """The objects found, and whether the scan met an object nested too deeply (then it stopped there)."""

    objects: list[JsonObject] = field(default_factory=list)
    too_deep: bool = False


def scan_json_objects(text: str) -> JsonScan:
    """Every top-level JSON object of ``text``, in order (see the module docstring)."""
    scan = JsonScan()
    position = text.find("{")
    while position != -1:
        end, too_deep = _object_end(text, position)
        if too_deep:
            scan.too_deep = True
            return scan
        if end > 0:
            # An object without a quotation mark has no key ("{}", "{ }"): nothing to decode.
            pairs = _pairs(text[position:end]) if text.find('"', position, end) != -1 else ()
            if pairs is not None:
                scan.objects.append(JsonObject(position, end, pairs))
            position = text.find("{", end)
        else:
            # -end is where the attempt failed: the token there may itself start an object ("{{").
            position = text.find("{", -end)
    return scan


def _pairs(source: str) -> tuple[tuple[str, Any], ...] | None:
    pairs: list[tuple[tuple[str, Any], ...]] = []

    def keep(members: list[tuple[str, Any]]) -> dict[str, Any]:
        pairs.append(tuple(members))
        return dict(members)

    try:
        # The text was checked token by token and is at most MAX_DEPTH deep: json cannot recurse far.
        json.loads(source, strict=False, object_pairs_hook=keep)
    except ValueError:
        return None
    return pairs[-1] if pairs else None


def _object_end(text: str, start: int) -> tuple[int, bool]:
    """Where the object opened at ``start`` ends (> 0), or minus where it stopped fitting; and whether too deep."""
    stack: list[str] = []
    expect = _VALUE
    position = start
    while True:
        token = _TOKEN.match(text, position)
        if token is None:
            return -_skip_space(text, position), False
        string, number, literal, mark = token.groups()
        at = token.start(1) if string else token.start(2) if number else token.start(3) if literal else token.start(4)
        if mark in ("{", "["):
            if expect not in (_VALUE, _VALUE_OR_CLOSE):
                return -at, False
            if len(stack) == MAX_DEPTH:
                return 0, True
            stack.append(mark)
            expect = _KEY_OR_CLOSE if mark == "{" else _VALUE_OR_CLOSE
        elif mark in ("}", "]"):
            closes = "{" if mark == "}" else "["
            allowed = (_KEY_OR_CLOSE, _COMMA_OR_CLOSE) if mark == "}" else (_VALUE_OR_CLOSE, _COMMA_OR_CLOSE)
            if not stack or stack[-1] != closes or expect not in allowed:
                return -at, False
            stack.pop()
            if not stack:
                return token.end(), False
            expect = _COMMA_OR_CLOSE
        elif mark == ":":
            if expect != _COLON:
                return -at, False
            expect = _VALUE
        elif mark == ",":
            if expect != _COMMA_OR_CLOSE:
                return -at, False
            expect = _KEY if stack[-1] == "{" else _VALUE
        elif string and expect in (_KEY_OR_CLOSE, _KEY):
            expect = _COLON
        elif expect in (_VALUE, _VALUE_OR_CLOSE) and stack:
            expect = _COMMA_OR_CLOSE
        else:
            return -at, False
        position = token.end()


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position
