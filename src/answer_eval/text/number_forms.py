"""One way to write each number: the forms a number takes in an answer, and the one :func:`answer_eval.fold` gives it.

:func:`answer_eval.fold` calls this module, so every evaluator (contains, the judge's lexical
stage, the typed numerical rule, exact match with ``fold``) reads a number the same way: two
writings of one value fold to the same text, and a number is never read as another one that
only shares its digits. The decisions, each with its reason:

- **Trailing decimal zeros** do not change the value: "12.50" is "12.5", "12.0" is "12". (A
  two-part version number such as "3.10" is read as the decimal it looks like; versions with
  three parts, "67.0.3396", are left alone.) Leading zeros are kept: "007" is a name.
- **Fullwidth and Arabic separators** are separators: "１２，４００" and "١٢٬٤٠٠" are 12400,
  "１２．５" and "١٢٫٥" are 12.5 (the folding table maps them; grouped thousands are then dropped
  as for ASCII).
- **Scientific notation** is one number: "1.5e3", "1.5E+3", "1.5 × 10^3", "1.5x10³" are 1500, so
  "1.5" is not found in them. Exponents beyond ±30 are left as written (and still read whole).
- **Powers**: a superscript or ``^`` right after a number is an exponent: "10²" and "10^2" are 100,
  "5³" is 125. A superscript or subscript elsewhere ("m²", "H₂O") is not a digit and stays as it
  is, so "2" is not found in "5 m²".
- **Fractions with a slash** between two whole numbers are fractions when they read as one: a
  numerator smaller than the denominator, neither with a leading zero, the denominator at most
  1000, and no third part: "3/4" is 0.75, while "24/7", "1984/85", "130/80", "2019/2020" and dates
  such as "10/09/2001" keep their numbers apart. A whole number of up to three digits and a space
  before a fraction make a mixed number: "2 1/2" is 2.5 (a longer one is a year: "1990 3/4").
- **Vulgar fractions** are fractions, and glued to a whole number they make a mixed number: "½" is
  0.5, "2½" and "2 ½" are 2.5, so "2" is not found in "2½ furlongs".
- A value with a finite decimal expansion is written as that decimal ("3/4" → "0.75"); any other
  fraction as its lowest terms with the fraction slash U+2044 ("1/3", "2/6" → "1⁄3"), which the
  matching rules treat as part of the number ("3" is not found in "1⁄3").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = [
    "FRACTION_SLASH",
    "NUMBER_WORK",
    "canonical_numbers",
    "needs_canonical_numbers",
    "number_marks",
    "number_work",
]

FRACTION_SLASH = "\u2044"
"""The slash of a fraction that has no finite decimal form, as :func:`canonical_numbers` writes it."""

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_VULGAR = {
    "¼": "1⁄4", "½": "1⁄2", "¾": "3⁄4", "⅐": "1⁄7", "⅑": "1⁄9", "⅒": "1⁄10", "⅓": "1⁄3", "⅔": "2⁄3",
    "⅕": "1⁄5", "⅖": "2⁄5", "⅗": "3⁄5", "⅘": "4⁄5", "⅙": "1⁄6", "⅚": "5⁄6", "⅛": "1⁄8", "⅜": "3⁄8",
    "⅝": "5⁄8", "⅞": "7⁄8", "↉": "0⁄3",
}  # fmt: skip
NUMBER_MARKS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻" + "".join(_VULGAR)
"""The characters :func:`number_marks` rewrites (the folding table leaves them to it)."""
_find_mark = re.compile("[" + re.escape(NUMBER_MARKS) + "]").search
# A superscript run after a digit; a vulgar fraction after a whole number (not the tail of a
# decimal or of a grouped number: "1,000½" keeps its parts apart), or after any digit, or alone.
_MARK = re.compile(
    r"(?P<digit>[0-9] ?)?(?P<sup>[⁰¹²³⁴-⁹⁺⁻]+)"
    r"|(?:(?<![0-9.,])(?:(?P<whole>[0-9]{1,40})|(?P<spaced>[0-9]{1,3})\s)|(?P<after>[0-9]\s?))?"
    r"(?P<vulgar>[" + "".join(_VULGAR) + "])(?P<glued>(?=[0-9]))?"
)


def number_marks(text: str) -> str:
    """Superscripts after a number and vulgar fractions as plain characters (``text``'s digits already ASCII).

    A superscript right after a digit becomes ``^`` and the exponent ("10²" → "10^2"). Elsewhere
    superscripts and subscripts are not digits and stay as they are ("m²", "H₂O"), so "2" is never
    found in "5 m²". A vulgar fraction after a whole number (glued, or one space apart after at
    most three digits, as for "2 1/2") makes a mixed number, written as its value ("2½" → "2.5",
    "2 ⅓" → "7⁄3"; "1990 ½" is a year and a half); alone it becomes ``a⁄b``
    ("½" → "0.5" later), one space away from a digit it follows.
    """
    if _find_mark(text) is None:
        return text
    # Twice: a vulgar fraction written out ends in a digit a superscript after it then follows ("¼¹").
    return _MARK.sub(_plain_mark, _MARK.sub(_plain_mark, text))


def _plain_mark(match: re.Match[str]) -> str:
    if match["sup"] is not None:
        digit = match["digit"] or ""
        glued = digit and not digit.endswith(" ")
        return f"{digit}^{match['sup'].translate(_SUPERSCRIPT)}" if glued else match.group(0)
    fraction = _VULGAR[match["vulgar"]]
    gap = " " if match["glued"] is not None else ""  # "¼0": the digit after is another number
    whole = match["whole"] or match["spaced"]
    if whole is not None:
        from fractions import Fraction

        numerator, denominator = fraction.split("⁄")
        written = _written(int(whole) + Fraction(int(numerator), int(denominator)))
        return match.group(0) if written is None else written + gap
    after = match["after"]
    return (f"{after.rstrip()} {fraction}" if after else fraction) + gap


# Which folded texts may hold a number written in a form other than its canonical one: a digit
# before an exponent, a fraction slash or a power, or a decimal point before digits ending in a
# zero. Only whether a text has a match counts, never where: so the pattern starts with one
# character class, which lets ``re`` skip to the next digit or point in C. (Written as
# alternatives, "a digit, then ..." or "a point not after a digit, then ...", the same screen took
# four times as long: ``re`` tried every alternative at every position.)
_AFTER_DIGIT = r"e[+-]?[0-9]|[/⁄][0-9]|\^"
_AFTER_POINT = r"[0-9]*0(?![0-9])"


def number_work(after_digit: str = "") -> str:
    """The screen :func:`needs_canonical_numbers` searches, with more that may follow a digit (``after_digit``).

    A match tells only that there may be work: callers test for one, never use where it is.
    """
    digit = f"{after_digit}|{_AFTER_DIGIT}" if after_digit else _AFTER_DIGIT
    return rf"[0-9.](?:(?<=[0-9])(?:{digit})|(?<=\.){_AFTER_POINT})"


NUMBER_WORK = number_work()
"""Where a folded text may hold a number not in its one form (the pattern :func:`needs_canonical_numbers` searches)."""
_WORK = re.compile(NUMBER_WORK)


def needs_canonical_numbers(folded: str) -> bool:
    """Whether :func:`canonical_numbers` may change ``folded`` (one search, for the fast paths)."""
    return _WORK.search(folded) is not None


_FRACTION = re.compile(
    r"(?<![0-9_.,/⁄^])(?<![0-9]e)(?<![0-9]e[+-])(?:(?P<whole>[0-9]+) )?(?P<num>[0-9]+)(?P<slash>[/⁄])(?P<den>[0-9]+)"
    r"(?![0-9]|[/⁄][0-9]|[.,][0-9])"
)
_SCIENTIFIC = re.compile(
    r"(?<![\w.,/⁄^])(?P<mantissa>[0-9]+(?:\.[0-9]+)?|\.[0-9]+)"
    r"(?:e(?P<e>[+-]?[0-9]+)|(?: ?[x*×·] ?)10\^(?P<ten>[+-]?[0-9]+)|\^(?P<power>[+-]?[0-9]+))"
    r"(?![\w^⁄/]|[.,][0-9])"
)
_TRAILING_ZEROS = re.compile(r"(?<![0-9.,/⁄^])(?P<int>[0-9]*)\.(?P<frac>(?:[0-9]*[1-9])?)0+(?![0-9]|[.,][0-9]|[/⁄^])")
_LONGEST = 60  # characters of a canonical number; a longer value is left as written
_MAX_EXPONENT = 30


def canonical_numbers(folded: str) -> str:
    """Every number of ``folded`` text (already casefolded, separators dropped) in its one written form.

    See the module docstring for the forms and the decisions. Idempotent: a canonical number
    is left as it is.

    >>> canonical_numbers("12.50 m, 1.5e3 units, 3/4 of them, 2 1/2 days, 10^2, 24/7, 1/3")
    '12.5 m, 1500 units, 0.75 of them, 2.5 days, 100, 24/7, 1⁄3'
    """
    if not needs_canonical_numbers(folded):
        return folded
    if "/" in folded or FRACTION_SLASH in folded:
        folded = _FRACTION.sub(_fraction, folded)
    if "e" in folded or "^" in folded:
        folded = _SCIENTIFIC.sub(_scientific, folded)
    if "." in folded:
        folded = _TRAILING_ZEROS.sub(_without_trailing_zeros, folded)
    return folded


def _fraction(match: re.Match[str]) -> str:
    from fractions import Fraction  # imported on first use: ~10 ms, kept out of ``import answer_eval``

    num, den = match["num"], match["den"]
    if match["slash"] == "/" and not (
        num[0] != "0" and den[0] != "0" and len(den) <= 4 and 0 < int(num) < int(den) <= 1000
    ):
        return match.group(0)
    if int(den) == 0 or len(num) > 12 or len(den) > 12:
        return match.group(0)
    whole = match["whole"] or ""
    fraction = Fraction(int(num), int(den))
    if len(whole) > 3:  # "in 1990 3/4 of them": a year, then a fraction
        written = _written(fraction)
        return f"{whole} {written}" if written else match.group(0)
    return _written(fraction + int(whole or 0)) or match.group(0)


def _scientific(match: re.Match[str]) -> str:
    from fractions import Fraction  # imported on first use: ~10 ms, kept out of ``import answer_eval``

    mantissa = Fraction(match["mantissa"]) if len(match["mantissa"]) <= 40 else None
    if mantissa is None:
        return match.group(0)
    if match["power"] is not None:
        power = int(match["power"])
        if abs(power) > 64 or (mantissa == 0 and power < 0) or _digits(mantissa) * abs(power) > _LONGEST:
            return match.group(0)
        value = mantissa**power
    else:
        exponent = int(match["e"] if match["e"] is not None else match["ten"])
        if abs(exponent) > _MAX_EXPONENT:
            return match.group(0)
        value = mantissa * Fraction(10) ** exponent
    return _written(value) or match.group(0)


def _digits(value: Fraction) -> int:
    return max(len(str(value.numerator)), len(str(value.denominator)))


def _without_trailing_zeros(match: re.Match[str]) -> str:
    whole, fraction = match["int"], match["frac"]
    return f"{whole}.{fraction}" if fraction else whole or "0"


def _written(value: Fraction) -> str | None:
    """A non-negative rational as a plain decimal when it has a finite one, else ``p⁄q``; ``None`` if too long."""
    denominator = value.denominator
    twos = fives = 0
    while denominator % 2 == 0:
        denominator //= 2
        twos += 1
    while denominator % 5 == 0:
        denominator //= 5
        fives += 1
    if denominator != 1:
        text = f"{value.numerator}{FRACTION_SLASH}{value.denominator}"
        return text if len(text) <= _LONGEST else None
    places = max(twos, fives)
    scaled = value.numerator * 10**places // value.denominator
    digits = str(scaled).rjust(places + 1, "0")
    text = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return text if len(text) <= _LONGEST else None
