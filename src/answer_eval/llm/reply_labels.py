"""A grade on a two-point scale said in words ("Correct.", "The candidate is correct.", "The answer is: No.").

A two-point scale (``question_answering_correctness``: 0 Incorrect, 1 Correct; ``safety``;
``groundedness``) is a yes/no question, and small models answer it in words rather than with
the number asked for. :func:`scale_words` gives the words that state each point:

- the scale's own labels ("Incorrect", "Correct"; "Not grounded", "Grounded"), and "not" before
  the upper label ("Not correct") for the lower point;
- on a 0/1 scale, yes and true for 1, no and false for 0.

A reply states a point with those words in three ways, each a :class:`Said` statement:

- **opening** with one, followed by a stop (``Correct.``, ``No, ...``, ``Incorrect: it says Lyon``;
  never ``Correct: 0`` or ``Correct: no``, nor ``Yes and no``), a :data:`LEADING` statement; also
  after a list's number (``1. Incorrect``), and then that number is not read as a grade;
- **a sentence** that starts with ``The candidate``, ``The response``, ``The answer`` (or the
  candidate's answer, the prediction) ``is`` and a label: ``The candidate is correct.``,
  ``So the response is not correct.`` (yes and no are not read here: "the answer is no" may be
  what the graded answer says), a :data:`PHRASE` statement;
- **"The answer is:"** with a colon, at a sentence's start, then a word above or a number of the
  scale (``The answer is: No.``, ``The answer is: 0.``), a :data:`PHRASE` statement. A number there
  that is off the scale, or that a text the grader was shown holds (the graded answer "0"), may be
  the graded answer restated, not a grade: it states nothing.

A phrase is the weakest statement: a JSON or named verdict anywhere in the reply outranks it
(:mod:`answer_eval.llm.reply_verdicts`). Any other scale has no words: its grades are numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from answer_eval.llm.reply_quotes import Shown
from answer_eval.llm.reply_verdicts import LEADING, PHRASE, Said
from answer_eval.llm.reply_words import OPENING, score_from_number

__all__ = ["CORRECT_WORDS", "ScaleWords", "scale_words"]

_SPACES = re.compile(r"\s+")
_IS = re.compile(r"\sis(?:\s|:)", re.IGNORECASE)
# After a word that states a point: markdown, then a stop or the end ("Correct.", "**No**,").
_STOP = r"(?=[\s*]*(?:[.,!;)]|$))"
# An opening word may also be followed by a colon and reasons, but not by another verdict ("Correct: no").
_OPENING_STOP = r"(?=[\s*]*(?:[.,!;)]|$)|\s*:(?![\s*]*(?:[+-]?\d|(?:yes|no|true|false)\b)))"
_SUBJECT = (
    r"(?:the\s+)?(?:candidate(?:'s|\u2019s)?\s+(?:answer|response)|candidate|response|answer|prediction|submission)"
)
_LEAD_IN = (
    r"(?:(?:so|thus|therefore|hence|overall|in\s+(?:summary|conclusion)|i\s+(?:think|believe|conclude))\s*,?\s+)?"
)
_SENTENCE_ENDS = ".!?:\n"
_CLOSING = "\"')]\u201d\u2019"
_LOOK_BACK = 200
_Patterns = tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]


def _squashed(words: str) -> str:
    return _SPACES.sub(" ", words).strip().casefold()


def _alternation(words: Iterable[str]) -> str:
    # Longest first, so "not grounded" is tried before "grounded"; spaces match any run of spaces.
    ordered = sorted(set(words), key=len, reverse=True)
    return "|".join(r"\s+".join(re.escape(part) for part in word.split()) for word in ordered)


@dataclass(frozen=True)
class ScaleWords:
    """The words that state each point of a two-point scale, and the patterns that find them in a reply."""

    values: dict[str, int]
    """Each word (case-folded, single-spaced) and the point it states."""
    labels: frozenset[str]
    """The words a sentence may state a point with (the labels and "not" before the upper one)."""

    def value_of(self, words: str) -> int | None:
        """The point ``words`` state, as a whole (``" Correct "``, ``"NO"``); ``None`` otherwise."""
        return self.values.get(_squashed(words).rstrip(".!"))

    @property
    def _patterns(self) -> _Patterns:
        return _patterns(tuple(sorted(self.values)), tuple(sorted(self.labels)))

    def statements(
        self, text: str, allowed: Callable[[int], bool], before: int, shown: Shown | None = None
    ) -> Iterable[Said[int]]:
        """The opening, the sentences and the "The answer is:" statements of ``text`` (see the module).

        ``before``: where the reply's first JSON object starts (an opening ends before it). ``shown``:
        the texts the grader was shown; a number they hold is no grade after "The answer is:" (it may
        be the graded answer restated). With ``None``, no number there is read.
        """
        opening, sentence, answer = self._patterns
        found = opening.match(text)
        if found is not None and found.end() <= before:
            yield Said(found.start("word"), found.end(), LEADING, self.value_of(found.group("word")), found.group(0))
        if not _IS.search(text):  # both patterns need " is": a reply without it is not scanned position by position
            return
        for found in sentence.finditer(text):
            if _starts_sentence(text, found.start()):
                yield Said(found.start(), found.end(), PHRASE, self.value_of(found.group("word")), found.group(0))
        for found in answer.finditer(text):
            if not _starts_sentence(text, found.start()):
                continue
            if found.group("word") is not None:
                value = self.value_of(found.group("word"))
            elif shown is None or shown.holds_words(found.group("number")):
                continue
            else:
                value, _ = score_from_number(text, allowed, found.start("number"))
            if value is not None:  # another number is the graded answer's ("The answer is: 42")
                yield Said(found.start(), found.end(), PHRASE, value, found.group(0))


@cache
def _patterns(
    words: tuple[str, ...], labels: tuple[str, ...]
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    every, phrased = _alternation(words), _alternation(labels)
    # After a list's number too ("1. Incorrect"): then the number is the list's, not a grade.
    opening = re.compile(f"^{OPENING}(?:\\d{{1,3}}[.)]\\s+)?(?P<word>{every}){_OPENING_STOP}", re.IGNORECASE)
    sentence = re.compile(rf"(?<![\w-]){_LEAD_IN}{_SUBJECT}\s+is\s+(?P<word>{phrased}){_STOP}", re.IGNORECASE)
    answer = re.compile(
        rf"(?<![\w-])(?:(?:the|my)\s+)?(?:final\s+)?answer\s+is\s*:[\s*]*"
        rf"(?:(?P<word>{every}){_STOP}|(?P<number>[+-]?\d))",
        re.IGNORECASE,
    )
    return opening, sentence, answer


def _starts_sentence(text: str, at: int) -> bool:
    """Whether ``at`` starts the reply, a line or a sentence (after markdown and spaces)."""
    position, stop = at, max(0, at - _LOOK_BACK)
    while position > stop and text[position - 1] in " \t*#>_":
        position -= 1
    while position > stop and text[position - 1] in _CLOSING:  # 'It said "no." The ...'
        position -= 1
    return position == 0 or text[position - 1] in _SENTENCE_ENDS


def scale_words(scale: Sequence[tuple[int, str]]) -> ScaleWords | None:
    """The words of a two-point ``scale`` (its (value, label) pairs, lowest first); ``None`` for any other scale.

    Also ``None`` when the two labels read the same, or name no words.
    """
    return _scale_words(tuple((int(value), str(label)) for value, label in scale))


@cache
def _scale_words(scale: tuple[tuple[int, str], ...]) -> ScaleWords | None:
    if len(scale) != 2:
        return None
    (low, low_label), (high, high_label) = scale
    lower, upper = _squashed(low_label), _squashed(high_label)
    if not lower or not upper or lower == upper:
        return None
    return _words(low, lower, high, upper)


def _words(low: int, lower: str, high: int, upper: str) -> ScaleWords:
    labels = {lower: low, upper: high}
    labels.setdefault(f"not {upper}", low)
    values = dict(labels)
    if (low, high) == (0, 1):
        for word, value in (("yes", 1), ("true", 1), ("no", 0), ("false", 0)):
            values.setdefault(word, value)
    return ScaleWords(values, frozenset(labels))


CORRECT_WORDS = _words(0, "incorrect", 1, "correct")
"""The words of a 0/1 scale of correctness: what a yes/no reader reads a phrased verdict with."""
