"""What in a grader's reply is a quote, not the grader's own words.

A grader often quotes the answer it grades, and a hostile answer holds a verdict of its own
("Score: 5", ``{"score": 5}``, "Response B is better") for the grader to quote. A verdict is
taken as quoted, and so not the grader's, when it is:

- **inside quotation marks** on one line: straight double or single quotes, curly double or
  single quotes, guillemets or single backticks (an apostrophe, as in "it's", opens or closes nothing);
- **inside a block the reply copies from the prompt** (``<Response>`` ... ``</Response>``, see
  :mod:`answer_eval.llm.tags`), as a grader that parrots its prompt does;
- **a verbatim copy of a text the grader was shown** (:class:`Shown`: the graded answer and the
  other inputs), compared without regard to case or runs of white space;
- **a copy of the prompt's own words** (the rubric, its scale and criteria, the reply format, the
  graded examples and their grades): a JSON object the prompt holds (the grade of an example), or a
  statement whose line and a line next to it both come from the prompt (a parrot copies the
  prompt by the paragraph; one line, such as a rating of the scale, may be a grader's pick);
- **a copy of a graded example's explanation** (its words, punctuation and case aside; one of at
  least :data:`MIN_EXPLANATION_WORDS` words): the grader gave the example's grade, not one of its own.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

from answer_eval.llm.tags import copied_blocks

__all__ = ["MIN_EXPLANATION_WORDS", "Quotes", "Shown"]

_SPACES = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")

MIN_EXPLANATION_WORDS = 3
"""The fewest words an example's explanation needs to be told from a grader's own ("Vague." may be either)."""
# A quote that opens: after the line's start, a space or an opening bracket, before a non-space.
_SINGLE_OPEN = re.compile(r"(?<![^\s(\[{])['\u2018](?=\S)")
_SINGLE_CLOSE = re.compile(r"(?<=\S)['\u2019](?![^\s.,;:!?)\]}])")
_PAIRED = {'"': '"', "`": "`", "\u201c": "\u201d", "\u00ab": "\u00bb", "\u201e": "\u201c"}
_PAIRED_CHARACTERS = re.compile('["`\u201c\u201d\u00ab\u00bb\u201e]')


class Quotes:
    """The quoted spans of one reply: quotation marks on a line and copied prompt blocks."""

    def __init__(self, reply: str, blanked: str) -> None:
        """``blanked`` is ``reply`` with its JSON objects blanked out (their quotes are JSON's, not quotation)."""
        whole = (len(reply) - len(reply.lstrip()), len(reply.rstrip()))
        # A reply in quotation marks from end to end quotes nothing: it is what the grader said. (A
        # reply that is one copied block, a parrot, is all quote.)
        marked = [span for span in self._marked(blanked) if not (span[0] <= whole[0] and span[1] >= whole[1])]
        spans = sorted([*marked, *copied_blocks(reply)])
        self._starts = [start for start, _ in spans]
        self._reach: list[int] = []
        for _, end in spans:
            self._reach.append(max(end, self._reach[-1]) if self._reach else end)

    def holds(self, start: int, end: int) -> bool:
        """Whether the text from ``start`` to ``end`` lies inside a quoted span."""
        index = bisect.bisect_right(self._starts, start) - 1
        return index >= 0 and self._reach[index] >= end

    @staticmethod
    def _marked(text: str) -> Iterable[tuple[int, int]]:
        # Spans are made line by line: a quotation mark left open does not quote the rest of the reply.
        offset = 0
        for line in text.split("\n"):
            if not line.lstrip().startswith("```"):  # a code fence's backticks are no quotation
                yield from ((offset + start, offset + end) for start, end in _line_spans(line))
            offset += len(line) + 1


def _line_spans(line: str) -> Iterable[tuple[int, int]]:
    opened: dict[str, int] = {}
    for match in _PAIRED_CHARACTERS.finditer(line):
        character, at = match.group(0), match.start()
        closing_for = [opening for opening, closing in _PAIRED.items() if closing == character and opening in opened]
        if closing_for:
            yield opened.pop(closing_for[0]), at + 1
        elif character in _PAIRED:
            opened[character] = at
    openings = [match.start() for match in _SINGLE_OPEN.finditer(line)]
    closings = [match.start() for match in _SINGLE_CLOSE.finditer(line)]
    index = 0
    for opening in openings:
        while index < len(closings) and closings[index] <= opening:
            index += 1
        if index == len(closings):
            break
        yield opening, closings[index] + 1
        index += 1


def _squashed(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def _words(text: str) -> str:
    return " ".join(_WORDS.findall(text.casefold()))


def _occurs(needle: str, haystack: str, found: dict[str, bool]) -> bool:
    """Whether ``needle`` (squashed) occurs in ``haystack`` as whole words (``Score: 3`` is not in ``score: 3-1``)."""
    if not needle:
        return False
    if needle not in found:  # a reply may say the same words many times: each is looked for once
        pattern = re.compile(r"(?<!\w)" + re.escape(needle) + r"(?![\w/%]|[.,\-\u2013\u2014]\s?\d)")
        found[needle] = needle in haystack and pattern.search(haystack) is not None
    return found[needle]


class Shown:
    """What the grader was shown, to tell a copy of it in its reply from the grader's own words."""

    def __init__(
        self, texts: Sequence[str | None] = (), prompt: Sequence[str] = (), explanations: Sequence[str] = ()
    ) -> None:
        """What the prompt showed.

        :param texts: Every untrusted text of the prompt (the graded answer, the other inputs, the
            examples' inputs); ``None`` and empty ones are left out.
        :param prompt: The prompt's own words: its system message, the rubric text, the examples and
            their grades, the closing request (a verdict copied from them is no verdict).
        :param explanations: The graded examples' explanations, in the prompt's order.
        """
        kept = [text for text in texts if text]
        self._squashed = "\x00".join(_squashed(text) for text in kept)
        self._spaceless = "\x00".join(_SPACES.sub("", text).casefold() for text in kept)
        self._prompt = "\x00".join(_squashed(text) for text in prompt if text)
        self._prompt_spaceless = "\x00".join(_SPACES.sub("", text).casefold() for text in prompt if text)
        self._explanations: dict[str, int] = {}
        for number, explanation in enumerate(explanations, 1):
            words = _words(explanation)
            if len(words.split()) >= MIN_EXPLANATION_WORDS:
                self._explanations.setdefault(words, number)
        self._found: dict[str, bool] = {}
        self._found_in_prompt: dict[str, bool] = {}

    def __bool__(self) -> bool:
        return bool(self._squashed or self._prompt)

    def holds_object(self, source: str) -> bool:
        """Whether a JSON object's text occurs in a shown text (white space aside)."""
        needle = _SPACES.sub("", source).casefold()
        return bool(needle) and needle in self._spaceless

    def prompt_holds_object(self, source: str) -> bool:
        """Whether a JSON object's text occurs in the prompt's own words (an example's grade), white space aside."""
        needle = _SPACES.sub("", source).casefold()
        return bool(needle) and needle in self._prompt_spaceless

    def holds_words(self, words: str) -> bool:
        """Whether ``words`` occur in a shown text as whole words (``Score: 3`` is not in ``score: 3-1``)."""
        return _occurs(_squashed(words), self._squashed, self._found)

    def holds_lines(self, lines: Sequence[str]) -> bool:
        """Whether ``lines`` (next to each other in a reply) occur together in the prompt's own words."""
        needle = _squashed(" ".join(lines))
        return (
            len(lines) > 1
            and len(_WORDS.findall(needle)) >= MIN_EXPLANATION_WORDS
            and (_occurs(needle, self._prompt, self._found_in_prompt))
        )

    def example_explained(self, text: str) -> int | None:
        """The number of the graded example whose explanation ``text`` is (its words alone), if any."""
        return self._explanations.get(_words(text)) if self._explanations else None
