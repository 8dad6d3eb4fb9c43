"""What the lenient stage reads from an answer, a gold answer and a question, each read once.

:mod:`answer_eval.evaluators.judge.lenient` weighs an answer against every gold of its question.
The answer's tokens are read once per answer (:func:`read_answer`); a gold's and a question's once
per batch at most (answers to one question share them: :func:`read_gold`, :func:`question_tokens`
and :func:`asks_when` remember them). :func:`candidate` then reads, for one gold, what choosing the
best-supported gold needs (the shares of words found and the numbers); the rest of the evidence is
read for the chosen gold alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from itertools import filterfalse

from answer_eval.text.denials import Asked
from answer_eval.text.folding import fold
from answer_eval.text.lexical_tokens import WordIndex, content_tokens, plain_ranges, plain_text, plain_tokens

__all__ = ["AnswerReading", "Candidate", "GoldReading", "asks_when", "candidate", "question_tokens", "read_answer"]

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
