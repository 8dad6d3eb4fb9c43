"""The judge's acceptance model: the interpretable features it weighs, and its learned numbers from ``model.json``.

The features are what the rules saw in one answer; :class:`AcceptanceModel` turns them into the
probability that a person accepts the answer (each verdict's ``acceptance`` and ``confidence``), and
``scripts/judge_study.py`` compares models over them.

Every feature is a reading a person can check: whether the strict rules found a gold, the lenient
signals (more or less specific, a number in range, words run together), the share of the gold's
words and characters found in the answer, numbers that agree or conflict, a denial or another
person's name, a report of absence, the question's type, whether a list answers a question that
asks for one thing, and the answer's length. :func:`features` computes them for one answer;
:data:`FEATURES` names them in order, and :data:`DESCRIPTIONS` says each in words, for the
explanation every verdict carries.

The learned numbers of the AnswerJudge are read from ``model.json`` (JSON only, nothing executed).
Two things are learned from human verdicts (``scripts/train_judge.py`` writes the file with its
data hashes, options and cross-set figures):

- :class:`AcceptanceModel`: the probability that a person accepts an answer, a logistic model over
  the features above. It gives every verdict its
  ``acceptance`` and ``confidence`` and names the features that weighed most;
- the removed semantic stage's two weights (MiniLM similarity, "the gold's numbers are missing"),
  still in the file and read, unused: the file's digest, which calibrations are tied to, stays.

Format 1 files (before the acceptance model) still load: their verdicts carry the old per-stage
confidences.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from answer_eval.evaluators.judge.lenient import LexicalEvidence
from answer_eval.text.folding import fold

__all__ = [
    "DEFAULT_MODEL_PATH",
    "DESCRIPTIONS",
    "FEATURES",
    "AcceptanceModel",
    "JudgeModel",
    "Reading",
    "feature_values",
    "features",
    "gold_letters",
]


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
explanation does not name them then (:meth:`~answer_eval.evaluators.judge.acceptance_model.AcceptanceModel.explain`)."""

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


_MAX_MODEL_BYTES = 16 << 20  # the shipped model is a few KB: a larger file is not one

DEFAULT_MODEL_PATH = Path(__file__).with_name("model.json")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"judge model: {where} must be a finite number")
    return float(value)


def _numbers(values: Any, where: str, length: int) -> tuple[float, ...]:
    if not isinstance(values, list) or len(values) != length:
        raise ValueError(f"judge model: {where} must be a list of {length} numbers")
    return tuple(_number(value, f"{where}[{i}]") for i, value in enumerate(values))


@dataclass(frozen=True)
class AcceptanceModel:
    """Logistic model of the probability that a person accepts an answer, over named features.

    The features are standardised (``(x - mean) / scale``) before the weights apply, so a weight
    says how much one standard deviation of its feature moves the log-odds.

    :param features: Feature names, each one of :data:`answer_eval.evaluators.judge.acceptance_model.FEATURES`.
    :param mean: Mean of each feature on the training data.
    :param scale: Standard deviation of each feature on the training data (never 0).
    :param weights: Logistic weight of each standardised feature.
    :param bias: Logistic intercept.
    """

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def __post_init__(self) -> None:
        unknown = [name for name in self.features if name not in FEATURES]
        if unknown:
            raise ValueError(f"judge model: unknown acceptance features {unknown}")
        if not len(self.features) == len(self.mean) == len(self.scale) == len(self.weights):
            raise ValueError("judge model: acceptance features, mean, scale and weights differ in length")
        if any(scale <= 0 for scale in self.scale):
            raise ValueError("judge model: every acceptance scale must be positive")

    @classmethod
    def from_dict(cls, data: Any) -> AcceptanceModel:
        """Read the ``acceptance`` section of a model file, checking every number."""
        if not isinstance(data, dict):
            raise ValueError("judge model: acceptance must be a mapping")
        names = data.get("features")
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ValueError("judge model: acceptance.features must be a list of names")
        count = len(names)
        return cls(
            tuple(names),
            _numbers(data.get("mean"), "acceptance.mean", count),
            _numbers(data.get("scale"), "acceptance.scale", count),
            _numbers(data.get("weights"), "acceptance.weights", count),
            _number(data.get("bias"), "acceptance.bias"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``acceptance`` section of a model file."""
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
        }

    def _terms(self, values: Mapping[str, float]) -> list[float]:
        return [slope * (values[name] - mean) for name, mean, slope in self._slopes]

    @cached_property
    def _slopes(self) -> list[tuple[str, float, float]]:
        # Each weight divided by its scale once, not once per answer.
        return [
            (name, mean, weight / scale)
            for name, mean, scale, weight in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        ]

    def probability(self, values: Mapping[str, float]) -> float:
        """Probability that a person accepts an answer with these feature values."""
        return _logistic(self.bias + sum(self._terms(values)))

    def explain(self, values: Mapping[str, float], toward: bool, count: int = 2) -> tuple[float, list[str]]:
        """The probability, and the features (in words) that pushed it most toward acceptance (or away from it).

        Only features the answer has (a non-zero value) are named: a feature's words say that the
        answer has it, so an absent one ("the rules do not accept it") is never named as a reason;
        nor is one that holds only vacuously (:data:`VACUOUS_WITHOUT`: every number of a gold that has none).
        """
        terms = self._terms(values)
        # The features that may be named, then ranked (fewer to sort; the names differ, so the order is total).
        named = [
            (term, name)
            for term, name in zip(terms, self.features, strict=True)
            if term != 0 and (term > 0) == toward and values[name] != 0 and _not_vacuous(name, values)
        ]
        named.sort(reverse=toward)
        return _logistic(self.bias + sum(terms)), [DESCRIPTIONS[name] for _, name in named[:count]]


def _not_vacuous(name: str, values: Mapping[str, float]) -> bool:
    condition = VACUOUS_WITHOUT.get(name)
    return condition is None or values.get(condition, 1) != 0


def _logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class JudgeModel:
    """The learned numbers of the judge, read from ``model.json``.

    :param confidence_contains: Share of answers the contains stage accepts that people accept
        (used only when there is no acceptance model).
    :param confidence_lexical: Share of answers the lexical stage accepts that people accept (idem).
    :param no_evidence_acceptance: Share of answers with no lexical evidence that people accept (idem).
    :param similarity_weight: The removed semantic stage's weight of similarity: read, unused (``model.json``
        keeps its ``semantic`` section so that its digest, which calibrations are tied to, stays).
    :param numbers_missing_weight: That stage's weight of "the gold's numbers are missing" (idem).
    :param bias: That stage's intercept (idem).
    :param acceptance: The probability that a person accepts an answer; ``None`` in format 1 files.
    :param info: Provenance: data and their hashes, seed, options, cross-set figures.
    """

    confidence_contains: float
    confidence_lexical: float
    no_evidence_acceptance: float
    similarity_weight: float
    numbers_missing_weight: float
    bias: float
    acceptance: AcceptanceModel | None = None
    info: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path | None = None) -> JudgeModel:
        """Read a model file (format 1 or 2); every number is checked, nothing in the file is executed."""
        from answer_eval.inputs.jsonl import read_json_file

        file = Path(path or DEFAULT_MODEL_PATH)
        data = read_json_file(file, _MAX_MODEL_BYTES, "judge model file")
        if not isinstance(data, dict) or data.get("format") not in (1, 2):
            raise ValueError(f"{file} is not a judge model file (format 1 or 2)")
        numbers: dict[str, float] = {}
        for section, key in (
            ("confidence", "contains"),
            ("confidence", "lexical"),
            ("confidence", "no_evidence_acceptance"),
            ("semantic", "similarity"),
            ("semantic", "numbers_missing"),
            ("semantic", "bias"),
        ):
            part = data.get(section)
            numbers[f"{section}.{key}"] = _number(part.get(key) if isinstance(part, dict) else None, f"{section}.{key}")
        acceptance = AcceptanceModel.from_dict(data.get("acceptance")) if data["format"] == 2 else None
        return cls(
            confidence_contains=numbers["confidence.contains"],
            confidence_lexical=numbers["confidence.lexical"],
            no_evidence_acceptance=numbers["confidence.no_evidence_acceptance"],
            similarity_weight=numbers["semantic.similarity"],
            numbers_missing_weight=numbers["semantic.numbers_missing"],
            bias=numbers["semantic.bias"],
            acceptance=acceptance,
            info={k: v for k, v in data.items() if k not in ("confidence", "semantic", "acceptance")},
        )
