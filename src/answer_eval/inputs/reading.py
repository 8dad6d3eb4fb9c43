"""Reading a row's inputs: what a pipeline produced (the answer text, the flags that explain a failure) and its golds.

Every evaluator of the package reads predictions through :func:`read_output`, so a string, a
Haystack ``GeneratedAnswer`` or ``ChatMessage``, a generator's ``{"replies", "meta"}`` output, an
agent result with ``messages`` and a plain mapping carrying a trace and stop notes are all
understood the same way everywhere. Haystack types are recognised by their attributes, so the
core never imports Haystack.

Models trained to reason before answering are often asked to wrap the final answer in
``<answer>`` tags. :func:`extract_answer` takes the first complete span (tags matched in any case,
with optional white space inside the angle brackets), trims its inner white space, and falls back
to the whole text, trimmed, when there is no span: an untagged answer is still an answer. (A
design that returns an empty string there scores two untagged texts 1.0 by comparing "" with "".)

The ground truth is checked by :func:`acceptable_answers`: one acceptable answer or several per question.
"""

from __future__ import annotations

import decimal
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.text.folding import IGNORABLE_CLASS

__all__ = [
    "MAX_ANSWER_CHARS",
    "REFUSAL_FINISH_REASONS",
    "AnswerSpan",
    "ReadOutput",
    "acceptable_answers",
    "check_batch_shape",
    "check_ground_truths",
    "extract_answer",
    "find_answer",
    "read_output",
]


LIMIT_NOTES = ("cost_cap_reached", "call_cap_reached", "limit_refused")
"""Notes on a partial answer that say a limit stopped the run."""
LIMIT_FINISH_REASONS = frozenset({"length", "max_tokens", "max_agent_steps"})
"""Finish reasons that say a limit cut the run off: a model's token limit, a Haystack Agent's step limit."""
REFUSAL_FINISH_REASONS = frozenset({"refusal", "content_filter"})
"""Finish reasons of a model step that say the model refused or was filtered."""
MAX_ANSWER_CHARS = 1_000_000
"""The longest answer text graded (one million characters, far beyond any model's output limit).

A longer text is not read: its verdict is failure kind ``error`` ("the answer is N characters
long, over the limit"), so a runaway generation costs one length check, not seconds of folding
and matching per item."""
_ERROR_STATUSES = frozenset({"error", "failed"})
_REFUSED_STATUSES = frozenset({"refused"})
_MAX_DEPTH = 6


@dataclass(frozen=True)
class ReadOutput:
    """What was read from one prediction.

    :param text: The answer text, or ``None`` when the output carries none.
    :param source: The form it was read from (``"str"``, ``"GeneratedAnswer"``, ``"ChatMessage"``,
        ``"replies"``, ``"messages"``, ``"answers"``, ``"list"``, ``"mapping"``, ``"exception"``,
        ``"none"`` or ``"unsupported"``).
    :param partial: The output says it is a partial answer.
    :param notes: Notes attached to the output (stop notes such as ``cost_cap_reached``).
    :param finish_reasons: The finish reason of every model step in the output's trace, lower case.
    :param refused: The output itself is a refused result (``status == "refused"``).
    :param error: A description of the failure when the output is a failed result.
    :param failure_kind: A failure kind the output carries of its own.
    """

    text: str | None
    source: str
    partial: bool = False
    notes: tuple[str, ...] = ()
    finish_reasons: tuple[str, ...] = ()
    refused: bool = False
    error: str | None = None
    failure_kind: str | None = None

    @property
    def limit_stopped(self) -> bool:
        """Whether a limit stopped the run: a partial answer with a limit note, or a length stop."""
        if any(reason in LIMIT_FINISH_REASONS for reason in self.finish_reasons):
            return True
        return self.partial and any(limit in note.casefold() for note in self.notes for limit in LIMIT_NOTES)

    @property
    def was_refused(self) -> bool:
        """Whether a step of the run was refused or filtered, or the output is a refused result."""
        return self.refused or any(reason in REFUSAL_FINISH_REASONS for reason in self.finish_reasons)


@dataclass
class _Flags:
    partial: bool = False
    notes: tuple[str, ...] = ()
    finish_reasons: tuple[str, ...] = ()
    refused: bool = False
    error: str | None = None
    failure_kind: str | None = None

    def absorb(self, meta: Any) -> None:
        """Collect the flags a mapping (an output or its ``meta``) carries."""
        if not isinstance(meta, Mapping):
            return
        if meta.get("partial") is True:
            self.partial = True
        notes = meta.get("notes")
        if isinstance(notes, str):
            self.notes += (notes,)
        elif isinstance(notes, (list, tuple)):
            self.notes += tuple(note for note in notes if isinstance(note, str))
        reason = _finish_reason(meta)
        if reason:
            self.finish_reasons += (reason,)
        trace = meta.get("trace")
        if isinstance(trace, (list, tuple)):
            self.finish_reasons += tuple(r for r in (_step_finish_reason(step) for step in trace) if r)
        status = meta.get("status")
        status = status.casefold() if isinstance(status, str) else None
        if meta.get("refused") is True or status in _REFUSED_STATUSES:
            self.refused = True
        error = meta.get("error")
        if not _no_error(error):
            self.error = _describe_error(error)
        elif status in _ERROR_STATUSES and self.error is None:
            self.error = f"status {status}"
        kind = meta.get("failure_kind")
        if isinstance(kind, str) and kind.strip():
            self.failure_kind = kind.strip()

    def output(self, text: str | None, source: str) -> ReadOutput:
        return ReadOutput(
            text=text,
            source=source,
            partial=self.partial,
            notes=self.notes,
            finish_reasons=self.finish_reasons,
            refused=self.refused,
            error=self.error,
            failure_kind=self.failure_kind,
        )


def _finish_reason(meta: Mapping[Any, Any]) -> str | None:
    # OpenAI-style "finish_reason", Anthropic-style "stop_reason", a Haystack Agent's "exit_reason".
    for key in ("finish_reason", "stop_reason", "exit_reason"):
        reason = meta.get(key)
        if isinstance(reason, str) and reason:
            return reason.casefold()
    return None


def _step_finish_reason(step: Any) -> str | None:
    if isinstance(step, Mapping):
        reason = _finish_reason(step)
        if reason is None and isinstance(step.get("meta"), Mapping):
            reason = _finish_reason(step["meta"])
        return reason
    meta = getattr(step, "meta", None)
    if isinstance(meta, Mapping):
        return _finish_reason(meta)
    reason = getattr(step, "finish_reason", None)
    return reason.casefold() if isinstance(reason, str) and reason else None


def _no_error(error: Any) -> bool:
    """Whether an ``error`` value says there was none: ``None``, ``False``, ``0``, ``""``, ``[]``, ``{}``."""
    if error is None or error is False:
        return True
    if isinstance(error, (str, bytes, Mapping, list, tuple)):
        return len(error) == 0 or (isinstance(error, str) and not error.strip())
    if type(error) in (int, float):
        return bool(error == 0)
    return False


def _content_text(content: Any, flags: _Flags) -> str | None:
    """The text of a message's ``content``: a string, or OpenAI/Anthropic-style parts joined.

    Parts are ``{"type": "text" | "output_text" | "input_text", "text": ...}`` (the text a string,
    or ``{"value": ...}`` as the Assistants API gives it) or plain strings,
    joined with nothing between them as OpenAI's own client does; a ``{"type": "refusal",
    "refusal": ...}`` part is the model's refusal: its words are the text and the output is refused.
    Parts of other types (images, audio, tool calls) hold no answer text.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, (list, tuple)):
        return None
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            kind = part.get("type")
            if kind == "refusal" and isinstance(part.get("refusal"), str):
                flags.refused = True
                texts.append(part["refusal"])
            elif kind in _TEXT_PARTS:
                text = part.get("text")
                if isinstance(text, Mapping):  # the Assistants API: {"text": {"value": ...}}
                    text = text.get("value")
                if isinstance(text, str):
                    texts.append(text)
    return "".join(texts) if texts else None


_TEXT_PARTS = frozenset({"text", "output_text", "input_text", None})


def _describe_error(error: Any) -> str:
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


def _is_chat_message(value: Any) -> bool:
    return hasattr(value, "role") and hasattr(value, "texts") and hasattr(value, "meta")


def _is_answer_object(value: Any) -> bool:
    # GeneratedAnswer and ExtractedAnswer: the answer is in .data, flags in .meta.
    return hasattr(value, "data") and hasattr(value, "meta") and hasattr(value, "query")


def _role(message: Any) -> str | None:
    role = message.get("role") if isinstance(message, Mapping) else getattr(message, "role", None)
    role = getattr(role, "value", role)
    return role.casefold() if isinstance(role, str) else None


def _read(value: Any, flags: _Flags, depth: int) -> ReadOutput:
    if isinstance(value, str):
        return flags.output(value, "str")
    if value is None:
        return flags.output(None, "none")
    if isinstance(value, BaseException):
        flags.error = _describe_error(value)
        return flags.output(None, "exception")
    if depth > _MAX_DEPTH:
        return flags.output(None, "unsupported")
    if _is_chat_message(value):
        flags.absorb(value.meta)
        text = value.text
        return flags.output(text if isinstance(text, str) else None, "ChatMessage")
    if _is_answer_object(value):
        flags.absorb(value.meta)
        data = value.data
        if isinstance(data, str) or data is None:
            return flags.output(data, type(value).__name__)
        return _read(data, flags, depth + 1)
    if isinstance(value, Mapping):
        return _read_mapping(value, flags, depth)
    if isinstance(value, (list, tuple)):
        # A model that answers with a list of names: the answer is all of them.
        if value and all(isinstance(item, str) for item in value):
            return flags.output("; ".join(value), "list")
        return flags.output(None, "unsupported")
    return flags.output(None, "unsupported")


def _read_mapping(value: Mapping[Any, Any], flags: _Flags, depth: int) -> ReadOutput:
    flags.absorb(value)
    replies = value.get("replies")
    if isinstance(replies, Sequence) and not isinstance(replies, str):
        metas = value.get("meta")
        if isinstance(metas, Sequence) and metas:
            flags.absorb(metas[0])
        if not replies:
            return flags.output(None, "replies")
        return _read(replies[0], flags, depth + 1)
    messages = value.get("messages")
    if isinstance(messages, Sequence) and not isinstance(messages, str):
        last = next((m for m in reversed(messages) if _role(m) == "assistant"), None)
        if last is None:
            return flags.output(None, "messages")
        if isinstance(last, Mapping):  # an OpenAI-style {"role", "content"} message
            flags.absorb(last)
            return flags.output(_content_text(last.get("content"), flags), "messages")
        return _read(last, flags, depth + 1)
    answers = value.get("answers")
    if isinstance(answers, Sequence) and not isinstance(answers, str):
        if not answers:
            return flags.output(None, "answers")
        return _read(answers[0], flags, depth + 1)
    for key in ("answer", "text"):
        if key in value:
            inner = value[key]
            if isinstance(inner, str) or inner is None:
                return flags.output(inner, "mapping")
            return _read(inner, flags, depth + 1)
    if "content" in value and "role" in value:  # one OpenAI-style message (a document's content is no answer)
        return flags.output(_content_text(value["content"], flags), "mapping")
    return flags.output(None, "mapping")


def read_output(value: Any) -> ReadOutput:
    """Read one prediction, whatever its form, into a :class:`ReadOutput`.

    Understood forms: ``str``; Haystack ``GeneratedAnswer``/``ExtractedAnswer`` (text in ``.data``,
    flags in ``.meta``); ``ChatMessage`` (its text; ``meta["finish_reason"]`` is a step of the
    trace); a generator output ``{"replies": [...], "meta": [...]}`` (the first reply); an
    AnswerBuilder output ``{"answers": [...]}`` (the first answer); an agent result with
    ``messages`` (the last assistant message; its ``exit_reason`` counts as a step of the trace,
    so ``max_agent_steps`` is a limit stop; OpenAI-style ``content`` given as a list of parts is
    their text joined, a ``refusal`` part a refused output); a mapping with ``answer``, ``text`` or
    ``content`` (a single message: it has a ``role``) and optional ``partial``, ``notes``, ``trace`` (steps with
    ``finish_reason``), ``failure_kind``, ``error`` (an empty value: ``None``, ``False``, ``0``,
    ``""``, ``[]``, ``{}`` is no error) and ``status``; a list of strings (joined with ``"; "``);
    an exception (a failed result).
    ``None`` and anything else carry no text. A text longer than :data:`MAX_ANSWER_CHARS` is not
    read: it is reported with no text and an ``error`` naming its length. Never raises: an object
    that fails while being read is reported as ``source="unsupported"`` with no text. Every text
    is handed over as a plain ``str`` (a ``str`` subclass is copied, its methods never called).
    """
    if type(value) is str and len(value) <= MAX_ANSWER_CHARS:
        return ReadOutput(text=value, source="str")  # the common case, without the general walk
    try:
        output = _read(value, _Flags(), 0)
        text = None if output.text is None else _exact_str(output.text)
        error = output.error
        if text is not None and len(text) > MAX_ANSWER_CHARS:
            error = f"the answer is {len(text):,} characters long, over the limit of {MAX_ANSWER_CHARS:,}"
            text = None
        return ReadOutput(
            text=text,
            source=output.source,
            partial=output.partial,
            notes=tuple(map(_exact_str, output.notes)),
            finish_reasons=tuple(map(_exact_str, output.finish_reasons)),
            refused=output.refused,
            error=None if error is None else _exact_str(error),
            failure_kind=None if output.failure_kind is None else _exact_str(output.failure_kind),
        )
    except Exception:  # noqa: BLE001 - a prediction must never stop a batch
        return ReadOutput(text=None, source="unsupported")


def _exact_str(text: str) -> str:
    """``text`` as a plain ``str``: a ``str`` subclass may override every method, even ``__str__``.

    A full slice taken through ``str.__getitem__`` copies the characters at C level without calling
    any method the subclass overrides.
    """
    if type(text) is str:
        return text
    return str.__getitem__(text, slice(None))


_OPEN = r"<\s*answer\s*>"
_CLOSE = r"<\s*/\s*answer\s*>"
# The first span that closes, holding no other opening tag: in "put it in <answer> tags:
# <answer>B</answer>" the span is "B".
_SPAN = re.compile(_OPEN + r"((?:(?!" + _OPEN + r").)*?)" + _CLOSE, re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(_OPEN, re.IGNORECASE)


@dataclass(frozen=True)
class AnswerSpan:
    """The answer part of a model output.

    :param text: The answer text, trimmed (may be empty: ``<answer></answer>``).
    :param source: ``"span"`` (a complete ``<answer>...</answer>`` span), ``"unclosed"`` (an
        opening tag with no closing tag: the text after the last opening tag, as when the output
        was cut off) or ``"whole"`` (no tag: the whole text).
    """

    text: str
    source: str


def find_answer(text: str) -> AnswerSpan:
    """Find the answer part of ``text``, saying where it came from.

    >>> find_answer("Reasoning... <ANSWER> 42.5 </answer>")
    AnswerSpan(text='42.5', source='span')
    >>> find_answer("The capital is Paris.")
    AnswerSpan(text='The capital is Paris.', source='whole')
    >>> find_answer("Let me see. <answer>B")
    AnswerSpan(text='B', source='unclosed')
    """
    if "<" not in text:  # no tag can be there; a C-level scan instead of two regex searches
        return AnswerSpan(text.strip(), "whole")
    match = _SPAN.search(text)
    if match is not None:
        return AnswerSpan(match.group(1).strip(), "span")
    openings = [tag.end() for tag in _OPEN_TAG.finditer(text)]
    if openings:
        return AnswerSpan(text[openings[-1] :].strip(), "unclosed")
    return AnswerSpan(text.strip(), "whole")


def extract_answer(text: str) -> str:
    """The answer text of a model output: the first ``<answer>`` span, else the whole text; trimmed.

    >>> extract_answer("The answer is <answer>B</answer>")
    'B'
    >>> extract_answer("  B  ")
    'B'
    """
    return find_answer(text).text


# A character a reader can see: neither white space nor a default-ignorable (invisible) one.
_VISIBLE = re.compile(r"[^\s" + IGNORABLE_CLASS + "]")
_find_visible = _VISIBLE.search


def _describe(position: int | None) -> str:
    return "" if position is None else f" at position {position}"


def _number_label(value: Any, position: int | None) -> str:
    """A number label as the text the number reading reads: an int's digits, a finite real's shortest form."""
    try:
        if isinstance(value, numbers.Integral):
            return int.__repr__(int(value))  # the digits, whatever an int subclass's __str__ does
        if isinstance(value, float):
            finite, text = math.isfinite(value), float.__repr__(value)  # numpy's float64 is a float
        elif isinstance(value, decimal.Decimal):
            finite, text = value.is_finite(), decimal.Decimal.__str__(value)  # exact: 3.50 stays 3.50
        else:  # another real (numpy's float32...): its own shortest form, checked to be a number
            text = str(value)
            finite = math.isfinite(float(text))
    except ValueError:
        where = _describe(position)
        raise ValueError(f"ground truth{where} is an integer too long to read (over 4300 digits)") from None
    except Exception:  # noqa: BLE001 - a number that cannot say what it is is no label
        raise TypeError(f"ground truth{_describe(position)} is a number that cannot be read as one") from None
    if not finite:
        raise ValueError(f"ground truth{_describe(position)} is not a finite number ({text}): no answer can match it")
    return text


def _one_label(value: Any, position: int | None) -> str:
    # bool is an int subclass; True as a label is almost always a mistake (a verdict column
    # passed as the answers), so it is refused rather than read as "True".
    if value is None:  # an empty CSV cell, a null in JSON, a missing value in a frame
        raise TypeError(f"ground truth{_describe(position)} is missing (empty or null): no answer can match it")
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real, decimal.Decimal)):
        kind = type(value).__name__
        raise TypeError(f"ground truth{_describe(position)} must be a str or a number, or a list of them; got {kind}")
    if type(value) is str:
        label = value
    elif isinstance(value, str):
        label = str.__getitem__(value, slice(None))  # a plain copy: a subclass's methods are never called
    else:
        label = _number_label(value, position)
    if not label.strip() or (not label.isascii() and _find_visible(label) is None):
        raise ValueError(
            f"ground truth{_describe(position)} is blank (white space or invisible characters only): "
            "an empty label would be found in every answer"
        )
    return label


def _is_vector(value: Any) -> bool:
    """A one-dimensional numpy array (what a pandas column of lists read from Parquet holds), told without numpy."""
    kind = type(value)
    return kind.__name__ == "ndarray" and kind.__module__ == "numpy" and getattr(value, "ndim", None) == 1


def _plain_labels(values: list[Any]) -> bool:
    """Whether every value is exactly a str of ASCII with a visible character (nothing to convert or refuse)."""
    return set(map(type, values)) == {str} and all(map(str.isascii, values)) and all(map(str.strip, values))


def acceptable_answers(value: Any, position: int | None = None) -> tuple[str, ...]:
    """Return the acceptable answers of one question as a tuple of strings.

    ``value`` is a str, a number (an int, a finite float, a ``Decimal``, a numpy scalar: read as
    its digits, so the number reading matches it), or a non-empty list or tuple of them (or a
    one-dimensional numpy array of them, as a pandas column of lists read from Parquet holds). Raises
    ``TypeError`` for a label of another type and ``ValueError`` for an empty list, a blank label
    or a number that is not finite (NaN, infinity), naming ``position`` when given.
    """
    if _is_vector(value):
        value = list(value)  # its items as numpy scalars: each read at its own precision, as a list's are
    if type(value) is list and value and _plain_labels(value):
        return tuple(value)  # every label is a visible ASCII str: what _one_label returns for each, in C loops
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"ground truth{_describe(position)} is an empty list: give at least one acceptable answer")
        return tuple(_one_label(item, position) for item in value)
    return (_one_label(value, position),)


def check_batch_shape(ground_truth_answers: Any, predicted_answers: Any) -> None:
    """Check that a batch's two inputs are lists (or tuples) of the same length.

    Raises ``TypeError`` when either argument is not a list, ``ValueError`` when their lengths
    differ (naming both). The first half of :func:`check_ground_truths`.
    """
    if not isinstance(ground_truth_answers, (list, tuple)):
        raise TypeError(f"ground_truth_answers must be a list, got {type(ground_truth_answers).__name__}")
    if not isinstance(predicted_answers, Sequence) or isinstance(predicted_answers, (str, bytes)):
        raise TypeError(f"predicted_answers must be a list, got {type(predicted_answers).__name__}")
    if len(ground_truth_answers) != len(predicted_answers):
        raise ValueError(
            f"ground_truth_answers has {len(ground_truth_answers)} items but predicted_answers has "
            f"{len(predicted_answers)}; they must be the same length"
        )


def check_ground_truths(ground_truth_answers: Any, predicted_answers: Any) -> list[tuple[str, ...]]:
    """Validate a batch's inputs and return its acceptable answers, one tuple per question.

    Raises ``TypeError`` when either argument is not a list (or tuple), ``ValueError`` when their
    lengths differ (naming both) or a question has no acceptable answer.
    """
    check_batch_shape(ground_truth_answers, predicted_answers)
    return [acceptable_answers(value, index) for index, value in enumerate(ground_truth_answers)]
