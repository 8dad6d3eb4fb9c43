"""Content tokens: the words of an answer or a gold answer as the lenient stage compares them, and its word rule.

Folded (:func:`answer_eval.fold`, which also writes every number in one form), mojibake and
leftover JSON escapes repaired, accents and punctuation dropped, articles and a few function
words removed, number words and ordinals read as digits ("six", "sixth" and "6th" are all ``6``),
numeric dates written with month names, month abbreviations expanded, plural and verb endings
stripped ("sharecroppers" and "sharecropping" meet). A fraction with no finite decimal form
("1\u20443") is one token.

Two content words match when they are equal or, beside a word both texts share (``anchored``),
when one is an initial of the other ("b" and "bhimrao") or a short form of at least three
letters that the other starts with ("will" and "william"); numbers match only when equal. Asking
that of every pair of words costs the product of the two lengths (an answer and a gold of 16,000
words: 256 million comparisons); :class:`WordIndex` answers it for one word against all the
words of a text from a set, a sorted list and the first letters, at a cost that follows the
length of the word asked about (and a logarithm): linear in the texts' length.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from itertools import compress, count

from answer_eval.text.folding import fold

__all__ = [
    "MONTH_NAMES",
    "WordIndex",
    "content_tokens",
    "is_number",
    "plain_ranges",
    "plain_text",
    "plain_tokens",
    "ranges",
    "words_match",
]


_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "for",
        "to",
        "and",
        "or",
        "by",
        "with",
        "from",
        "is",
        "was",
        "are",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "as",
        "that",
        "this",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "how",
        "why",
        "did",
        "does",
        "do",
        "has",
        "have",
        "had",
        "there",
        "their",
        "his",
        "her",
        "he",
        "she",
        "they",
        "them",
        "s",
        "approximately",
        "about",
        "around",
        "roughly",
        "some",
        "nearly",
        "almost",
        "circa",
        "ca",
    ]
)


_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip


_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}


_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
    "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
    "twentieth": 20, "thirtieth": 30, "fortieth": 40, "fiftieth": 50, "sixtieth": 60, "seventieth": 70,
    "eightieth": 80, "ninetieth": 90, "hundredth": 100,
}  # fmt: skip


_SCALES = {"hundred": 100, "thousand": 1000}


_MONTHS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june", "jul": "july",
    "aug": "august", "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december",
}  # fmt: skip


# UTF-8 read as Latin-1 ("Â\xa0" for a no-break space, "â€“" for an en dash) is common in QA data.
_MOJIBAKE = (
    ("\u00e2\u20ac\u201c", "-"),
    ("\u00e2\u20ac\u201d", "-"),
    ("\u00e2\u20ac\u2122", "'"),
    ("\u00c2\u00a0", " "),
)


_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:\u2044[0-9]+)?(?:st|nd|rd|th)?|[^\W\d_]+")


# The same on ASCII text, where a letter is [a-zA-Z]: a plain character set, read faster.
_ASCII_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:\u2044[0-9]+)?(?:st|nd|rd|th)?|[a-zA-Z]+")


_NUMBER_TOKEN = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:\u2044[0-9]+)?)(?:st|nd|rd|th)?")


_RANGE = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?) ?(?:-|to|and) ?([0-9]+(?:\.[0-9]+)?)(?![0-9])")


_SUFFIXES = ("ings", "ing", "ers", "er", "ies", "es", "ed", "s")


# Units written short or long, singular or plural, after a number are one token: "5 ft 6 in" =
# "5 feet 6 inches", "9 mins" = "9 minutes".
_UNIT_BASES = (
    "year", "month", "week", "day", "hour", "minute", "second", "decade", "mile", "metre", "meter",
    "yard", "degree", "dollar", "acre", "ounce", "pound", "gram", "kilogram", "kilometre", "kilometer",
    "centimetre", "centimeter", "millimetre", "millimeter", "litre", "liter", "inch", "foot", "time",
    "percent", "century",
)  # fmt: skip


_UNIT_WORDS = {
    **{base: base for base in _UNIT_BASES},
    **{base + "s": base for base in _UNIT_BASES},
    "inches": "inch", "feet": "foot", "ft": "foot", "mi": "mile", "km": "kilometre", "kms": "kilometre",
    "kilometer": "kilometre", "kilometers": "kilometre", "kg": "kilogram", "kgs": "kilogram", "lb": "pound",
    "lbs": "pound", "oz": "ounce", "yd": "yard", "yds": "yard", "cm": "centimetre", "centimeter": "centimetre",
    "centimeters": "centimetre", "mm": "millimetre", "millimeter": "millimetre", "millimeters": "millimetre",
    "meter": "metre", "meters": "metre", "liter": "litre", "liters": "litre", "yr": "year", "yrs": "year",
    "hr": "hour", "hrs": "hour", "min": "minute", "mins": "minute", "sec": "second", "secs": "second",
    "centuries": "century", "mph": "mile per hour",
}  # fmt: skip


UNIT_TOKENS = frozenset(_UNIT_WORDS.values()) | {"per"}
"""Content tokens that only name the unit of a number (a bare number may drop them)."""


MONTH_NAMES = frozenset(_MONTHS.values()) | {"may"}
"""Month names as content tokens (never stemmed)."""


_MONTH_BY_NUMBER = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]


_DATE_MARK = re.compile(r"[0-9][-/.][0-9]")


_ISO_DATE = re.compile(r"\b([12][0-9]{3})-([01]?[0-9])-([0-3]?[0-9])\b")


_SLASH_DATE = re.compile(r"\b([0-3]?[0-9])[/.]([0-3]?[0-9])[/.]([12][0-9]{3})\b")


_ASKS_WHEN = re.compile(r"^(?:when|since when|until when)\b|\b(?:what|which) (?:year|date|day|month)\b")


_ESCAPED = re.compile(r"\\u([0-9a-fA-F]{4})")


def _repair(text: str) -> str:
    """The text repaired, or ``text`` itself (the same object) when there is nothing to repair."""
    if not text.isascii():  # every mojibake sequence holds a non-ASCII character
        for broken, fixed in _MOJIBAKE:
            if broken in text:
                text = text.replace(broken, fixed)
    if "\\u" in text:  # JSON escapes left in the text: "Bachman\\u2013Turner"
        text = _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)
    return text


def _date_words(year: str, month: str, day: str) -> str | None:
    m, d = int(month), int(day)
    if not (1 <= m <= 12 and 1 <= d <= 31):
        return None
    return f"{_MONTH_BY_NUMBER[m - 1]} {d} {year}"


def _iso_date(match: re.Match[str]) -> str:
    return _date_words(match.group(1), match.group(2), match.group(3)) or match.group(0)


def _slash_date(match: re.Match[str]) -> str:
    first, second, year = match.group(1), match.group(2), match.group(3)
    # Month first, as in US usage, unless the first number cannot be a month ("14/12/1972").
    if int(first) > 12:
        first, second = second, first
    return _date_words(year, first, second) or match.group(0)


def plain_text(text: str, folded: str | None = None) -> str:
    """Folded, mojibake repaired, accents stripped, numeric dates written with month names.

    :param folded: ``fold(text)`` when the caller has it: used when repairing changes nothing.
    """
    repaired = _repair(text)
    folded = folded if folded is not None and repaired is text else fold(repaired)
    if _DATE_MARK.search(folded) is not None:  # both date forms hold one: most texts hold none
        folded = _SLASH_DATE.sub(_slash_date, _ISO_DATE.sub(_iso_date, folded))
    if folded.isascii():
        return folded
    return "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))


def _stem(word: str) -> str:
    # A light suffix stripper: enough for plurals and -ing/-er forms, never shortening below 4 letters.
    if word in MONTH_NAMES:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) >= 5 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "sharecropp" -> "sharecrop"
    return word


def _canonical_number(literal: str) -> str:
    if "\u2044" in literal:  # a fraction, already in lowest terms (fold wrote it)
        return literal
    try:
        value = Decimal(literal)
    except InvalidOperation:  # pragma: no cover - the token pattern admits only numbers
        return literal
    return format(value.normalize(), "f")


def _inch(word: str, tokens: list[str], last: bool) -> bool:
    # "in" after a number is a preposition ("in 1990 in Paris") except in a height ("5 ft 6 in")
    # or at the end of the text ("9 in").
    return word == "in" and (last or (len(tokens) >= 3 and tokens[-2] == "foot" and tokens[-3][:1].isdigit()))


# Words read with their neighbours (number words, ordinals, units after a number): by
# ``_tokens_in_context``. Every other word's token depends on the word alone, and is remembered.
_CONTEXTUAL = frozenset(_ORDINALS) | frozenset(_UNITS) | frozenset(_TENS) | frozenset(_UNIT_WORDS) | {"in"}


_DIGITS = frozenset("0123456789")


@lru_cache(maxsize=16_384)
def _free_token(word: str) -> str | None:
    """A word outside :data:`_CONTEXTUAL` as a token: a number in one form, ``None`` for a function word, or a stem."""
    if word[0] in _DIGITS:  # the token pattern's number form, which is _NUMBER_TOKEN's
        number = _NUMBER_TOKEN.fullmatch(word)
        assert number is not None
        return _canonical_number(number.group(1))
    if word in _STOP:
        return None
    return _stem(_MONTHS.get(word, word))


def content_tokens(text: str, folded: str | None = None) -> list[str]:
    """The content tokens of ``text``, in order (see the module docstring for the steps).

    :param folded: ``fold(text)`` when the caller has it (it is not computed again).

    >>> content_tokens("The sixth of December, 1972")
    ['6', 'december', '1972']
    >>> content_tokens("Sharecroppers and 42.50 dollars")
    ['sharecrop', '42.5', 'dollar']
    """
    return plain_tokens(plain_text(text, folded))


def plain_tokens(plain: str) -> list[str]:
    """The content tokens of a text already made :func:`plain_text`."""
    raw = (_ASCII_TOKEN if plain.isascii() else _TOKEN).findall(plain)
    if _CONTEXTUAL.isdisjoint(raw):
        return list(filter(None, map(_free_token, raw)))  # no token is empty: None alone is dropped
    return _tokens_in_context(raw)


def _tokens_in_context(raw: list[str]) -> list[str]:
    """The tokens of words some of which are read with their neighbours (between them, looked up at once)."""
    tokens: list[str] = []
    index = 0
    for position in compress(count(), map(_CONTEXTUAL.__contains__, raw)):
        if position < index:
            continue  # read already, as part of a number in words
        tokens.extend(filter(None, map(_free_token, raw[index:position])))
        index = _read_in_context(raw, position, tokens)
    tokens.extend(filter(None, map(_free_token, raw[index:])))
    return tokens


def _read_in_context(raw: list[str], index: int, tokens: list[str]) -> int:
    """Read the word at ``index`` (one of :data:`_CONTEXTUAL`) onto ``tokens``; the index of the next unread word."""
    word = raw[index]
    index += 1
    if word in _ORDINALS:
        tokens.append(str(_ORDINALS[word]))
        return index
    if word in _UNITS or word in _TENS:
        value = _TENS.get(word, _UNITS.get(word, 0))
        if word in _TENS and index < len(raw) and raw[index] in _UNITS:
            value += _UNITS[raw[index]]
            index += 1
        if index < len(raw) and raw[index] in _SCALES:
            value *= _SCALES[raw[index]]
            index += 1
        tokens.append(str(value))
        return index
    if tokens and tokens[-1][:1].isdigit() and (word in _UNIT_WORDS or _inch(word, tokens, index >= len(raw))):
        tokens.extend(_UNIT_WORDS.get(word, "inch").split())
        return index
    if (token := _free_token(word)) is not None:
        tokens.append(token)
    return index


def ranges(text: str) -> list[tuple[Decimal, Decimal]]:
    """Ranges of quantities in ``text`` ("10-12 years").

    Spans of years ("2011-2014") are not ranges of one value: one year of them does not give the span.
    """
    return plain_ranges(plain_text(text))


def plain_ranges(plain: str) -> list[tuple[Decimal, Decimal]]:
    """:func:`ranges` of a text already made :func:`plain_text`."""
    spans = []
    for match in _RANGE.finditer(plain):
        low, high = Decimal(match.group(1)), Decimal(match.group(2))
        if low < high and not (1000 <= low <= 2999 and 1000 <= high <= 2999):
            spans.append((low, high))
    return spans


_SMALL = 64  # letters: a text this short (a gold) keeps the prefixes of its words in a set


def is_number(token: str) -> bool:
    """Whether a content token is a number (it starts with a digit)."""
    return token[:1].isdigit()


def words_match(answer_word: str, gold_word: str, anchored: bool) -> bool:
    """The rule for one pair of words (the reference :class:`WordIndex` is tested against)."""
    if answer_word == gold_word:
        return True
    if not anchored or is_number(answer_word) or is_number(gold_word):
        return False  # numbers match whole and exactly
    # Beside a word both sides share (a surname), an initial or a short form stands for a name:
    # "b r ambedkar" = "bhimrao ramji ambedkar", "will friedle" = "william alan friedle".
    short, long = sorted((answer_word, gold_word), key=len)
    if len(short) == 1:
        return long[0] == short
    return len(short) >= 3 and long.startswith(short)


def _common_prefix(first: str, second: str) -> int:
    """The length of the longest common prefix, by halving (each step one C-level comparison)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class WordIndex:
    """The words of one text, indexed so that :meth:`matches` follows :func:`words_match` for every word at once.

    :param words: The text's content tokens.
    """

    __slots__ = (
        "_built",
        "_first_letters",
        "_initials",
        "_long_names",
        "_name_sizes",
        "_prefixes",
        "_shortest_prefix",
        "_sorted",
        "_starts",
        "words",
    )
    _sorted: list[str]
    _initials: frozenset[str]
    _first_letters: frozenset[str]
    _shortest_prefix: list[int]
    _prefixes: frozenset[str] | None  # for a short text: the prefixes of its words
    _long_names: frozenset[str]
    _name_sizes: list[int]
    _starts: frozenset[str]  # the letters some name starts with: a word starting otherwise matches nothing new

    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(words)
        # The sorted names and their prefixes are built on the first question the set cannot
        # answer (most words asked about are in the set, or are not asked beside a shared word).
        self._built = False

    def _build(self) -> None:
        names = sorted(word for word in self.words if word and not word[:1].isdigit())
        self._sorted = names
        self._initials = frozenset(word for word in names if len(word) == 1)
        self._first_letters = frozenset(word[0] for word in names if len(word) > 1)
        self._starts = self._first_letters | self._initials
        self._prefixes = None
        if sum(map(len, names)) <= _SMALL:
            # A short text (a gold answer): its words' prefixes in a set answer at once; their
            # number follows the text's length in letters, which is bounded here.
            self._prefixes = frozenset(word[:size] for word in names for size in range(3, len(word)))
            self._long_names = frozenset(word for word in names if len(word) >= 3)
            self._name_sizes = sorted({len(word) for word in self._long_names})
        else:
            self._shortest_prefix = self._prefix_chains(names)
        self._built = True

    @staticmethod
    def _prefix_chains(names: list[str]) -> list[int]:
        """For each sorted word, the length of its shortest prefix of three or more letters in the list (0: none).

        The words that are prefixes of a word come before it in sorted order and form a chain,
        kept on a stack, so the whole list is read once.
        """
        shortest = [0] * len(names)
        stack: list[int] = []
        for position, word in enumerate(names):
            while stack and not word.startswith(names[stack[-1]]):
                stack.pop()
            below = shortest[stack[-1]] if stack else 0
            shortest[position] = below or (len(word) if len(word) >= 3 else 0)
            stack.append(position)
        return shortest

    def matches(self, word: str, anchored: bool) -> bool:
        """Whether ``word`` matches some word of the text under :func:`words_match`."""
        if word in self.words:
            return True
        if not anchored or not word or is_number(word):
            return False
        if not self._built:
            self._build()
        if len(word) == 1:
            return word in self._first_letters
        if word[0] in self._initials:
            return True
        if self._prefixes is not None:
            if word in self._prefixes:  # a proper prefix of a word of the text: a longer word starts with it
                return True
            size = len(word)
            return any(word[:prefix] in self._long_names for prefix in self._name_sizes if prefix < size)
        return (len(word) >= 3 and self._longer_starts_with(word)) or self._shorter_is_prefix(word)

    def matching(self, words: set[str]) -> set[str]:
        """The words of ``words`` that match some word of the text beside a shared word (``anchored``).

        The same answers as :meth:`matches` word by word, with the words whose first letter starts
        no name of the text (most of an answer's missing words) set aside at once.
        """
        found = words & self.words
        rest = words - found
        if not rest:
            return found
        if not self._built:
            self._build()
        starts = self._starts
        found.update(word for word in rest if word[:1] in starts and self.matches(word, True))
        return found

    def _longer_starts_with(self, word: str) -> bool:
        """Some word of the text is longer and starts with ``word`` (``word`` has three letters or more)."""
        position = bisect_right(self._sorted, word)
        return position < len(self._sorted) and self._sorted[position].startswith(word)

    def _shorter_is_prefix(self, word: str) -> bool:
        """Some word of three letters or more of the text is a proper prefix of ``word``.

        Any such prefix is also a prefix of the largest word not after ``word`` (it lies between
        them in sorted order), of length at most their common prefix: that word's shortest prefix
        in the text answers the question.
        """
        position = bisect_right(self._sorted, word) - 1
        if position < 0:
            return False
        shortest = self._shortest_prefix[position]
        common = _common_prefix(self._sorted[position], word)
        return 0 < shortest <= min(common, len(word) - 1)
