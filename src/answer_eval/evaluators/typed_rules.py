"""The scoring rule of each built-in question type, and how a multiple-choice answer names its option.

The rules apply to answers already taken out of their spans.

Every rule has two steps: :meth:`reference` reads a reference once (raising
:class:`BadReference` when the reference cannot be graded for the type, e.g. a numerical reference
with no number), and :meth:`grade` scores an answer against the read reference, returning a
:class:`Graded` score in ``[0, 1]`` with its failure kind and what was read from the answer.

Multiple choice (:func:`read_choice`): which option letter (A to Z) an answer names, and its option
text. An answer names an option in one of these ways, tried as tiers; the first tier that finds any
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

import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Protocol

from answer_eval.errors import FailureKind
from answer_eval.evaluators.text_metrics import RougeMean, RougeReference, word_error_rate
from answer_eval.text.folding import fold
from answer_eval.text.matching import NumberMention, find_numbers

__all__ = [
    "BadReference",
    "ChoiceRule",
    "CustomRule",
    "CustomScorer",
    "FreeFormRule",
    "Graded",
    "NumberRules",
    "NumericalRule",
    "OcrRule",
    "RegressionRule",
    "Rule",
    "read_choice",
]


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


CustomScorer = Callable[[str, str], Any]
"""A custom type's scoring function: ``(answer, reference) -> number in [0, 1]`` (a bool is 0 or 1)."""
_MAX_DECIMALS = 30
_ROUNDING_LIMIT = 100  # numbers above 10**100 are compared unrounded (rounding them needs > 100 digits)


class BadReference(ValueError):
    """A reference that cannot be graded for its question type."""


@dataclass(frozen=True)
class Graded:
    """One answer's grade.

    :param score: In ``[0, 1]``.
    :param failure_kind: ``None`` unless the answer failed (see :class:`answer_eval.FailureKind`).
    :param outcome: What was read from the answer (option letter, number, text), ``None`` if nothing.
    """

    score: float
    failure_kind: str | None
    outcome: str | None


class Rule(Protocol):
    """A question type's scoring rule."""

    def reference(self, text: str) -> Any:
        """Read a reference (its answer text); raise :class:`BadReference` if it cannot be graded."""

    def grade(self, answer: str, reference: Any) -> Graded:
        """Score a non-blank answer text against a reference read by :meth:`reference`."""


def _graded(score: float, outcome: str | None) -> Graded:
    """A graded (not 0/1) score: no failure unless nothing at all matched."""
    return Graded(score, None if score > 0 else FailureKind.WRONG, outcome)


class ChoiceRule:
    """Multiple choice: 1 when the answer names the reference's option (letter or option text), else 0."""

    def reference(self, text: str) -> ChoiceReading:
        """Read the reference strictly (see :func:`answer_eval.evaluators.typed_rules.read_choice`)."""
        reading = read_choice(text, strict=True)
        if len(reading.letters) > 1:
            raise BadReference(f"names several options ({', '.join(reading.letters)}); a reference names one")
        return reading

    def grade(self, answer: str, reference: ChoiceReading) -> Graded:
        """Option text equal to the reference's wins; then letters; several letters are wrong."""
        reading = read_choice(answer)
        outcome = ",".join(reading.letters) if reading.letters else reading.text or None
        if reference.text and reading.text == reference.text:
            return Graded(1.0, None, reading.text)
        if len(reading.letters) > 1:
            return Graded(0.0, FailureKind.WRONG, outcome)
        if reference.letters:
            if reading.letters:
                right = reading.letters == reference.letters
                return Graded(1.0 if right else 0.0, None if right else FailureKind.WRONG, outcome)
            if reference.text:  # a text answer that is not the option's text
                return Graded(0.0, FailureKind.WRONG, outcome)
            return Graded(0.0, FailureKind.PARSE_FAILURE, outcome)
        # The reference is option text only: a bare letter cannot be checked against it.
        return Graded(0.0, FailureKind.WRONG, outcome)


@dataclass(frozen=True)
class NumberRules:
    """How numbers are read and compared.

    :param decimals: Round both numbers to this many decimal places (half away from zero) before
        comparing; ``None`` compares them exactly.
    :param rel_tol: Also equal when ``|a - b| <= rel_tol * max(|a|, |b|)``.
    :param abs_tol: Also equal when ``|a - b| <= abs_tol``.
    :param number: Which number of an answer holding several: ``"last"``, ``"first"`` or ``"only"``
        (several different numbers make the answer wrong, or the reference invalid).
    :param percent: ``"unit"``: "45%" is 45, a number with a unit (equal to "45", not "0.45");
        ``"fraction"``: "45%" is 0.45; ``"either"``: both readings are tried.
    """

    decimals: int | None = 2
    rel_tol: float = 0.0
    abs_tol: float = 0.0
    number: str = "last"
    percent: str = "unit"

    def __post_init__(self) -> None:
        decimals = self.decimals
        if decimals is not None and (
            isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= _MAX_DECIMALS
        ):
            raise ValueError(f"decimals must be an int from 0 to {_MAX_DECIMALS}, or None; got {self.decimals!r}")
        for name in ("rel_tol", "abs_tol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.number not in ("last", "first", "only"):
            raise ValueError(f"number must be 'last', 'first' or 'only', got {self.number!r}")
        if self.percent not in ("unit", "fraction", "either"):
            raise ValueError(f"percent must be 'unit', 'fraction' or 'either', got {self.percent!r}")

    def read(self, text: str) -> tuple[NumberMention | None, tuple[NumberMention, ...]]:
        """The number ``text`` gives (``None`` if none or, under ``"only"``, several) and all its numbers."""
        mentions = tuple(find_numbers(text))
        if not mentions:
            return None, mentions
        if self.number == "last":
            return mentions[-1], mentions
        if self.number == "first":
            return mentions[0], mentions
        distinct = {mention.value for mention in mentions}
        return (mentions[0] if len(distinct) == 1 else None), mentions

    def values(self, mention: NumberMention) -> tuple[Decimal, ...]:
        """The values a number may stand for under the percent rule."""
        if not mention.percent or self.percent == "unit":
            return (mention.value,)
        fraction = mention.value.scaleb(-2)
        return (fraction,) if self.percent == "fraction" else (mention.value, fraction)

    def equal(self, first: Decimal, second: Decimal) -> bool:
        """Equal after rounding to ``decimals``, or within the tolerances."""
        if first == second:
            return True
        try:
            with localcontext() as context:
                context.prec, context.Emax, context.Emin = 2 * _ROUNDING_LIMIT, MAX_EMAX, MIN_EMIN
                if self.decimals is not None and self._round(first) == self._round(second):
                    return True
                if self.rel_tol or self.abs_tol:
                    difference = abs(first - second)
                    allowed = max(Decimal(str(self.rel_tol)) * max(abs(first), abs(second)), Decimal(str(self.abs_tol)))
                    return difference <= allowed
        except ArithmeticError:  # numbers too far apart in scale to subtract exactly: not equal
            return False
        return False

    def _round(self, value: Decimal) -> Decimal:
        if value.adjusted() > _ROUNDING_LIMIT:
            return value
        return value.quantize(Decimal(1).scaleb(-(self.decimals or 0)), rounding=ROUND_HALF_UP)


def _number_reference(rules: NumberRules, text: str) -> NumberMention:
    mention, mentions = rules.read(text)
    if mention is None:
        if mentions:
            raise BadReference(f"holds several different numbers ({', '.join(m.text for m in mentions)})")
        raise BadReference(f"holds no number: {text[:60]!r}")
    return mention


def _number_answer(rules: NumberRules, answer: str) -> NumberMention | Graded:
    mention, mentions = rules.read(answer)
    if mention is not None:
        return mention
    if mentions:  # "only", and the answer gives several different numbers
        return Graded(0.0, FailureKind.WRONG, "; ".join(m.text for m in mentions))
    return Graded(0.0, FailureKind.PARSE_FAILURE, None)


class _NumberRule:
    """A rule comparing the number of the answer with the reference's, read with ``rules``."""

    def __init__(self, rules: NumberRules) -> None:
        self.rules = rules

    def reference(self, text: str) -> NumberMention:
        """The reference's number."""
        return _number_reference(self.rules, text)


class NumericalRule(_NumberRule):
    """Numerical: 1 when the answer's number equals the reference's (see :class:`NumberRules`), else 0."""

    def grade(self, answer: str, reference: NumberMention) -> Graded:
        """Compare the numbers; no number in the answer is a parse failure."""
        read = _number_answer(self.rules, answer)
        if isinstance(read, Graded):
            return read
        rules = self.rules
        right = any(rules.equal(mine, theirs) for mine in rules.values(read) for theirs in rules.values(reference))
        return Graded(1.0 if right else 0.0, None if right else FailureKind.WRONG, read.text)


class RegressionRule(_NumberRule):
    """Regression: ``max(0, 1 - |answer - reference| / |reference|)``; a reference of 0 needs exactly 0."""

    def grade(self, answer: str, reference: NumberMention) -> Graded:
        """The closeness of the answer's number to the reference's, the best over percent readings."""
        read = _number_answer(self.rules, answer)
        if isinstance(read, Graded):
            return read
        best = max(
            _closeness(mine, theirs) for mine in self.rules.values(read) for theirs in self.rules.values(reference)
        )
        return _graded(best, read.text)


def _closeness(answer: Decimal, reference: Decimal) -> float:
    if reference == 0:
        return 1.0 if answer == 0 else 0.0
    try:
        with localcontext() as context:
            context.prec, context.Emax, context.Emin = 40, MAX_EMAX, MIN_EMIN
            relative = abs(answer - reference) / abs(reference)
            return float(max(Decimal(0), 1 - relative))
    except ArithmeticError:
        return 0.0


class OcrRule:
    """OCR: ``max(0, 1 - WER)`` over words (see :func:`answer_eval.evaluators.text_metrics.word_error_rate`)."""

    def __init__(self, ignore_case: bool = False, ignore_punctuation: bool = False) -> None:
        self.ignore_case = ignore_case
        self.ignore_punctuation = ignore_punctuation

    def reference(self, text: str) -> str:
        """The reference text, as is."""
        return text

    def grade(self, answer: str, reference: str) -> Graded:
        """One minus the word error rate, floored at 0."""
        rate = word_error_rate(
            reference, answer, ignore_case=self.ignore_case, ignore_punctuation=self.ignore_punctuation
        )
        return _graded(max(0.0, 1.0 - rate), answer)


class FreeFormRule:
    """Free-form: the mean ROUGE F-measure (rouge1, rouge2, rougeL by default), equal to rouge-score."""

    def __init__(self, rouge: RougeMean) -> None:
        self.rouge = rouge

    def reference(self, text: str) -> RougeReference:
        """The reference text, tokenized once."""
        return self.rouge.prepare(text)

    def grade(self, answer: str, reference: RougeReference) -> Graded:
        """The mean F-measure."""
        return _graded(self.rouge.score_prepared(reference, answer), answer)


class CustomRule:
    """A registered type: the user's function scores ``(answer, reference)`` texts."""

    def __init__(self, name: str, function: CustomScorer) -> None:
        self.name = name
        self.function = function

    def reference(self, text: str) -> str:
        """The reference text, as is."""
        return text

    def grade(self, answer: str, reference: str) -> Graded:
        """Call the function; a result that is not a number in ``[0, 1]`` raises ``ValueError``."""
        value = self.function(answer, reference)
        score = float(value) if isinstance(value, numbers.Real) else None
        if score is None or not 0 <= score <= 1:  # NaN fails the range test
            raise ValueError(
                f"the scorer of custom type {self.name!r} returned {value!r}; it must return a number in [0, 1]"
            )
        return _graded(score, answer)
