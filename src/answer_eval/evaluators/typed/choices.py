"""Reading multiple-choice answers: which option letter (A to Z) an answer names, and its option text.

An answer names an option in one of these ways, tried as tiers; the first tier that finds any
option decides, and an answer whose deciding tier names two different options names several:

1. The whole answer is a letter: ``B``, ``b``, ``(B)``, ``[b]``, ``B.``, ``B)``, ``B:``.
2. A statement of the answer: ``The answer is B``, ``Answer: (C)``, ``The correct option is B``,
   ``I choose D``, ``**Answer:** B``, and lists after such a cue (``The answer is A or C``).
3. Any other mention: a marker at the start of a line (``B. Paris``, ``B) Paris``, ``(b) Paris``),
   ``Option B``, a bracketed letter ``(B)``, or a capital letter standing alone (``B is right``).

Prose is not an option: a lower-case letter counts only when it is the whole answer, in brackets,
after an answer cue or ``option``, or a line-start marker with ``)``; after a cue it must not be
followed by an ordinary word ("the answer is a cat" names no option). The capitals ``A`` and ``I``
standing alone count only when not followed by an ordinary word ("A cat", "I think" are prose;
"A is correct", "A or B", "I." are options). Letters inside words, numbers and abbreviations
("Vitamin B12", "U.S.", "e.g.") are not options.

A reference is read strictly (tiers 1 and 2 and a line-start marker or ``Option B`` only): a
capital inside option text ("Vitamin C", "World War I") does not make the reference a letter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from answer_eval.text.folding import fold

__all__ = ["ChoiceReading", "read_choice"]

_FLAGS = re.IGNORECASE
_LETTER_TOKEN = re.compile(
    r"(?<![A-Za-z0-9'\u2019.\-])"  # not inside a word, a number, an abbreviation or a hyphenated word
    r"(?:(?P<open>[(\[])\s*)?"
    r"(?P<letter>[A-Za-z])"
    r"(?(open)\s*[)\]])"
    r"(?![A-Za-z0-9'\u2019\-])(?!\.[A-Za-z0-9])"
)
# The whole answer is one letter, decorated. Every run of white space has exactly one place to go (a
# bracket or a mark opens each optional part), so a failed match backtracks linearly: the former
# form, with "\s*" on both sides of each optional mark, took cubic time on "B" and 10,000 spaces.
_WHOLE_LETTER = re.compile(r"[*_\s]*(?:[(\[]\s*)?([A-Za-z])(?:\s*[)\]])?(?:\s*[.:)])?[*_\s]*")
_DECORATION = r"[\s*_\"'\u201c\u201d\u2018\u2019]*"
_ANSWER_CUE = re.compile(
    r"(?:\b(?:answer|choice|option)s?\s*(?:(?:is|was|would\s+be|should\s+be|must\s+be|will\s+be)\s*:?|[:=\-])"
    r"|\b(?:choose|chose|pick|picked|select|selected|go\s+with|went\s+with))"
    + _DECORATION
    + r"(?:(?:option|choice|letter)\s*)?[*_]*",
    _FLAGS,
)
_OPTION_WORD = re.compile(r"\b(?:option|choice|letter)\s*", _FLAGS)
_LIST_SEPARATOR = re.compile(r"^\s*(?:,|/|&|\bor\b|\band\b)\s*(?:(?:option|choice|letter)\s+)?[*_]*$", _FLAGS)
_LINE_PREFIX = re.compile(r"[ \t*_>#-]*")
_WINDOW = 80
_NEXT_WORD = re.compile(r"\s+([a-z][a-z'\u2019]*)")
# Words that may follow an option letter; any other lower-case word makes the letter prose.
_FOLLOWERS = frozenset(
    {"or", "and", "nor", "is", "was", "seems", "appears", "looks", "fits", "matches", "would", "should", "must"}
    | {"could", "because", "since", "as", "then", "but"}
)
_FOLLOWERS_OF_I = frozenset({"or", "and", "nor", "is", "seems", "appears", "looks", "fits", "matches"})
_LEADING_CUE = re.compile(
    r"^(?:the\s+)?(?:correct\s+|right\s+|final\s+|best\s+)?(?:answer|choice|option)\s*(?:is\s*:?|:|=)\s*", _FLAGS
)
_LEADING_MARKER = re.compile(
    r"^(?:(?:option|choice|letter)\s+[A-Za-z]\s*[.):\-]?|[(\[]\s*[A-Za-z]\s*[)\]]|[A-Z][.):]|[a-z]\))(?:\s+|$)"
)
_OPTION_WORD_MARKER = re.compile(r"^(?:option|choice|letter)\s+[A-Za-z]\s*[.):\-]?(?:\s+|$)", _FLAGS)
# Trailing punctuation, matched on the reversed text: a search for "[...]+$" would start at every
# character of a long run of such marks and read to its end each time (quadratic).
_TRAILING_REVERSED = re.compile(r"[\s.!?;:,*_\"'\u201c\u201d\u2018\u2019]+")
_LEADING_QUOTES = re.compile(r"^[\s*_\"'\u201c\u201d\u2018\u2019]+")


@dataclass(frozen=True)
class ChoiceReading:
    """What a multiple-choice answer names.

    :param letters: The distinct option letters of the deciding tier, upper case, in order of
        appearance (empty when the answer names no option; two or more when it names several).
    :param text: The option text: the folded answer with a leading answer cue ("The answer is"),
        a leading option marker ("B.", "(B)", "Option B:") and trailing punctuation removed.
    """

    letters: tuple[str, ...]
    text: str


def _is_prose(letter: str, text: str, end: int) -> bool:
    """Whether a letter ending at ``end`` reads as a word of prose rather than an option."""
    word = _NEXT_WORD.match(text, end)
    if word is None:
        return False
    followers = _FOLLOWERS_OF_I if letter == "I" else _FOLLOWERS
    return word.group(1) not in followers


@dataclass(frozen=True)
class _Context:
    """Where cues end in the text being read, found once per text so reading stays linear."""

    text: str
    cue_ends: frozenset[int]
    option_word_ends: frozenset[int]
    strict: bool


def _tier(context: _Context, match: re.Match[str], previous: tuple[int, int] | None) -> int | None:
    """The tier of one letter token (2 or 3), or ``None`` when it is not an option mention.

    ``previous`` is the end and tier of the last option mention, to continue a list after a cue.
    """
    text = context.text
    letter = match["letter"]
    bracketed = match["open"] is not None
    start, end = match.start(), match.end()
    upper = letter.isupper()

    continues_list = (
        previous is not None and previous[1] == 2 and _LIST_SEPARATOR.match(text[previous[0] : start]) is not None
    )
    if continues_list or start in context.cue_ends:
        if bracketed or (upper and letter not in "AI") or not _is_prose(letter, text, end):
            return 2
        return None
    # A line prefix is short: look back a bounded window, so long answers stay linear.
    window = max(0, start - _WINDOW)
    newline = text.rfind("\n", window, start)
    line = text[newline + 1 : start] if newline >= 0 or window == 0 else None
    following = text[end : end + 1]
    marker = bracketed or following == ")" or (upper and following in (".", ":"))
    if marker and line is not None and _LINE_PREFIX.fullmatch(line):
        return 3
    if start in context.option_word_ends:
        return 3 if bracketed or not _is_prose(letter.upper(), text, end) else None
    if context.strict:
        return None
    if bracketed:
        return 3
    if upper and (letter not in "AI" or not _is_prose(letter, text, end)):
        return 3
    return None


def _letters(text: str, strict: bool) -> tuple[str, ...]:
    whole = _WHOLE_LETTER.fullmatch(text)
    if whole is not None:
        return (whole.group(1).upper(),)
    context = _Context(
        text,
        frozenset(cue.end() for cue in _ANSWER_CUE.finditer(text)),
        frozenset(word.end() for word in _OPTION_WORD.finditer(text)),
        strict,
    )
    found: dict[int, list[str]] = {2: [], 3: []}
    previous: tuple[int, int] | None = None
    for match in _LETTER_TOKEN.finditer(text):
        tier = _tier(context, match, previous)
        if tier is None:
            continue
        found[tier].append(match["letter"].upper())
        previous = (match.end(), tier)
    for tier in (2, 3):
        if found[tier]:
            return tuple(dict.fromkeys(found[tier]))
    return ()


def _strip_trailing(text: str) -> str:
    """``text`` without its trailing white space, punctuation, emphasis marks and quotes."""
    marks = _TRAILING_REVERSED.match(text[::-1])
    return text if marks is None else text[: len(text) - marks.end()]


def _option_text(text: str) -> str:
    rest = _LEADING_QUOTES.sub("", text)
    rest = _LEADING_CUE.sub("", rest, count=1)
    rest = _LEADING_QUOTES.sub("", rest)
    marker = _LEADING_MARKER.match(rest) or _OPTION_WORD_MARKER.match(rest)
    if marker is not None:
        rest = rest[marker.end() :]
    if _WHOLE_LETTER.fullmatch(rest):  # a letter alone has no option text
        return ""
    return fold(_strip_trailing(rest))


def read_choice(text: str, *, strict: bool = False) -> ChoiceReading:
    """Read the option letters and option text of an answer (already taken out of its ``<answer>`` span).

    :param text: The answer text.
    :param strict: Read a reference: only a whole-answer letter, an answer statement, a line-start
        marker and ``Option B`` count, not capitals standing alone in option text.

    >>> read_choice("The answer is B").letters
    ('B',)
    >>> read_choice("B. Paris")
    ChoiceReading(letters=('B',), text='paris')
    >>> read_choice("A or B").letters
    ('A', 'B')
    >>> read_choice("A cat sat on the mat").letters
    ()
    >>> read_choice("Vitamin C", strict=True)
    ChoiceReading(letters=(), text='vitamin c')
    """
    stripped = text.strip()
    return ChoiceReading(_letters(stripped, strict), _option_text(stripped))
