"""Text folding: the one normal form that answers and labels are compared in.

``fold`` lower-cases with ``str.casefold``, collapses every run of Unicode white space to one
space, maps decimal digits of any script to ASCII, maps minus-like dashes to ``-``, drops
invisible characters, applies the compatibility mappings a reader would not tell apart
(fullwidth letters, ligatures, mathematical letters), drops thousands separators inside grouped
numbers and writes every number in one form (:mod:`answer_eval.text.number_forms`), so "1,204",
"1 204", "1\u00a0204", "１２０４" and "1204" fold alike. Everything else is left alone:
punctuation, accents and quotes keep their meaning.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections.abc import Iterable
from itertools import compress, count

from answer_eval.text.number_forms import NUMBER_MARKS, canonical_numbers, number_marks, number_work

__all__ = ["IGNORABLE_CLASS", "IGNORABLE_RANGES", "fold", "fold_many"]

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
# subscripts and vulgar fractions, which change what a number says (number_forms reads them),
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
    fractions read (:func:`answer_eval.text.number_forms.number_marks`), then NFC composition; every
    run of white space (tabs, newlines, no-break, thin, narrow no-break and figure spaces
    included) to one space, trimmed at both ends; thousands separators (a comma or a space)
    dropped inside a grouped number; every number written in one form (trailing decimal zeros,
    scientific notation, powers and fractions: see :mod:`answer_eval.text.number_forms`).

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
