"""The interpretable features the judge's acceptance model weighs: what the rules saw in one answer.

:class:`answer_eval.evaluators.judge.model.AcceptanceModel` turns them into the probability that a person
accepts the answer (each verdict's ``acceptance`` and ``confidence``), and
``scripts/judge_study.py`` compares models over them.

Every feature is a reading a person can check: whether the strict rules found a gold, the lenient
signals (more or less specific, a number in range, words run together), the share of the gold's
words and characters found in the answer, numbers that agree or conflict, a denial or another
person's name, a report of absence, the question's type, whether a list answers a question that
asks for one thing, and the answer's length. :func:`features` computes them for one answer;
:data:`FEATURES` names them in order, and :data:`DESCRIPTIONS` says each in words, for the
explanation every verdict carries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from answer_eval.evaluators.judge.lenient import LexicalEvidence
from answer_eval.text.folding import fold

__all__ = ["DESCRIPTIONS", "FEATURES", "VACUOUS_WITHOUT", "Reading", "feature_values", "features", "gold_letters"]

FEATURES = (
    "rules_accept",
    "strict_contains",
    "more_specific",
    "less_specific",
    "in_range",
    "joined",
    "recall",
    "precision",
    "char_recall",
    "number_conflict",
    "numbers_missing",
    "numbers_kept",
    "gold_has_numbers",
    "name_conflict",
    "denied",
    "restates_question",
    "word_anchor",
    "name_edges",
    "reports_absence",
    "short_answer",
    "answer_words",
    "list_answer",
    "asks_who",
    "asks_when",
    "asks_where",
    "asks_how_many",
    "asks_many",
    "gold_count",
)
"""The features, in the order of the learned model's weights."""

DESCRIPTIONS = {
    "rules_accept": "the rules accept it (strict contains or lenient evidence)",
    "strict_contains": "the strict rules find an acceptable answer in it",
    "more_specific": "it holds every word of an acceptable answer",
    "less_specific": "every new word of it is in an acceptable answer",
    "in_range": "its number lies inside the gold's range",
    "joined": "the gold's words written together or apart",
    "recall": "share of the gold's words it holds",
    "precision": "share of its new words that are in the gold",
    "char_recall": "share of the gold's letter triples it holds",
    "number_conflict": "its numbers differ from the gold's",
    "numbers_missing": "the gold's numbers are missing",
    "numbers_kept": "every number of the gold is in it",
    "gold_has_numbers": "the gold holds a number",
    "name_conflict": "it names someone else (other initials or number)",
    "denied": "it names the gold only to deny it",
    "restates_question": "it adds no content word to the question",
    "word_anchor": "it shares a word with the gold beyond the question",
    "name_edges": "it holds the gold's first and last words (a name without its middle)",
    "reports_absence": "it says the document does not hold the answer",
    "short_answer": "it is a short span (at most three words)",
    "answer_words": "its length (log of words)",
    "list_answer": "it lists several items",
    "asks_who": "the question asks who",
    "asks_when": "the question asks when",
    "asks_where": "the question asks where",
    "asks_how_many": "the question asks how many or how much",
    "asks_many": "the question asks for several things",
    "gold_count": "how many acceptable answers there are (log)",
}
"""Each feature in words."""

VACUOUS_WITHOUT = {"numbers_kept": "gold_has_numbers"}
"""Features that hold of every answer when another feature is 0, so their words would say something false:
"every number of the gold is in it" for the gold "green", which has none. The model weighs them as learned; the
explanation does not name them then (:meth:`~answer_eval.evaluators.judge.model.AcceptanceModel.explain`)."""

_WHO = re.compile(r"^(?:who|whom|whose)\b|\bwho (?:is|was|were|are|did|does|wrote|played|sang|won)\b")
_WHEN = re.compile(r"^(?:when|since when|until when)\b|\b(?:what|which) (?:year|date|day|month|century|decade)\b")
_WHERE = re.compile(r"^where\b|\b(?:what|which) (?:country|city|state|place|town|continent|region)\b")
_HOW_MANY = re.compile(r"\bhow (?:many|much|long|old|far|tall|big|high|deep|often)\b")
_MANY = re.compile(r"\b(?:who (?:are|were)|what (?:are|were)|which (?:are|were)|name (?:the|all|two|three)|list)\b")
_LIST_SEPARATOR = re.compile(r",| and | & |;")
_WORD = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[a-zA-Z0-9_]+")  # the same on ASCII text, a plain character set (faster)


@dataclass(frozen=True)
class Reading:
    """What the rules already read from one answer, passed in so nothing is read twice.

    :param text: The answer text.
    :param strict_contains: The strict rules found an acceptable answer.
    :param reports_absence: The not-found detector says it reports absence.
    :param evidence: The lenient signals against the best gold.
    :param rules_accept: The rule stages accept the answer.
    """

    text: str
    strict_contains: bool
    reports_absence: bool
    evidence: LexicalEvidence
    rules_accept: bool


_NOT_ALNUM = re.compile(r"[\W_]+")
_ASCII_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]+")  # the same on ASCII text, a plain character set (faster)
_SHORT = 256  # letters; a shorter answer is searched directly, a longer one through its set of triples


def _letters(text: str) -> str:
    return (_ASCII_NOT_ALNUM if text.isascii() else _NOT_ALNUM).sub("", text)


def _trigrams(letters: str) -> frozenset[str]:
    return frozenset(map("".join, zip(letters, letters[1:], letters[2:], strict=False)))  # each run of three


def gold_letters(folded_gold: str) -> str:
    """A folded gold's letters and digits, as the character recall compares them."""
    return _letters(folded_gold)


@lru_cache(maxsize=4096)
def _gold_trigrams(letters: str) -> frozenset[str]:
    return _trigrams(letters)


def _char_recall(answer: str, golds: Sequence[str]) -> float:
    """The largest share of a gold's letter triples found in the answer (spelling-tolerant overlap).

    ``golds`` are the golds' letters (:func:`gold_letters`).
    """
    letters = _letters(answer)
    for whole in golds:
        if len(whole) >= 3 and whole in letters:
            return 1.0  # every letter triple of this gold is in the answer: no gold has a larger share
    found: frozenset[str] | str = letters if len(letters) <= _SHORT else _trigrams(letters)
    best = 0.0
    for whole in golds:
        wanted = _gold_trigrams(whole)
        if wanted:
            best = max(best, sum(map(found.__contains__, wanted)) / len(wanted))
    return best


def features(reading: Reading, golds: Sequence[str], question: str | None) -> list[float]:
    """The feature vector of one answer, in the order of :data:`FEATURES`."""
    values = feature_values(reading, golds, question)
    return [values[name] for name in FEATURES]


def feature_values(
    reading: Reading, golds: Sequence[str], question: str | None, letters: Sequence[str] | None = None
) -> dict[str, float]:
    """The features of one answer, by name.

    :param letters: :func:`gold_letters` of each folded gold, when the caller keeps them (read here otherwise).
    """
    evidence = reading.evidence
    folded = evidence.folded_answer or fold(reading.text)
    words = len((_ASCII_WORD if folded.isascii() else _WORD).findall(folded))
    short = words <= 3
    gold_words = evidence.gold_words
    values: dict[str, float] = {
        "rules_accept": reading.rules_accept,
        "strict_contains": reading.strict_contains,
        "more_specific": evidence.more_specific,
        "less_specific": evidence.less_specific,
        "in_range": evidence.in_range,
        "joined": evidence.joined,
        "recall": evidence.recall,
        "precision": evidence.precision,
        "char_recall": _char_recall(folded, letters if letters is not None else [gold_letters(fold(g)) for g in golds]),
        "number_conflict": evidence.number_conflict,
        "numbers_missing": evidence.numbers_missing,
        "numbers_kept": evidence.numbers_kept,
        "gold_has_numbers": any(word[:1].isdigit() for word in evidence.gold_words),
        "name_conflict": evidence.name_conflict,
        "denied": evidence.denied,
        "restates_question": evidence.restates_question,
        "word_anchor": evidence.word_anchor,
        "name_edges": len(gold_words) >= 2
        and gold_words[0] in evidence.answer_words
        and gold_words[-1] in evidence.answer_words,
        "reports_absence": reading.reports_absence,
        "short_answer": short,
        "answer_words": math.log1p(words),
        "list_answer": words <= 12 and len(_LIST_SEPARATOR.findall(folded)) >= 1,
        "gold_count": math.log1p(len(golds)),
    }
    values.update(_question_type(question or ""))
    return values


@lru_cache(maxsize=1024)
def _question_type(question: str) -> dict[str, float]:
    # Answers to one question are judged together: its type is read once.
    asked = fold(question)
    return {
        "asks_who": _WHO.search(asked) is not None,
        "asks_when": _WHEN.search(asked) is not None,
        "asks_where": _WHERE.search(asked) is not None,
        "asks_how_many": _HOW_MANY.search(asked) is not None,
        "asks_many": _MANY.search(asked) is not None,
    }
