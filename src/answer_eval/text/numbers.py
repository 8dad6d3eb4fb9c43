"""Reading numbers out of answer text, under the same rules as matching.

A mention is found in folded text (see :func:`answer_eval.fold`), so thousands separators are
already gone ("12,400" is 12400), digits are ASCII, minus signs are ``-`` and every number is in
its one written form (:mod:`answer_eval.text.folding`: "1.5e3" is 1500, "2½" is 2.5, "3/4" is
0.75, "1/3" is the fraction "1⁄3", read as its value). A ``-`` right after a digit is a range
hyphen ("12-15" holds 12 and 15), elsewhere a minus sign. A number glued to a decimal comma
("12,5") is not read: it is ambiguous with a list ("1,2"), and the matching rules treat it as one
token too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from answer_eval.text.folding import fold

__all__ = ["NumberMention", "find_numbers", "parse_number"]

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
