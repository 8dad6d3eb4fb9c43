"""Number-aware "answer contains" matching on folded text, and reading numbers out of answer text under the same rules.

Text that is not a number is a plain substring. A label that begins or ends with a number is
matched whole at that end: "12" is not found in "2012", "0.12", "-12", "12.5", "12,5" or "3,12"
(decimal commas), but is found in "12%", "$12", "12-15" (a range) and "The answer is 12." (a full
stop, not a decimal point). Every occurrence is tried, so "145.2 or maybe 45.2" contains "45.2".
Both sides are folded first, which writes every number in one form
(:mod:`answer_eval.text.folding`): "12.50" contains "12.5", "1.5e3" contains "1500" and not
"1.5", "2½" contains "2.5" and not "2", and "9/11" (a fraction, "9⁄11") does not contain "11".

Reading numbers: a mention is found in folded text (see :func:`answer_eval.fold`), so thousands separators are
already gone ("12,400" is 12400), digits are ASCII, minus signs are ``-`` and every number is in
its one written form (:mod:`answer_eval.text.folding`: "1.5e3" is 1500, "2½" is 2.5, "3/4" is
0.75, "1/3" is the fraction "1⁄3", read as its value). A ``-`` right after a digit is a range
hyphen ("12-15" holds 12 and 15), elsewhere a minus sign. A number glued to a decimal comma
("12,5") is not read: it is ambiguous with a list ("1,2"), and the matching rules treat it as one
token too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from answer_eval.inputs.reading import acceptable_answers
from answer_eval.text.folding import fold

__all__ = [
    "NumberMention",
    "contains_answer",
    "contains_folded",
    "contains_number",
    "ends_with_number",
    "find_numbers",
    "number_edges",
    "occurrences",
    "parse_number",
    "starts_with_number",
    "substring_starts",
]


_DIGITS = frozenset("0123456789")


def starts_with_number(folded_label: str) -> bool:
    """Whether a folded label begins with a digit, or with ``-`` and a digit."""
    if not folded_label:
        return False
    first = folded_label[0]
    if first in _DIGITS:
        return True
    return first == "-" and len(folded_label) > 1 and folded_label[1] in _DIGITS


def ends_with_number(folded_label: str) -> bool:
    """Whether a folded label ends with a digit."""
    return bool(folded_label) and folded_label[-1] in _DIGITS


# Characters that join what follows them to the number before: a fraction slash ("1⁄3", the form
# fold gives a fraction with no finite decimal) and a power ("2^100", beyond the powers fold
# writes out). An exponent "e" joins too, when a digit comes before it ("1e999").
_JOINERS = frozenset("\u2044^")


def _left_edge_ok(text: str, start: int) -> bool:
    # A number must not continue a longer number, a decimal fraction ("0.12", or "12,5" with a
    # decimal comma), a fraction, a power, an exponent or a minus sign. A "-" right after a digit
    # is a range hyphen ("12-15"), so the number after it stands on its own.
    if start == 0:
        return True
    before = text[start - 1]
    if before in _DIGITS or before == "." or before in _JOINERS:
        return False
    if before in "e+" and _after_exponent_mark(text, start - 1):
        return False
    if before == "-":
        return start >= 2 and text[start - 2] in _DIGITS
    if before == ",":
        return not (start >= 2 and text[start - 2] in _DIGITS)
    return True


def _right_edge_ok(text: str, end: int) -> bool:
    # A number must not run on into more digits, or into a decimal part ("12.5", "12,5"); a full
    # stop or comma that ends a sentence or a clause is fine.
    if end >= len(text):
        return True
    after = text[end]
    if after in _DIGITS or after in _JOINERS:
        return False
    if after == "." or after == ",":
        return not (end + 1 < len(text) and text[end + 1] in _DIGITS)
    if after == "e":  # an exponent: "12e999" is not 12
        rest = text[end + 1 : end + 3]
        return not (rest[:1] in _DIGITS or (rest[:1] in "+-" and rest[1:2] in _DIGITS)) or not rest
    return True


def _after_exponent_mark(text: str, mark: int) -> bool:
    """Whether ``text[mark]`` (an ``e``, or a ``+`` after one) is the exponent mark of a number."""
    if text[mark] == "+":
        mark -= 1
    return mark >= 1 and text[mark] == "e" and text[mark - 1] in _DIGITS


def number_edges(folded_label: str) -> tuple[bool, bool]:
    """Which ends of a folded label hold a number: ``(starts_with_number, ends_with_number)``."""
    return starts_with_number(folded_label), ends_with_number(folded_label)


# After this many occurrences of a number label fail their edge checks, the rest of the text is
# searched by one regular expression with the same edge rules, so a text with a long run of
# near misses ("2012 2012 2012 ...", a long digit run) costs C-speed scanning, not a Python loop
# over every occurrence.
_PYTHON_TRIES = 4


@lru_cache(maxsize=1024)
def _edge_pattern(folded_label: str, check_left: bool, check_right: bool) -> re.Pattern[str]:
    # The left rule as look-behinds: no digit or "." before; no minus sign before (a "-" not
    # preceded by a digit); no decimal comma before (a "," preceded by a digit).
    left = r"(?<![0-9.\u2044^])(?<!(?<![0-9])-)(?<![0-9],)(?<![0-9]e)(?<![0-9]e[+-])" if check_left else ""
    # The right rule: no digit, fraction slash or power after, nor "." or "," followed by a digit,
    # nor an exponent.
    right = r"(?![0-9\u2044^])(?![.,][0-9])(?!e[+-]?[0-9])" if check_right else ""
    return re.compile(left + re.escape(folded_label) + right)


def contains_number(folded_text: str, folded_label: str, check_left: bool, check_right: bool) -> bool:
    """Whether a non-empty folded label occurs in ``folded_text`` with its number edges free.

    ``check_left`` and ``check_right`` say which ends hold a number (see :func:`number_edges`);
    :func:`contains_folded` is this with the edges read from the label.
    """
    start = folded_text.find(folded_label)
    if start < 0:
        return False
    if not (check_left or check_right):
        return True
    size = len(folded_label)
    for _ in range(_PYTHON_TRIES):
        if (not check_left or _left_edge_ok(folded_text, start)) and (
            not check_right or _right_edge_ok(folded_text, start + size)
        ):
            return True
        start = folded_text.find(folded_label, start + 1)
        if start < 0:
            return False
    return _edge_pattern(folded_label, check_left, check_right).search(folded_text, start) is not None


def occurrences(folded_text: str, folded_label: str) -> Iterator[int]:
    """Every start of ``folded_label`` in ``folded_text`` that :func:`contains_folded` would accept, in order."""
    if not folded_label:
        return
    check_left, check_right = number_edges(folded_label)
    size = len(folded_label)
    for start in substring_starts(folded_text, folded_label):
        if (not check_left or _left_edge_ok(folded_text, start)) and (
            not check_right or _right_edge_ok(folded_text, start + size)
        ):
            yield start


_FIND_TRIES = 64  # occurrences found with str.find before the linear search takes over


def substring_starts(text: str, pattern: str) -> Iterator[int]:
    """Every start of ``pattern`` in ``text``, overlapping ones included, in time linear in both.

    ``str.find`` from each start onwards rereads the pattern at every occurrence: a periodic
    pattern in a periodic text ("ab ab ab" in "ab ab ab ...") has one at almost every position.
    After :data:`_FIND_TRIES` of them, Knuth-Morris-Pratt finds the rest in one pass.
    """
    start = text.find(pattern)
    for _ in range(_FIND_TRIES):
        if start < 0:
            return
        yield start
        start = text.find(pattern, start + 1)
    if start >= 0:
        yield from _kmp_starts(text, pattern, start)


def _kmp_starts(text: str, pattern: str, begin: int) -> Iterator[int]:
    failure = [0] * len(pattern)
    matched = 0
    for position in range(1, len(pattern)):
        while matched and pattern[position] != pattern[matched]:
            matched = failure[matched - 1]
        if pattern[position] == pattern[matched]:
            matched += 1
        failure[position] = matched
    matched = 0
    for position in range(begin, len(text)):
        while matched and text[position] != pattern[matched]:
            matched = failure[matched - 1]
        if text[position] == pattern[matched]:
            matched += 1
        if matched == len(pattern):
            yield position - len(pattern) + 1
            matched = failure[matched - 1]


def contains_folded(folded_text: str, folded_label: str) -> bool:
    """Whether ``folded_label`` occurs in ``folded_text`` under the number rules.

    Both arguments must already be folded with :func:`answer_eval.fold`; use
    :func:`contains_answer` for raw text. An empty label is never found.
    """
    if not folded_label:
        return False
    check_left = starts_with_number(folded_label)
    check_right = ends_with_number(folded_label)
    if not (check_left or check_right):
        return folded_label in folded_text
    return contains_number(folded_text, folded_label, check_left, check_right)


def contains_answer(text: str, acceptable: str | int | Iterable[str | int]) -> bool:
    """Whether ``text`` contains any acceptable answer, both folded the same way.

    ``acceptable`` is one answer or several; integers are read as their decimal digits, so the
    label ``100000`` accepts "100,000". Raises ``TypeError`` for a label that is neither a str nor
    an int and ``ValueError`` for a blank label or an empty list. This is the lexical rule only: the ``NOT_IN_DOCUMENT``
    label gets no special meaning here (see :class:`answer_eval.AnswerContainsScorer`).

    >>> contains_answer("Sheffield produced 12,400 units.", "12400")
    True
    >>> contains_answer("Version 3.12 is out.", ["12", "3.1"])
    False
    """
    if isinstance(acceptable, Iterable) and not isinstance(acceptable, (str, bytes, bytearray, Mapping, tuple, list)):
        acceptable = list(acceptable)  # a set or a generator of labels
    labels = acceptable_answers(acceptable)
    folded_text = fold(text)
    return any(contains_folded(folded_text, fold(label)) for label in labels)


_NUMBER = re.compile(
    r"(?<![0-9.⁄^])(?<![0-9],)"  # not the tail of a longer number, a decimal, a fraction or a decimal comma
    r"(?P<sign>(?<![0-9])-)?"  # a minus sign, unless it is a range hyphen after a digit
    r"(?P<digits>[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
    r"(?:⁄(?P<denominator>[0-9]+))?"  # a fraction with no finite decimal form, as fold writes it
    r"(?P<exponent>e[+-]?[0-9]+)?"  # an exponent too large for fold to write out
    r"(?![0-9⁄^])(?![.,][0-9])"  # nor the head of a longer one
    r"(?P<percent> ?(?:%|percent\b|per cent\b))?"
)


@dataclass(frozen=True)
class NumberMention:
    """One number found in folded text.

    :param value: The number, exact (``Decimal``): "42.50" and "42.5" are equal values.
    :param text: The folded text of the number, sign and percent unit included.
    :param start: Where it starts in the folded text.
    :param end: Where it ends in the folded text.
    :param percent: Whether a percent unit follows it ("45%", "45 percent"); ``value`` stays 45.
    """

    value: Decimal
    text: str
    start: int
    end: int
    percent: bool


def find_numbers(text: str, *, folded: bool = False) -> list[NumberMention]:
    """Every number in ``text``, in order.

    :param text: Raw answer text, or folded text when ``folded`` is true.
    :param folded: Skip folding because the caller already folded the text.

    >>> [str(m.value) for m in find_numbers("Sales rose 12.5% to 12,400 units in 2019-2020.")]
    ['12.5', '12400', '2019', '2020']
    >>> [str(m.value) for m in find_numbers("It fell to \u22123.5 \u00b0C; version 3.12 shipped.")]
    ['-3.5', '3.12']
    """
    source = text if folded else fold(text)
    mentions = []
    for match in _NUMBER.finditer(source):
        literal = (match["sign"] or "") + match["digits"] + (match["exponent"] or "")
        try:
            value = Decimal(literal)
            if match["denominator"] is not None:
                value /= Decimal(match["denominator"])
        except ArithmeticError:  # a zero denominator, or a quotient beyond Decimal's range ("1e999999⁄3")
            continue
        if not value.is_finite():
            continue
        mentions.append(NumberMention(value, match.group(0), match.start(), match.end(), bool(match["percent"])))
    return mentions


def parse_number(text: str, *, which: str = "last") -> Decimal | None:
    """The number an answer gives, or ``None`` when it holds none.

    :param which: ``"last"`` (default: "6 times 7 is 42" gives 42, the usual reading of a worked
        answer), ``"first"``, or ``"only"`` (``None`` unless exactly one distinct value appears).

    >>> parse_number("The result is 42.50")  # trailing zeros do not change the value
    Decimal('42.5')
    >>> parse_number("12 or 13", which="only") is None
    True
    """
    mentions = find_numbers(text)
    if not mentions:
        return None
    if which == "last":
        return mentions[-1].value
    if which == "first":
        return mentions[0].value
    if which == "only":
        values = {mention.value for mention in mentions}
        return mentions[0].value if len(values) == 1 else None
    raise ValueError(f"which must be 'last', 'first' or 'only', got {which!r}")
