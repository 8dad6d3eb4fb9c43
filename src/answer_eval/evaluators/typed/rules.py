"""The scoring rule of each built-in question type, applied to answers already taken out of their spans.

Every rule has two steps: :meth:`reference` reads a reference once (raising
:class:`BadReference` when the reference cannot be graded for the type, e.g. a numerical reference
with no number), and :meth:`grade` scores an answer against the read reference, returning a
:class:`Graded` score in ``[0, 1]`` with its failure kind and what was read from the answer.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_UP, Decimal, localcontext
from typing import Any, Protocol

from answer_eval.errors import FailureKind
from answer_eval.evaluators.typed.choices import ChoiceReading, read_choice
from answer_eval.evaluators.typed.text_metrics import RougeMean, RougeReference, word_error_rate
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
]

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
        """Read the reference strictly (see :func:`answer_eval.evaluators.typed.choices.read_choice`)."""
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
    """OCR: ``max(0, 1 - WER)`` over words (see :func:`answer_eval.evaluators.typed.text_metrics.word_error_rate`)."""

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
