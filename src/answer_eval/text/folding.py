"""Text folding: the one normal form that answers and labels are compared in.

``fold`` lower-cases with ``str.casefold``, collapses every run of Unicode white space to one
space, maps decimal digits of any script to ASCII, maps minus-like dashes to ``-``, drops
invisible characters, applies the compatibility mappings a reader would not tell apart
(fullwidth letters, ligatures, mathematical letters), drops thousands separators inside grouped
numbers and writes every number in one form (below), so "1,204", "1 204", "1\u00a0204", "１２０４"
and "1204" fold alike. Everything else is left alone: punctuation, accents and quotes keep their
meaning.

**Numbers** have one written form, so every evaluator (contains, the judge's lexical
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

**Footnote marks** glued to the words of an answer by search-backed chat models are taken apart
(apart from :func:`fold`). Answers from chat models that cite their sources often lose the space or
the brackets around a footnote when their markup is flattened: "published onMarch 6, 20181." is "published on March 6,
2018" with footnote 1. The strict rules rightly read "20181" as another number, so the judge also
weighs the answer with such marks separated (:func:`separate_citation_marks`), and says so.

Only two narrow forms are taken apart, both of which a person reads the same way:

- a small function word run into a capitalised word ("onMarch", "inParis"): the word boundary of
  the pair is restored;
- one or two digits run onto the year of a written date ("March 6, 20181", "6 March 20181"):
  they are dropped when a sentence mark, a closing bracket or the end of the text follows.

Bracketed and superscript footnotes ("[1]", "¹") need nothing here: folding and the word
boundaries of the strict rules already see past them.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Iterable
from itertools import compress, count
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = ["IGNORABLE_CLASS", "NUMBER_WORK", "fold", "fold_many", "number_marks", "separate_citation_marks"]


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


_GLUED_WORD = re.compile(r"\b(on|in|at|of|by|from|since|until|to|the|and|was|is|as)(?=[A-Z][a-z])")


_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)


_GLUED_YEAR = re.compile(
    rf"((?:{_MONTH} (?:[0-3]?[0-9](?:st|nd|rd|th)?,? )?|[0-3]?[0-9] {_MONTH},? )(?:1[0-9]{{3}}|20[0-9]{{2}}))"
    r"[1-9][0-9]?(?=[.,;:!?)\]]|\s|$)"
)


_LOWER_UPPER_LOWER = re.compile(r"[a-z][A-Z][a-z]")


_FIVE_DIGITS = re.compile(r"[0-9]{5}")


def separate_citation_marks(text: str) -> str:
    """``text`` with footnote marks glued to its words taken apart (the text itself when there are none).

    >>> separate_citation_marks("It was published onMarch 6, 20181.")
    'It was published on March 6, 2018.'
    >>> separate_citation_marks("Boston, 20181 residents")  # not a date: kept
    'Boston, 20181 residents'
    """
    # Each form needs what a simpler pattern finds faster: a capitalised word run into a small
    # one has a lower-case letter before its capital, and a year with a mark has five digits.
    if _LOWER_UPPER_LOWER.search(text) is not None:
        text = _GLUED_WORD.sub(r"\1 ", text)
    if _FIVE_DIGITS.search(text) is not None:
        text = _GLUED_YEAR.sub(r"\1", text)
    return text


# Dashes that stand for a minus sign or a range hyphen between numbers. The em dash is left
# alone: it separates clauses ("Paris—France"), not numbers.
_DASHES = {
    0x2010: "-",  # hyphen
    0x2011: "-",  # non-breaking hyphen
    0x2012: "-",  # figure dash
    0x2013: "-",  # en dash
    0x2212: "-",  # minus sign
    0xFE63: "-",  # small hyphen-minus
    0xFF0D: "-",  # fullwidth hyphen-minus
}


# Separators of Arabic-script numbers: "١٢٬٤٠٠" is 12,400 and "١٢٫٥" is 12.5.
_SEPARATORS = {0x066B: ".", 0x066C: ","}


IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
"""Unicode's default-ignorable code points (zero-width spaces and joiners, soft hyphen, direction
marks, variation selectors, fillers, tags): invisible, so ``fold`` drops them."""


IGNORABLE_CLASS = "".join(f"{re.escape(chr(low))}-{re.escape(chr(high))}" for low, high in IGNORABLE_RANGES)
""":data:`IGNORABLE_RANGES` as the inside of a regular-expression character class."""


# Compatibility mappings that change how text is written, not what it says: fullwidth and
# halfwidth forms, ligatures and other <compat> forms, mathematical letters (<font>), circled
# forms, small and vertical punctuation, Arabic presentation forms. Left alone: superscripts,
# subscripts and vulgar fractions, which change what a number says (number_marks reads them),
# and squared unit and era symbols ("㏌", "㎏"), whose spelled-out forms are short words found
# inside other words ("㏌" would become "in", found in "information").
_SAFE_COMPAT = frozenset(
    {"<wide>", "<narrow>", "<compat>", "<font>", "<circle>", "<small>", "<vertical>",
     "<initial>", "<medial>", "<final>", "<isolated>"}
)  # fmt: skip


def _ignorable(code_point: int) -> bool:
    return any(low <= code_point <= high for low, high in IGNORABLE_RANGES)


class _NonAsciiTable(dict[int, "str | None"]):
    """``str.translate`` table filled on first sight of a code point.

    Building the table for every Unicode character up front costs a scan of 1.1 million code
    points at import time; a lazily filled table costs one ``unicodedata`` look-up per distinct
    character.
    """

    def __missing__(self, code_point: int) -> str | None:
        value = self._fold(code_point)
        self[code_point] = value
        return value

    def _fold(self, code_point: int) -> str | None:
        character = chr(code_point)
        if _ignorable(code_point):
            return None
        digit = unicodedata.decimal(character, None)
        if digit is not None:
            return chr(0x30 + digit)
        composed = unicodedata.normalize("NFC", character)
        if composed != character:  # a canonical equivalent ("῾" is "´"): fold that instead
            return "".join(part for part in map(self._inner, composed) if part is not None)
        tag = unicodedata.decomposition(character).partition(" ")[0]
        if tag not in _SAFE_COMPAT:
            return character
        # What the compatibility form stands for, folded as the rest of the text is ("Ⅻ" → "xii").
        mapped = unicodedata.normalize("NFKC", character).casefold()
        return "".join(part for part in map(self._inner, mapped) if part is not None)

    def _inner(self, character: str) -> str | None:
        # Each character of a mapping folded in turn ("︲" is an en dash, which becomes "-").
        return character if character.isascii() else self[ord(character)]


_TABLE = _NonAsciiTable({**_DASHES, **_SEPARATORS})


# A grouped number: a lead group of one to three digits, then groups of exactly three digits,
# all joined by the same single separator (a comma or a space; every white space character has
# become a space by then). The lead group must not continue a longer number or a decimal
# fraction, so "2012 345" and "0.5 100" are left as they are.
_GROUPED = re.compile(r"(?<![0-9.])[0-9]{1,3}([, ])[0-9]{3}(?:\1[0-9]{3})*(?![0-9])")


_SEPARATOR_BETWEEN_DIGITS = re.compile(r"[0-9][, ][0-9]")


_find_separator = _SEPARATOR_BETWEEN_DIGITS.search


_join_grouped = _GROUPED.sub


# Folded text that may hold a grouped number or a number not in its canonical form.
_NUMBER_WORK = re.compile(number_work(after_digit="[, ][0-9]"))


_find_number_work = _NUMBER_WORK.search


def _join_groups(match: re.Match[str]) -> str:
    return match.group(0).replace(match.group(1), "")


def fold(text: str) -> str:
    """Return ``text`` in the package's normal form for comparing answers.

    The steps, in order: ``casefold``; for non-ASCII text, decimal digits of any script to ASCII,
    minus-like dashes (U+2212, en dash, hyphen variants) to ``-``, Arabic decimal and thousands
    separators to ``.`` and ``,``, default-ignorable characters (zero-width space, soft hyphen,
    BOM, direction marks, variation selectors) removed, compatibility forms a reader would not
    tell apart mapped (fullwidth "ＰＡＲＩＳ" is "paris", "ﬁ" is "fi"), the dot a casefolded
    Turkish "İ" leaves removed ("İstanbul" is "istanbul"), superscripts, subscripts and vulgar
    fractions read (:func:`answer_eval.text.folding.number_marks`), then NFC composition; every
    run of white space (tabs, newlines, no-break, thin, narrow no-break and figure spaces
    included) to one space, trimmed at both ends; thousands separators (a comma or a space)
    dropped inside a grouped number; every number written in one form (trailing decimal zeros,
    scientific notation, powers and fractions: see :mod:`answer_eval.text.folding`).

    A separator is a thousands separator only between a lead group of one to three digits and
    groups of exactly three digits, the last not followed by another digit: "12,400" folds to
    "12400" while "12,5", "1,2" and "2012 345" stay as they are.

    ``fold`` is idempotent: ``fold(fold(x)) == fold(x)``.

    >>> fold("Sheffield produced 12,400\u00a0units.")
    'sheffield produced 12400 units.'
    >>> fold("\u2212\u0664\u0665")  # Unicode minus, Arabic-Indic digits
    '-45'
    >>> fold("１２，４００ ＵＮＩＴＳ at 12.50 each, 1.5e3 in all")
    '12400 units at 12.5 each, 1500 in all'
    """
    folded = text.casefold()
    if not folded.isascii():
        folded = _fold_non_ascii(folded)
    folded = " ".join(folded.split())
    if _find_number_work(folded) is not None:
        folded = _numbers(folded)
    return folded


# Every character _TABLE changes but the compatibility forms (which ``unicodedata.is_normalized``
# finds): the dashes, the separators, the ignorable characters and the decimal digits other than
# 0-9 (``\d`` of a str pattern is Unicode category Nd, the characters ``unicodedata.decimal``
# gives a value for), and the number marks. All of them are non-ASCII: the pattern starts with
# the one range of non-ASCII characters, so ``re`` skips the ASCII ones in C and checks the set
# (seventeen ranges and a category, slow to try at every character) only where one stands.
_CHANGED_BY_TABLE = re.compile(
    "[\u0080-\U0010ffff](?<=["
    + "".join(re.escape(chr(code)) for code in sorted({**_DASHES, **_SEPARATORS}))
    + IGNORABLE_CLASS
    + re.escape(NUMBER_MARKS)
    + "\u0307\\d])"
)


_find_changed = _CHANGED_BY_TABLE.search


def _fold_non_ascii(casefolded: str) -> str:
    # translate looks every character up in a Python mapping (slow on long texts); most non-ASCII
    # text (accents, curly quotes) holds nothing the table changes, which one search and one
    # normalisation check tell. The no-break space is not NFKC-normal, yet the table keeps it (a
    # white space, collapsed next): left out of the check, as the one such character LLM answers
    # hold often (translating them all took a third of the time of long answers).
    if _find_changed(casefolded) is not None or not unicodedata.is_normalized(
        "NFKC", casefolded.replace("\u00a0", " ") if "\u00a0" in casefolded else casefolded
    ):
        casefolded = number_marks(casefolded.translate(_TABLE))
        if "\u0307" in casefolded:  # casefold("İ") is "i" and a combining dot above
            casefolded = casefolded.replace("i\u0307", "i")
    return unicodedata.normalize("NFC", casefolded)


def _numbers(spaced: str) -> str:
    # A number written out ("12 1e2" -> "12 100") can form a grouped or mixed number with the one
    # before it; the steps run again until nothing changes (twice at most in practice), so that
    # fold stays idempotent.
    for _ in range(8):
        before = spaced
        if _find_separator(spaced) is not None:
            spaced = _join_grouped(_join_groups, spaced)
        spaced = canonical_numbers(spaced)  # returns at once when there is nothing to write out
        if spaced == before or _find_number_work(spaced) is None:
            break
    return spaced


def fold_many(texts: Iterable[str]) -> list[str]:
    r"""``[fold(text) for text in texts]``, faster for many texts.

    The same steps as :func:`fold`, taken column by column: each is one C-level pass over all the
    texts (``map`` with string methods) instead of a Python call per text, and the rarer steps
    (non-ASCII text, grouped numbers) run only on the texts that need them. ``texts`` must hold
    ``str`` objects only.

    >>> fold_many(["Sheffield produced 12,400 units.", "  Paris\tFrance ", "\u2212\u0664\u0665"])
    ['sheffield produced 12400 units.', 'paris france', '-45']
    """
    texts = texts if type(texts) is list else list(texts)
    # Casefold and collapse white space in one chained pass, each casefolded text freed as soon as
    # it is split: keeping them all for a second pass costs two more visits to every text's
    # memory (see docs/performance.md, "Batch-size scaling"). The casefold of an ASCII text is
    # ASCII, so only non-ASCII texts need the non-ASCII step; they go through the chain as ""
    # (``text * False``) and are folded on their own.
    is_ascii = list(map(str.isascii, texts))
    ascii_texts = texts if all(is_ascii) else map(operator.mul, texts, is_ascii)
    folded = list(map(" ".join, map(str.split, map(str.casefold, ascii_texts))))
    for position in compress(count(), map(operator.not_, is_ascii)):
        folded[position] = " ".join(_fold_non_ascii(texts[position].casefold()).split())
    for position in compress(count(), map(_find_number_work, folded)):
        folded[position] = _numbers(folded[position])
    return folded
