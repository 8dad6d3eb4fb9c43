"""Hostile predictions for property tests: any Python object a pipeline, a model or a user could hand over.

Nested containers, bytes, floats (NaN, infinities), huge integers, objects whose attributes,
``__str__``, ``__eq__``, ``__hash__``, ``__len__``, ``__iter__`` or ``__bool__`` raise, ``str``
and ``dict`` subclasses whose methods raise, recursive lists and dicts, and real Haystack
dataclasses (``GeneratedAnswer``, ``ChatMessage``, ``ToolCall``) holding odd fields.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from haystack.dataclasses import ChatMessage, GeneratedAnswer, ToolCall
from hypothesis import strategies as st


class Boom(RuntimeError):
    """What the hostile objects raise."""


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise Boom("hostile")


class RaisingAttributes:
    """Every attribute look-up raises (not AttributeError: hasattr does not swallow it)."""

    def __getattr__(self, name: str) -> Any:
        raise Boom(name)


class RaisingDunders:
    """str, repr, eq, hash, len, iter and bool all raise."""

    __str__ = __repr__ = __eq__ = __hash__ = __len__ = __iter__ = __bool__ = _boom  # type: ignore[assignment]


class LooksLikeChatMessage:
    """Has the attributes a ChatMessage has, each a property that raises."""

    role = property(_boom)
    texts = property(_boom)
    meta = property(_boom)
    text = property(_boom)
    tool_calls = property(_boom)


class LooksLikeAnswer:
    """Has GeneratedAnswer's attributes, with odd values."""

    def __init__(self, data: Any, meta: Any) -> None:
        self.data, self.meta, self.query = data, meta, None


class HostileStr(str):
    """A str whose methods raise."""

    casefold = lower = upper = strip = split = isascii = translate = encode = replace = _boom  # type: ignore[assignment]
    __str__ = __hash__ = __len__ = __iter__ = __eq__ = __getitem__ = __contains__ = _boom  # type: ignore[assignment]


class HostileDict(dict):  # type: ignore[type-arg]
    """A dict whose look-ups raise."""

    get = __getitem__ = __contains__ = keys = items = values = __iter__ = _boom  # type: ignore[assignment]


class RaisingException(Exception):
    """An exception whose text raises."""

    __str__ = __repr__ = _boom  # type: ignore[assignment]


def recursive_list() -> list[Any]:
    """A list that contains itself."""
    value: list[Any] = ["x"]
    value.append(value)
    return value


def recursive_dict() -> dict[str, Any]:
    """A dict (an answer mapping) that contains itself."""
    value: dict[str, Any] = {"partial": True}
    value["answer"] = value
    value["trace"] = [value]
    value["replies"] = [value]
    return value


ATOMS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(4300, 6000).map(lambda digits: 10**digits),  # more digits than str() writes
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324]),
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=()), max_size=20),
    st.sampled_from(
        ["\ud800", "a\udfffb", "\x00", "\ufeff12,400", "NOT_IN_DOCUMENT", "<answer>", '{"tool_calls": [']
    ).map(str),
    st.binary(max_size=20),
    st.builds(bytearray, st.binary(max_size=8)),
    st.complex_numbers(allow_nan=True),
    st.decimals(allow_nan=True),
    st.fractions(),
    st.sampled_from([Decimal("NaN"), Decimal("sNaN"), Decimal("1e999999"), Fraction(1, 3)]),
)
ODD = st.sampled_from(
    [
        RaisingAttributes,
        RaisingDunders,
        LooksLikeChatMessage,
        lambda: HostileStr("Paris"),
        lambda: HostileDict(answer="Paris"),
        lambda: RaisingException(),
        lambda: ValueError("the tool failed"),
        lambda: KeyboardInterrupt(),  # an exception object as a value, not raised
        recursive_list,
        recursive_dict,
        object,
        lambda: print,
        lambda: type,
        lambda: iter([1, 2]),
        lambda: range(3),
        lambda: {"a", "b"},
        lambda: frozenset({1}),
        lambda: memoryview(b"ab"),
        lambda: Ellipsis,
        lambda: NotImplemented,
    ]
).map(lambda make: make())


def _haystack(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    meta = st.dictionaries(
        st.sampled_from(
            ["partial", "notes", "trace", "finish_reason", "error", "status", "failure_kind", "stop_reason"]
        ),
        children,
        max_size=4,
    )
    return st.one_of(
        st.builds(lambda data, m: GeneratedAnswer(data=data, query="q", documents=[], meta=m), children, meta),
        st.builds(
            lambda text, m: ChatMessage.from_assistant(text, meta=m), st.one_of(st.none(), st.text(max_size=30)), meta
        ),
        st.builds(lambda name, args: ToolCall(tool_name=name, arguments=args), children, children),
        st.builds(LooksLikeAnswer, children, children),
    )


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.one_of(
        st.sampled_from(["answer", "text", "replies", "meta", "messages", "answers", "role", "content", "tool_calls"]),
        st.sampled_from(["name", "arguments", "function", "partial", "notes", "trace", "error", "status"]),
        st.text(max_size=5),
        st.integers(),
    )
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys, children, max_size=5),
        _haystack(children),
    )


PREDICTIONS = st.recursive(st.one_of(ATOMS, ODD), _containers, max_leaves=12)
"""Any Python object, nested a few levels: what a prediction may be."""
