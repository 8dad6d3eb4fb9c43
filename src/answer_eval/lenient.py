"""Lenient lexical evidence: what people accept that the strict contains rules miss.

Answers and gold answers are turned into *content tokens*: folded (:func:`answer_eval.fold`),
accents and punctuation dropped, articles and a few function words removed, number words and
ordinals read as digits ("six", "sixth" and "6th" are all ``6``), month abbreviations expanded,
plural and verb endings stripped ("sharecroppers" and "sharecropping" meet). Comparing token sets
ignores word order, so "14 December 1972" and "December 14, 1972" are the same tokens.

Number tokens are compared whole and exactly, never by prefix or edit distance: "2,579" and "579"
share digits but are different numbers, and "2.4" is not "2.45". A person is not matched on a
shared surname alone: "Dolly Mapp" is not "Dollree Mapp", while "Nixon" is a less specific form of
"Richard Nixon" (every word of the answer is in the gold) and "B. R. Ambedkar" matches "Bhimrao
Ramji Ambedkar" (initials).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from answer_eval.folding import fold

__all__ = ["LexicalEvidence", "content_tokens", "lexical_evidence"]

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
_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:st|nd|rd|th)?|[^\W\d_]+")
_NUMBER_TOKEN = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:st|nd|rd|th)?")
_RANGE = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?) ?(?:-|to|and) ?([0-9]+(?:\.[0-9]+)?)(?![0-9])")
_SUFFIXES = ("ings", "ing", "ers", "er", "ies", "es", "ed", "s")
_MONTH_NAMES = frozenset(_MONTHS.values()) | {"may"}


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
_ISO_DATE = re.compile(r"\b([12][0-9]{3})-([01]?[0-9])-([0-3]?[0-9])\b")
_SLASH_DATE = re.compile(r"\b([0-3]?[0-9])[/.]([0-3]?[0-9])[/.]([12][0-9]{3})\b")
_ASKS_WHEN = re.compile(r"^(?:when|since when|until when)\b|\b(?:what|which) (?:year|date|day|month)\b")
_ESCAPED = re.compile(r"\\u([0-9a-fA-F]{4})")


def _repair(text: str) -> str:
    for broken, fixed in _MOJIBAKE:
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


def _plain(text: str) -> str:
    """Folded, mojibake repaired, accents stripped, numeric dates written with month names."""
    folded = fold(_repair(text))
    if "-" in folded or "/" in folded or "." in folded:
        folded = _SLASH_DATE.sub(_slash_date, _ISO_DATE.sub(_iso_date, folded))
    if folded.isascii():
        return folded
    return "".join(c for c in unicodedata.normalize("NFD", folded) if not unicodedata.combining(c))


def _stem(word: str) -> str:
    # A light suffix stripper: enough for plurals and -ing/-er forms, never shortening below 4 letters.
    if word in _MONTH_NAMES:
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if len(word) >= 5 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # "sharecropp" -> "sharecrop"
    return word


def _canonical_number(literal: str) -> str:
    try:
        value = Decimal(literal)
    except InvalidOperation:  # pragma: no cover - the token pattern admits only numbers
        return literal
    return format(value.normalize(), "f")


def content_tokens(text: str) -> list[str]:
    """The content tokens of ``text``, in order (see the module docstring for the steps).

    >>> content_tokens("The sixth of December, 1972")
    ['6', 'december', '1972']
    >>> content_tokens("Sharecroppers and 42.50 dollars")
    ['sharecrop', '42.5', 'dollar']
    """
    raw = _TOKEN.findall(_plain(text))
    tokens: list[str] = []
    index = 0
    while index < len(raw):
        word = raw[index]
        index += 1
        number = _NUMBER_TOKEN.fullmatch(word)
        if number:
            tokens.append(_canonical_number(number.group(1)))
            continue
        if word in _ORDINALS:
            tokens.append(str(_ORDINALS[word]))
            continue
        if word in _UNITS or word in _TENS:
            value = _TENS.get(word, _UNITS.get(word, 0))
            if word in _TENS and index < len(raw) and raw[index] in _UNITS:
                value += _UNITS[raw[index]]
                index += 1
            if index < len(raw) and raw[index] in _SCALES:
                value *= _SCALES[raw[index]]
                index += 1
            tokens.append(str(value))
            continue
        if word in _STOP:
            continue
        tokens.append(_stem(_MONTHS.get(word, word)))
    return tokens


def _is_number(token: str) -> bool:
    return token[:1].isdigit()


def _words_match(answer_word: str, gold_word: str, anchored: bool) -> bool:
    if answer_word == gold_word:
        return True
    if not anchored or _is_number(answer_word) or _is_number(gold_word):
        return False  # numbers match whole and exactly
    # Beside a word both sides share (a surname), an initial or a short form stands for a name:
    # "b r ambedkar" = "bhimrao ramji ambedkar", "will friedle" = "william alan friedle".
    short, long = sorted((answer_word, gold_word), key=len)
    if len(short) == 1:
        return long[0] == short
    return len(short) >= 3 and long.startswith(short)


def _ranges(text: str) -> list[tuple[Decimal, Decimal]]:
    """Ranges of quantities in ``text`` ("10-12 years").

    Spans of years ("2011-2014") are not ranges of one value: one year of them does not give the span.
    """
    spans = []
    for match in _RANGE.finditer(_plain(text)):
        low, high = Decimal(match.group(1)), Decimal(match.group(2))
        if low < high and not (1000 <= low <= 2999 and 1000 <= high <= 2999):
            spans.append((low, high))
    return spans


def _joined_match(answer_tokens: list[str], gold_tokens: list[str]) -> bool:
    """The gold's words written together or apart match the answer's ("abidali" = "abid ali"), at word edges."""
    gold = "".join(gold_tokens)
    if len(gold) < 6 or _is_number(gold_tokens[0]) or _is_number(gold_tokens[-1]):
        return False
    edges = {0}
    joined = ""
    for token in answer_tokens:
        joined += token
        edges.add(len(joined))
    start = joined.find(gold)
    while start >= 0:
        if start in edges and start + len(gold) in edges:
            return True
        start = joined.find(gold, start + 1)
    return False


@dataclass(frozen=True)
class LexicalEvidence:
    """Lexical signals between one answer and its best-matching gold answer.

    :param gold: The gold answer the signals refer to.
    :param recall: Share of the gold's content words found in the answer.
    :param precision: Share of the answer's new content words (those not in the question) found in
        the gold.
    :param answer_words: The answer's new content words.
    :param gold_words: The gold's content words.
    :param number_conflict: The gold holds numbers and the answer's numbers miss every one of them.
    :param numbers_missing: The gold holds numbers and the answer holds none of them.
    :param in_range: A number of the answer lies inside a range the gold gives ("11 years" in "10-12 years").
    :param joined: The gold's words run together appear in the answer's ("abidali" = "abid ali").
    :param restates_question: The answer has no content word that is not in the question.
    :param word_anchor: The answer shares a word (not a number) with the gold, beyond the question.
    :param year_of_date: The gold is a date (it names a month) and the answer's only number is its year.
    :param numbers_kept: Every number of the gold is in the answer.
    :param asks_when: The question asks for a time ("when ...", "what year ...").
    """

    gold: str
    recall: float
    precision: float
    answer_words: tuple[str, ...]
    gold_words: tuple[str, ...]
    number_conflict: bool
    numbers_missing: bool
    in_range: bool
    joined: bool
    restates_question: bool
    word_anchor: bool
    year_of_date: bool
    numbers_kept: bool
    asks_when: bool = False

    @property
    def less_specific(self) -> bool:
        """Every new word of the answer is in the gold: "Nixon" for "Richard Nixon", "1942" for "June 22, 1942".

        The answer may drop words but not numbers ("Numbers 22" is not "Numbers 22:28"), except
        the day and month of a gold date; a bare number counts only as such a year ("2" is not
        "2 terms"). To a question that asks when, a sentence whose only number is the year of the
        gold date gives that year ("It became law in 1942." for "June 22, 1942").
        """
        if self.number_conflict:
            return False
        if self.year_of_date and (self.precision == 1.0 or self.asks_when):
            return True
        return self.precision == 1.0 and self.word_anchor and self.numbers_kept

    @property
    def more_specific(self) -> bool:
        """Every content word of the gold is in the answer ("Evgenia Armanovna Medvedeva")."""
        return self.recall == 1.0 and not self.number_conflict


def _share(words: list[str], others: list[str], anchored: bool) -> float:
    if not words:
        return 0.0
    return sum(any(_words_match(word, other, anchored) for other in others) for word in words) / len(words)


def _evidence_for(answer_tokens: list[str], gold: str, question_tokens: set[str], asks_when: bool) -> LexicalEvidence:
    gold_tokens = content_tokens(gold)
    answer_new = [w for w in answer_tokens if w not in question_tokens]
    # Initials and short forms count only beside an exact shared word, never on their own.
    anchored = any(len(w) > 1 and not _is_number(w) and w in gold_tokens for w in answer_new)
    recall = _share(gold_tokens, answer_tokens, anchored)
    precision = _share(answer_new, gold_tokens, anchored)
    gold_numbers = {w for w in gold_tokens if _is_number(w)}
    answer_numbers = {w for w in answer_tokens if _is_number(w)}
    in_range = any(low <= Decimal(number) <= high for low, high in _ranges(gold) for number in answer_numbers)
    numbers_missing = bool(gold_numbers) and not (gold_numbers & answer_numbers) and not in_range
    return LexicalEvidence(
        gold=gold,
        recall=recall,
        precision=precision,
        answer_words=tuple(answer_new),
        gold_words=tuple(gold_tokens),
        number_conflict=numbers_missing and bool(answer_numbers),
        numbers_missing=numbers_missing,
        in_range=in_range,
        joined=bool(gold_tokens) and _joined_match(answer_tokens, gold_tokens),
        restates_question=not answer_new,
        word_anchor=anchored,
        year_of_date=any(w in _MONTH_NAMES for w in gold_tokens)
        and len(answer_numbers) == 1
        and all(len(w) == 4 and w in gold_numbers for w in answer_numbers),
        numbers_kept=gold_numbers <= answer_numbers,
        asks_when=asks_when,
    )


def lexical_evidence(answer: str, golds: Sequence[str], question: str | None = None) -> LexicalEvidence:
    """The lexical signals between ``answer`` and the gold answer that supports it best.

    :param answer: The answer text.
    :param golds: The acceptable answers (at least one).
    :param question: The question, when known: words the answer merely repeats from it are not
        evidence ("New Mexico" restates "where are the organ mountains in new mexico").
    """
    if not golds:
        raise ValueError("golds must hold at least one answer")
    answer_tokens = content_tokens(answer)
    question_tokens = set(content_tokens(question)) if question else set()
    asks_when = bool(question) and _ASKS_WHEN.search(fold(question or "")) is not None
    candidates = [_evidence_for(answer_tokens, gold, question_tokens, asks_when) for gold in golds]
    return max(candidates, key=lambda e: (e.recall + e.precision, -e.number_conflict))
