"""Reading tool calls from any form: JSON strings and objects, Haystack ``ChatMessage``/``ToolCall``, agent results.

A tool call is read from a JSON string ``{"content": "...", "tool_calls": [{"name": ..., "arguments":
{...}}]}`` (``tool_calls`` may itself be a JSON-encoded string, and ``arguments`` too), the same as
an already decoded mapping, a list of calls, a single call, a Haystack ``ChatMessage`` carrying
``ToolCall``s, a ``ToolCall``, a list of them, a generator output ``{"replies": [...]}`` (the first
reply) or an Agent result ``{"messages": [...]}`` (the calls of every assistant message, in order).
OpenAI-style calls (``{"function": {"name", "arguments"}}``) and ``parameters`` in place of
``arguments`` are read too. Haystack types are recognised by their attributes, so the core never
imports Haystack. Reading never raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from answer_eval.inputs.reading import MAX_ANSWER_CHARS

__all__ = ["ToolCallRecord", "ToolCallsRead", "read_tool_calls"]

_MAX_DEPTH = 6


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as read.

    :param name: The tool name when it is a non-empty string, else ``None``.
    :param arguments: The arguments when they are (or decode to) a JSON object, else ``None``.
    :param problem: Why the call is malformed, ``None`` when it is well-formed.
    """

    name: str | None
    arguments: dict[str, Any] | None
    problem: str | None = None

    @property
    def valid(self) -> bool:
        """Whether the call has a string name and a mapping of arguments."""
        return self.problem is None


@dataclass(frozen=True)
class ToolCallsRead:
    """What was read from one prediction or reference.

    :param calls: The tool calls in order, malformed ones included (see :attr:`ToolCallRecord.problem`).
    :param content: The text content beside the calls, if any.
    :param problem: Why nothing could be read (not JSON, an unsupported form), ``None`` otherwise.
    :param error: A description of the failure when the input is a failed result (an exception).
    """

    calls: tuple[ToolCallRecord, ...] = ()
    content: str | None = None
    problem: str | None = None
    error: str | None = None


def _decode(text: str, what: str) -> tuple[Any, str | None]:
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{what} is not valid JSON: {exc.msg} (column {exc.colno})"
    except RecursionError:
        return None, f"{what} is nested too deeply"


def _is_chat_message(value: Any) -> bool:
    return hasattr(value, "role") and hasattr(value, "tool_calls") and hasattr(value, "texts")


def _is_tool_call(value: Any) -> bool:
    return hasattr(value, "tool_name") and hasattr(value, "arguments")


def _record(item: Any) -> ToolCallRecord:
    if _is_tool_call(item):
        name, arguments = item.tool_name, item.arguments
    elif isinstance(item, Mapping):
        function = item.get("function")
        source = function if isinstance(function, Mapping) else item
        name = source.get("name", source.get("tool_name"))
        arguments = source.get("arguments", source.get("parameters"))
    else:
        return ToolCallRecord(None, None, f"a tool call must be an object, got {type(item).__name__}")
    if isinstance(arguments, str):
        arguments, problem = _decode(arguments, "arguments")
        if problem is not None:
            return ToolCallRecord(name if isinstance(name, str) and name else None, None, problem)
    good_name = name if isinstance(name, str) and name.strip() else None
    good_arguments = dict(arguments) if isinstance(arguments, Mapping) else None
    if good_name is None:
        return ToolCallRecord(None, good_arguments, "the call has no tool name (a non-empty string)")
    if good_arguments is None:
        got = "none" if arguments is None else type(arguments).__name__
        return ToolCallRecord(good_name, None, f"the arguments of {good_name!r} are not an object (got {got})")
    return ToolCallRecord(good_name, good_arguments)


def _records(items: Any) -> ToolCallsRead:
    if isinstance(items, str):
        decoded, problem = _decode(items, "tool_calls")
        if problem is not None:
            return ToolCallsRead(problem=problem)
        items = decoded
    if isinstance(items, Mapping) or _is_tool_call(items):
        items = [items]
    if not isinstance(items, (list, tuple)):
        return ToolCallsRead(problem=f"tool_calls must be a list, got {type(items).__name__}")
    return ToolCallsRead(tuple(_record(item) for item in items))


def _read(value: Any, depth: int) -> ToolCallsRead:
    if depth > _MAX_DEPTH:
        return ToolCallsRead(problem="nested too deeply")
    if isinstance(value, BaseException):
        return ToolCallsRead(problem="the output is an exception", error=f"{type(value).__name__}: {value}")
    if isinstance(value, str):
        if len(value) > MAX_ANSWER_CHARS:
            return ToolCallsRead(
                problem=f"the output is {len(value):,} characters long, over the limit of {MAX_ANSWER_CHARS:,}"
            )
        if not value.strip():
            return ToolCallsRead(problem="the output is blank")
        decoded, problem = _decode(value, "the output")
        return ToolCallsRead(problem=problem) if problem is not None else _read(decoded, depth + 1)
    if _is_chat_message(value):
        text = value.text
        return ToolCallsRead(_records(list(value.tool_calls)).calls, text if isinstance(text, str) else None)
    if _is_tool_call(value):
        return _records([value])
    if isinstance(value, Mapping):
        return _read_mapping(value, depth)
    if isinstance(value, (list, tuple)):
        return _records(value)
    return ToolCallsRead(problem=f"cannot read tool calls from {type(value).__name__}")


def _read_mapping(value: Mapping[Any, Any], depth: int) -> ToolCallsRead:
    content = value.get("content")
    content = content if isinstance(content, str) else None
    for key in ("tool_calls", "tool_call"):  # the reference document spells it both ways
        if key in value:
            read = _records(value[key])
            return ToolCallsRead(read.calls, content, read.problem)
    replies = value.get("replies")
    if isinstance(replies, (list, tuple)):
        if not replies:
            return ToolCallsRead(problem="replies is empty")
        return _read(replies[0], depth + 1)
    messages = value.get("messages")
    if isinstance(messages, (list, tuple)):
        calls: list[ToolCallRecord] = []
        for message in messages:
            role = message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)
            role = getattr(role, "value", role)
            if role == "assistant":
                read = _read(message, depth + 1)
                calls.extend(read.calls)
        return ToolCallsRead(tuple(calls))
    if any(key in value for key in ("name", "tool_name", "function")):
        return _records([value])
    return ToolCallsRead(content=content, problem="no tool_calls field")


def read_tool_calls(value: Any) -> ToolCallsRead:
    """Read the tool calls of one prediction or reference, whatever its form (see the module docstring).

    Never raises: an input that cannot be read has a ``problem``; a malformed call is kept with its
    own ``problem`` so that "only the first call" still means the first call.

    >>> import json
    >>> calls = json.dumps([{"name": "f", "arguments": json.dumps({"x": 1})}])  # both JSON-encoded
    >>> read_tool_calls(json.dumps({"content": "", "tool_calls": calls})).calls
    (ToolCallRecord(name='f', arguments={'x': 1}, problem=None),)
    >>> read_tool_calls('{"tool_calls": [').problem
    'the output is not valid JSON: Expecting value (column 17)'
    """
    try:
        return _read(value, 0)
    except Exception as exc:  # noqa: BLE001 - a prediction must never stop a batch
        return ToolCallsRead(problem=f"could not be read ({type(exc).__name__})")
