"""The learned numbers of the AnswerJudge, read from ``model.json`` (JSON only, nothing executed).

Two things are learned from human verdicts (``scripts/train_judge.py`` writes the file with its
data hashes, options and cross-set figures):

- :class:`AcceptanceModel`: the probability that a person accepts an answer, a logistic model over
  the interpretable features of :mod:`answer_eval.evaluators.judge.features`. It gives every verdict its
  ``acceptance`` and ``confidence`` and names the features that weighed most;
- the removed semantic stage's two weights (MiniLM similarity, "the gold's numbers are missing"),
  still in the file and read, unused: the file's digest, which calibrations are tied to, stays.

Format 1 files (before the acceptance model) still load: their verdicts carry the old per-stage
confidences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from answer_eval.evaluators.judge.features import DESCRIPTIONS, FEATURES, VACUOUS_WITHOUT

__all__ = ["DEFAULT_MODEL_PATH", "AcceptanceModel", "JudgeModel"]

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

    :param features: Feature names, each one of :data:`answer_eval.evaluators.judge.features.FEATURES`.
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
        from answer_eval.engine.files import read_json_file

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
