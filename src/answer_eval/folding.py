"""Text folding: the one normal form that answers and labels are compared in.

``fold`` lower-cases with ``str.casefold``, collapses every run of Unicode white space to one
space, maps decimal digits of any script to ASCII, maps minus-like dashes to ``-`` and drops
thousands separators inside grouped numbers, so "1,204", "1 204", "1\u00a0204" and "1204" fold
alike. Everything else is left alone: punctuation, accents and quotes keep their meaning.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Iterable
from itertools import compress, count

__all__ = ["fold", "fold_many"]

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
# Invisible characters that would otherwise split a word or a number in two.
_INVISIBLE = {0x00AD: None, 0x200B: None, 0x200C: None, 0x200D: None, 0x2060: None, 0xFEFF: None}


class _NonAsciiTable(dict[int, "str | None"]):
    """``str.translate`` table filled on first sight of a code point.

    Building the table for every Unicode digit up front costs a scan of 1.1 million code points at
    import time; a lazily filled table costs one ``unicodedata`` look-up per distinct character.
    """

    def __missing__(self, code_point: int) -> str | None:
        digit = unicodedata.decimal(chr(code_point), None)
        value = chr(0x30 + digit) if digit is not None else chr(code_point)
        self[code_point] = value
        return value


_TABLE = _NonAsciiTable({**_DASHES, **_INVISIBLE})

# A grouped number: a lead group of one to three digits, then groups of exactly three digits,
# all joined by the same single separator (a comma or a space; every white space character has
# become a space by then). The lead group must not continue a longer number or a decimal
# fraction, so "2012 345" and "0.5 100" are left as they are.
_GROUPED = re.compile(r"(?<![0-9.])[0-9]{1,3}([, ])[0-9]{3}(?:\1[0-9]{3})*(?![0-9])")
_SEPARATOR_BETWEEN_DIGITS = re.compile(r"[0-9][, ][0-9]")
_find_separator = _SEPARATOR_BETWEEN_DIGITS.search
_join_grouped = _GROUPED.sub


def _join_groups(match: re.Match[str]) -> str:
    return match.group(0).replace(match.group(1), "")


def fold(text: str) -> str:
    """Return ``text`` in the package's normal form for comparing answers.

    The steps, in order: ``casefold``; for non-ASCII text, decimal digits of any script to ASCII,
    minus-like dashes (U+2212, en dash, hyphen variants) to ``-``, invisible characters
    (zero-width space, soft hyphen, BOM) removed, then NFC composition; every run of white space
    (tabs, newlines, no-break, thin, narrow no-break and figure spaces included) to one space,
    trimmed at both ends; thousands separators (a comma or a space) dropped inside a grouped
    number.

    A separator is a thousands separator only between a lead group of one to three digits and
    groups of exactly three digits, the last not followed by another digit: "12,400" folds to
    "12400" while "12,5", "1,2" and "2012 345" stay as they are.

    ``fold`` is idempotent: ``fold(fold(x)) == fold(x)``.

    >>> fold("Sheffield produced 12,400\u00a0units.")
    'sheffield produced 12400 units.'
    >>> fold("\u2212\u0664\u0665")  # Unicode minus, Arabic-Indic digits
    '-45'
    """
    folded = text.casefold()
    if not folded.isascii():
        folded = _fold_non_ascii(folded)
    folded = " ".join(folded.split())
    if _find_separator(folded) is not None:
        folded = _drop_separators(folded)
    return folded


# Every character _TABLE changes: the dashes, the invisible characters, and the decimal digits
# other than 0-9 (``\d`` of a str pattern is Unicode category Nd, the characters that
# ``unicodedata.decimal`` gives a value for).
_CHANGED_BY_TABLE = re.compile(
    "[" + "".join(re.escape(chr(code)) for code in sorted({**_DASHES, **_INVISIBLE})) + "]|(?![0-9])\\d"
)
_find_changed = _CHANGED_BY_TABLE.search


def _fold_non_ascii(casefolded: str) -> str:
    # translate looks every character up in a Python mapping (slow on long texts); most non-ASCII
    # text (accents, curly quotes) holds nothing the table changes, which one search tells.
    if _find_changed(casefolded) is not None:
        casefolded = casefolded.translate(_TABLE)
    return unicodedata.normalize("NFC", casefolded)


def _drop_separators(spaced: str) -> str:
    return _join_grouped(_join_groups, spaced)


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
    for position in compress(count(), map(_find_separator, folded)):
        folded[position] = _drop_separators(folded[position])
    return folded
