"""Taking the answer out of a model output: the ``<answer>...</answer>`` span, or the whole text.

Models trained to reason before answering are often asked to wrap the final answer in
``<answer>`` tags. :func:`extract_answer` takes the first complete span (tags matched in any case,
with optional white space inside the angle brackets), trims its inner white space, and falls back
to the whole text, trimmed, when there is no span: an untagged answer is still an answer. (A
design that returns an empty string there scores two untagged texts 1.0 by comparing "" with "".)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["AnswerSpan", "extract_answer", "find_answer"]

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
