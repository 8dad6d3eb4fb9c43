"""Lenient lexical evidence: what people accept that the strict contains rules miss.

Answers and gold answers are turned into *content tokens* (:func:`answer_eval.text.lexical_tokens.content_tokens`):
folded, accents and punctuation dropped, function words removed, number words read as digits,
word endings stripped. Comparing token sets ignores word order, so "14 December 1972" and
"December 14, 1972" are the same tokens.

Number tokens are compared whole and exactly, never by prefix or edit distance: "2,579" and "579"
share digits but are different numbers, and "2.4" is not "2.45". A person is not matched on a
shared surname alone: "Dolly Mapp" is not "Dollree Mapp", while "Nixon" is a less specific form of
"Richard Nixon" (every word of the answer is in the gold) and "B. R. Ambedkar" matches "Bhimrao
Ramji Ambedkar" (initials). A name with other initials or another regnal or generational number
names someone else: "George H. W. Bush" is not "George W. Bush", "Elizabeth II" is not
"Elizabeth I". An answer that names the gold only to deny it ("Not Paris, but Lyon.") or only as
one of several candidates ("probably Saturn or Jupiter") is no evidence for it
(:mod:`answer_eval.text.denials`, :mod:`answer_eval.text.hedges`).

Every comparison takes time linear in the length of the answer and the golds (up to a
logarithm): words are matched through :class:`answer_eval.text.lexical_tokens.WordIndex`, and the gold's
words run together are searched for once.

What the lenient stage reads from an answer, a gold answer and a question is read once: the stage weighs
an answer against every gold of its question. The answer's tokens are read once per answer
(:func:`read_answer`); a gold's and a question's once per batch at most (answers to one question share
them: :func:`read_gold`, :func:`question_tokens` and :func:`asks_when` remember them). :func:`candidate`
then reads, for one gold, what choosing the best-supported gold needs (the shares of words found and the
numbers); the rest of the evidence is read for the chosen gold alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from itertools import filterfalse

from answer_eval.text.denials import Asked, only_denied
from answer_eval.text.denials import asked as read_question
from answer_eval.text.folding import fold
from answer_eval.text.hedges import AcceptableForms, only_hedged
from answer_eval.text.lexical_tokens import (
    MONTH_NAMES,
    UNIT_TOKENS,
    WordIndex,
    content_tokens,
    is_number,
    plain_ranges,
    plain_text,
    plain_tokens,
)
from answer_eval.text.matching import substring_starts

__all__ = [
    "Candidate",
    "LexicalEvidence",
    "asks_when",
    "candidate",
    "content_tokens",
    "lexical_evidence",
    "names_someone_else",
    "read_answer",
]


_ASKS_WHEN = re.compile(r"^(?:when|since when|until when)\b|\b(?:what|which) (?:year|date|day|month)\b")


@dataclass(frozen=True)
class AnswerReading:
    """The answer's tokens and what every gold is compared with, built once per answer.

    :param text: The answer folded.
    :param tokens: Its content tokens, in order.
    :param index: Its tokens indexed for the word rule.
    :param numbers: Its number tokens.
    :param new: Its tokens that are not in the question, in order.
    :param question: The question as the denial rules read it (:func:`answer_eval.text.denials.asked`).
    """

    text: str
    tokens: list[str]
    index: WordIndex
    numbers: frozenset[str]
    new: list[str]
    question: Asked | None = None


def read_answer(
    text: str, asked: frozenset[str], folded: str | None = None, question: Asked | None = None
) -> AnswerReading:
    """Read an answer once: ``asked`` are the question's tokens, ``folded`` is ``fold(text)`` when known."""
    folded = fold(text) if folded is None else folded
    tokens = content_tokens(text, folded)
    return AnswerReading(
        folded,
        tokens,
        WordIndex(tokens),
        frozenset(word for word in tokens if word[:1].isdigit()),
        list(filterfalse(asked.__contains__, tokens)),
        question,
    )


@dataclass(frozen=True)
class GoldReading:
    """A gold's tokens and what every answer is compared with, built once per gold (answers share golds)."""

    tokens: tuple[str, ...]
    words: frozenset[str]
    index: WordIndex
    numbers: frozenset[str]
    ranges: tuple[tuple[Decimal, Decimal], ...]
    folded: str


@lru_cache(maxsize=4096)
def read_gold(gold: str) -> GoldReading:
    """Read a gold once (remembered: the answers to one question share their golds)."""
    folded = fold(gold)
    plain = plain_text(gold, folded)
    tokens = plain_tokens(plain)
    return GoldReading(
        tuple(tokens),
        frozenset(tokens),
        WordIndex(tokens),
        frozenset(w for w in tokens if w[:1].isdigit()),
        tuple(plain_ranges(plain)),
        folded,
    )


@lru_cache(maxsize=1024)
def question_tokens(question: str) -> frozenset[str]:
    """The question's content tokens (remembered: the answers to one question are judged together)."""
    return frozenset(content_tokens(question))


@lru_cache(maxsize=1024)
def asks_when(question: str) -> bool:
    """Whether the question asks for a time ("when ...", "what year ...")."""
    return _ASKS_WHEN.search(fold(question)) is not None


def share(words: list[str], others: WordIndex, anchored: bool) -> float:
    """The share of ``words`` (each occurrence counted) that match a word of ``others`` under the word rule."""
    if not words:
        return 0.0
    exact = others.words
    missing = list(filterfalse(exact.__contains__, words))
    found = len(words) - len(missing)
    if missing and anchored:  # unanchored, only equal words match
        hits = others.matching(set(missing))
        found += sum(map(hits.__contains__, missing))
    return found / len(words)


@dataclass
class Candidate:
    """One gold's support for an answer: what choosing the best-supported gold weighs first.

    ``name_conflict``, ``denied`` and ``hedged`` are read when the choice needs them (``None`` until then).
    """

    gold: str
    read: GoldReading
    anchored: bool
    recall: float
    precision: float
    in_range: bool
    numbers_missing: bool
    number_conflict: bool
    name_conflict: bool | None = None
    denied: bool | None = None
    hedged: bool | None = None


def candidate(answer: AnswerReading, gold: str) -> Candidate:
    """The gold's shares of words found and its numbers against the answer."""
    read = read_gold(gold)
    # Initials and short forms count only beside an exact shared word, never on their own.
    anchored = any(len(w) > 1 and not w[:1].isdigit() for w in read.words.intersection(answer.new))
    if read.words.isdisjoint(answer.index.words):
        recall = precision = 0.0  # no shared word, so no anchor: only equal words would match
    else:
        recall = share(list(read.tokens), answer.index, anchored)
        precision = share(answer.new, read.index, anchored)
    answer_numbers = answer.numbers
    in_range = bool(answer_numbers) and any(
        low <= Decimal(number) <= high for low, high in read.ranges for number in answer_numbers
    )
    numbers_missing = bool(read.numbers) and not (read.numbers & answer_numbers) and not in_range
    return Candidate(
        gold,
        read,
        anchored,
        recall,
        precision,
        in_range,
        numbers_missing,
        numbers_missing and bool(answer_numbers),
    )


# Regnal and generational numbers after a name: another one names another person.
_ROMAN_UNITS = ("", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix")
_NAME_NUMBERS = frozenset(
    {"jr", "sr"} | {tens + unit for tens in ("", "x", "xx", "xxx") for unit in _ROMAN_UNITS} - {""}
)  # I to XXXIX: popes, kings and generations


def _joined_match(answer_tokens: list[str], gold_tokens: list[str]) -> bool:
    """The gold's words written together or apart match the answer's ("abidali" = "abid ali"), at word edges."""
    gold = "".join(gold_tokens)
    if len(gold) < 6 or is_number(gold_tokens[0]) or is_number(gold_tokens[-1]):
        return False
    edges = {0}
    length = 0
    for token in answer_tokens:
        length += len(token)
        edges.add(length)
    joined = "".join(answer_tokens)
    return any(start in edges and start + len(gold) in edges for start in substring_starts(joined, gold))


_MAY_NAME_A_PERSON = re.compile(r"\b[^\W\d_]\b|\b(?:jr|sr|[ivx]{2,})\b")


def names_someone_else(answer: str, gold: str) -> bool:
    """Whether ``answer`` names another person than ``gold``: other initials, or another regnal number.

    See :func:`_name_conflict`; a gold with no initial and no regnal or generational number is
    never in conflict (checked first, cheaply).

    >>> names_someone_else("George H. W. Bush", "George W. Bush"), names_someone_else("Elizabeth II", "Elizabeth I")
    (True, True)
    """
    if _MAY_NAME_A_PERSON.search(fold(gold)) is None:
        return False
    return _name_conflict(content_tokens(answer), content_tokens(gold))


def _name_conflict(answer_tokens: list[str], gold_tokens: list[str]) -> bool:
    """The answer names another person than the gold: other initials, or another regnal number.

    Initials: when the gold gives initials ("george w bush"), the answer's initials between the
    gold's first and last word must be the gold's ("george h w bush" adds one). Regnal and
    generational numbers right after the gold's last name word must agree when both give one
    ("elizabeth ii" for "elizabeth i", "sr" for "jr"). A conflict needs every mention of the
    gold's last name word to name someone else: "Henry II ... and Henry V" names Henry II.
    """
    if len(gold_tokens) < 2:
        return False
    first, last = gold_tokens[0], gold_tokens[-1]
    suffix = last if last in _NAME_NUMBERS else None
    name_last = gold_tokens[-2] if suffix is not None else last
    initials = {token for token in gold_tokens[:-1] if len(token) == 1 and not is_number(token)}
    conflict = False
    for position, token in enumerate(answer_tokens):
        if token != name_last:
            continue
        after = answer_tokens[position + 1] if position + 1 < len(answer_tokens) else None
        if (suffix is not None and after in _NAME_NUMBERS and after != suffix) or (
            initials and _extra_initials(answer_tokens, position, first, initials)
        ):
            conflict = True
        else:
            return False  # the gold's person is named too ("Henry II ... and Henry V")
    return conflict


def _extra_initials(answer_tokens: list[str], last_position: int, first: str, initials: set[str]) -> bool:
    """Initials the gold lacks between the gold's first word and its last word at ``last_position``."""
    for position in range(last_position - 1, -1, -1):
        token = answer_tokens[position]
        if token == first:
            return False
        if len(token) != 1 or is_number(token):
            return False  # not a run of initials after the first name: no claim about them
        if token not in initials:
            return True
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
    :param in_range: A number of the answer lies inside a range the gold gives ("11 years" in "10-12 years"),
        and the gold is not denied.
    :param joined: The gold's words run together appear in the answer's ("abidali" = "abid ali"), and
        the gold is not denied.
    :param restates_question: The answer has no content word that is not in the question.
    :param word_anchor: The answer shares a word (not a number) with the gold, beyond the question.
    :param year_of_date: The gold is a date (it names a month) and the answer's only number is its year.
    :param numbers_kept: Every number of the gold is in the answer.
    :param asks_when: The question asks for a time ("when ...", "what year ...").
    :param name_conflict: The answer names another person: other initials, or another regnal or
        generational number ("George H. W. Bush" for "George W. Bush").
    :param denied: The answer names the gold only to deny it ("Not Paris, but Lyon.").
    :param hedged: The answer names the gold only as one of several candidates ("probably Saturn or Jupiter").
    :param number_with_unit: The answer gives the gold's numbers alone and the gold's other words
        only name their unit ("Nine" for "Nine years", "5 feet 6 inches" for "5 ft 6 in").
    :param name_without_middle: The gold is a name of three or more words and the answer names its
        first and last word side by side ("... is Zachary Quinto." for "Zachary John Quinto").
    :param folded_answer: The answer's folded text (read once, for whoever weighs the evidence next).
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
    name_conflict: bool = False
    denied: bool = False
    number_with_unit: bool = False
    name_without_middle: bool = False
    folded_answer: str = ""
    hedged: bool = False

    @property
    def refuted(self) -> bool:
        """The answer names the gold only to deny it or only as one of several candidates: no support for it."""
        return self.denied or self.hedged

    @property
    def less_specific(self) -> bool:
        """Every new word of the answer is in the gold: "Nixon" for "Richard Nixon", "1942" for "June 22, 1942".

        The answer may drop words but not numbers ("Numbers 22" is not "Numbers 22:28"), except
        the day and month of a gold date; a bare number counts only as such a year ("2" is not
        "2 terms"). To a question that asks when, a sentence whose only number is the year of the
        gold date gives that year ("It became law in 1942." for "June 22, 1942").
        """
        if self.number_conflict or self.name_conflict or self.refuted:
            return False
        if self.year_of_date and (self.precision == 1.0 or self.asks_when):
            return True
        if self.number_with_unit:
            return True
        return self.precision == 1.0 and self.word_anchor and self.numbers_kept

    @property
    def more_specific(self) -> bool:
        """Every content word of the gold is in the answer ("Evgenia Armanovna Medvedeva")."""
        return self.recall == 1.0 and not (self.number_conflict or self.name_conflict or self.refuted)

    @property
    def accepts(self) -> bool:
        """Whether this evidence makes the answer right (the lexical stage's rule), the question aside.

        More or less specific, inside the gold's range, or the gold's words written together; a
        denied or hedged gold supports nothing.
        """
        if self.refuted:
            return False
        return self.more_specific or self.less_specific or self.in_range or self.joined or self.without_middle

    @property
    def without_middle(self) -> bool:
        """The answer names the gold person without the middle name, and no one else."""
        return self.name_without_middle and not (self.name_conflict or self.refuted or self.number_conflict)


def _name_without_middle(answer: AnswerReading, gold: str, gold_tokens: list[str], golds: AcceptableForms) -> bool:
    """The gold is a name of 3+ words (each a token, none an initial); the answer names its first and last together.

    Every mention of the last name must come right after the first name ("Joe Quinto" beside
    "Zachary Quinto" names someone else too), and the pair must be neither denied ("not Zachary
    Quinto") nor hedged ("probably Zachary Quinto or Chris Pine").
    """
    words = gold.split()
    if len(gold_tokens) < 3 or len(words) != len(gold_tokens):
        return False
    if not all(word.isalpha() and len(word) > 1 for word in gold_tokens):
        return False
    tokens = answer.tokens
    first, last = gold_tokens[0], gold_tokens[-1]
    mentions = [position for position, word in enumerate(tokens) if word == last]
    if not mentions or any(position == 0 or tokens[position - 1] != first for position in mentions):
        return False
    pair = fold(f"{words[0]} {words[-1]}")
    return not (only_denied(answer.text, pair, answer.question) or only_hedged(answer.text, pair, golds))


_UNIT_SYMBOLS = frozenset("%$€£¥°")


def _number_with_unit(answer: AnswerReading, gold: GoldReading, gold_numbers: set[str]) -> bool:
    """The answer gives the gold's numbers alone, and the gold's other words only name their unit.

    A unit the tokens do not keep (a symbol: "9 %", "$9") is another unit unless the gold has it.
    """
    new = answer.new
    if not new or not gold_numbers or not all(is_number(word) and word in gold_numbers for word in new):
        return False
    if not gold_numbers <= set(new) or not all(is_number(word) or word in UNIT_TOKENS for word in gold.tokens):
        return False
    return not any(symbol in answer.text and symbol not in gold.folded for symbol in _UNIT_SYMBOLS)


def _refuted_or_conflicted(answer: AnswerReading, option: Candidate, golds: AcceptableForms) -> bool:
    """Whether the gold is named only to be denied, only among rival candidates, or as someone else (read now)."""
    if option.name_conflict is None:
        option.name_conflict = _name_conflict(answer.tokens, list(option.read.tokens))
    if option.name_conflict:
        return True
    if option.denied is None:
        option.denied = only_denied(answer.text, option.read.folded, answer.question)
    if option.hedged is None:
        option.hedged = not option.denied and only_hedged(answer.text, option.read.folded, golds)
    return option.denied or option.hedged


def _best(answer: AnswerReading, options: list[Candidate], golds: AcceptableForms) -> Candidate:
    """The gold that supports the answer best.

    A gold named only to be denied or among rival candidates, or a near-name of it, is the weakest
    support; then the larger share of words found, then no number conflict; then the first gold.
    Those readings are taken in that order of the other two, until the first gold free of them.
    """
    if len(options) == 1:
        return options[0]
    ranked = sorted(
        range(len(options)),
        key=lambda i: (-(options[i].recall + options[i].precision), options[i].number_conflict, i),
    )
    for position in ranked:
        if not _refuted_or_conflicted(answer, options[position], golds):
            return options[position]
    return options[ranked[0]]


def _evidence_for(answer: AnswerReading, option: Candidate, asks_when: bool, golds: AcceptableForms) -> LexicalEvidence:
    """The whole evidence of the chosen gold."""
    read = option.read
    gold = option.gold
    gold_tokens = list(read.tokens)
    gold_numbers = set(read.numbers)
    answer_numbers = answer.numbers
    denied = option.denied if option.denied is not None else only_denied(answer.text, read.folded, answer.question)
    # A gold named only among rival candidates supports nothing; one merely denied is read as denied.
    if option.hedged is not None:
        refuted = denied or option.hedged
    else:
        refuted = denied or only_hedged(answer.text, read.folded, golds)
    name_conflict = option.name_conflict
    if name_conflict is None:
        name_conflict = _name_conflict(answer.tokens, gold_tokens)
    return LexicalEvidence(
        gold=gold,
        recall=option.recall,
        precision=option.precision,
        answer_words=tuple(answer.new),
        gold_words=tuple(gold_tokens),
        number_conflict=option.number_conflict,
        numbers_missing=option.numbers_missing,
        in_range=option.in_range and not refuted,
        joined=not refuted and bool(gold_tokens) and _joined_match(answer.tokens, gold_tokens),
        restates_question=not answer.new,
        word_anchor=option.anchored,
        year_of_date=any(w in MONTH_NAMES for w in gold_tokens)
        and len(answer_numbers) == 1
        and all(len(w) == 4 and w in gold_numbers for w in answer_numbers),
        numbers_kept=gold_numbers <= answer_numbers,
        asks_when=asks_when,
        name_conflict=name_conflict,
        denied=denied,
        number_with_unit=not refuted and _number_with_unit(answer, read, gold_numbers),
        name_without_middle=_name_without_middle(answer, gold, gold_tokens, golds),
        folded_answer=answer.text,
        hedged=refuted and not denied,
    )


def lexical_evidence(
    answer: str,
    golds: Sequence[str],
    question: str | None = None,
    folded: str | None = None,
    denials: Mapping[str, bool] | None = None,
) -> LexicalEvidence:
    """The lexical signals between ``answer`` and the gold answer that supports it best.

    :param answer: The answer text.
    :param golds: The acceptable answers (at least one).
    :param question: The question, when known: words the answer merely repeats from it are not
        evidence ("New Mexico" restates "where are the organ mountains in new mexico").
    :param folded: ``fold(answer)`` when the caller has it (it is not computed again).
    :param denials: Whether a folded gold is named only to be denied in ``folded``, for the golds
        the caller has read already (the others are read here).
    """
    if not golds:
        raise ValueError("golds must hold at least one answer")
    asked = question_tokens(question) if question else frozenset()
    when = bool(question) and asks_when(question or "")
    read = read_answer(answer, asked, folded, read_question(question))
    # Golds that fold alike ("Baby Buggy", "Baby buggy") give the same evidence: weighed once.
    distinct: dict[str, str] = {}
    for gold in golds:
        distinct.setdefault(read_gold(gold).folded, gold)
    forms = AcceptableForms(distinct)  # the folded golds, read only if a hedge is found
    options = [candidate(read, gold) for gold in distinct.values()]
    if denials:
        for option in options:
            option.denied = denials.get(option.read.folded)
    return _evidence_for(read, _best(read, options, forms), when, forms)
