"""Agreement between verdicts: raw agreement, Cohen's kappa, and the best threshold of a graded score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "HUMAN",
    "AgreementMatrix",
    "agreement",
    "agreement_matrix",
    "best_threshold",
    "cohen_kappa",
    "disagreements",
]

HUMAN = "human"
"""The name of the human label among named verdict lists (agreement matrices, disagreements)."""


def _check(a: Sequence[object], b: Sequence[object]) -> int:
    if len(a) != len(b):
        raise ValueError(f"verdict lists differ in length: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no verdicts to compare")
    return len(a)


def agreement(a: Sequence[bool], b: Sequence[bool]) -> float:
    """The share of items on which two verdict lists agree.

    >>> agreement([True, True, False, False], [True, False, False, False])
    0.75
    """
    n = _check(a, b)
    return sum(bool(x) == bool(y) for x, y in zip(a, b, strict=False)) / n


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's kappa: agreement corrected for the agreement expected by chance from each side's rates.

    1 is perfect agreement, 0 what chance gives. When both sides give one verdict only, chance
    agreement is 1 and kappa is defined here as 1.0 if they agree everywhere, else 0.0.

    >>> round(cohen_kappa([True, True, False, False], [True, False, False, False]), 3)
    0.5
    """
    n = _check(a, b)
    observed = agreement(a, b)
    rate_a = sum(bool(x) for x in a) / n
    rate_b = sum(bool(y) for y in b) / n
    expected = rate_a * rate_b + (1 - rate_a) * (1 - rate_b)
    if expected >= 1.0:
        return 1.0 if observed == 1.0 else 0.0
    kappa = (observed - expected) / (1 - expected)
    # Observed and expected agreement computed two ways can differ by rounding alone where they are
    # equal: that is a kappa of 0, not -1e-17 (printed "-0.000").
    return 0.0 if abs(kappa) < 1e-12 else kappa


def best_threshold(scores: Sequence[float], labels: Sequence[bool]) -> tuple[float, float]:
    """The threshold ``t`` for which ``score >= t`` agrees most with ``labels``, and that agreement.

    Every distinct score (and one above the maximum) is tried; ties go to the lowest threshold.
    This is an in-sample optimum: report it as such, or choose the threshold on other data.
    """
    n = _check(scores, labels)
    candidates = [*sorted(set(scores)), max(scores) + 1.0]
    best = (candidates[0], -1.0)
    for threshold in candidates:
        right = sum((score >= threshold) == bool(label) for score, label in zip(scores, labels, strict=False)) / n
        if right > best[1]:
            best = (threshold, right)
    return best


@dataclass(frozen=True)
class AgreementMatrix:
    """Agreement and Cohen's kappa between every pair of verdict lists on the same items.

    :param names: The verdict lists' names (evaluators, and the human label when there is one).
    :param agreement: ``agreement[i][j]``: share of items on which ``names[i]`` and ``names[j]`` agree.
    :param kappa: ``kappa[i][j]``: their Cohen's kappa.
    :param positive_rates: Share of items each calls right.
    """

    names: tuple[str, ...]
    agreement: tuple[tuple[float, ...], ...]
    kappa: tuple[tuple[float, ...], ...]
    positive_rates: tuple[float, ...]

    def to_json(self) -> dict[str, object]:
        """The matrix as one JSON-ready mapping."""
        return {
            "names": list(self.names),
            "agreement": [list(row) for row in self.agreement],
            "kappa": [list(row) for row in self.kappa],
            "positive_rates": list(self.positive_rates),
        }


def agreement_matrix(verdicts: Mapping[str, Sequence[bool]]) -> AgreementMatrix:
    """Pairwise agreement and Cohen's kappa of named verdict lists (all of one length).

    >>> matrix = agreement_matrix({"a": [True, True, False, False], "b": [True, False, False, False]})
    >>> matrix.agreement[0][1], round(matrix.kappa[0][1], 3), matrix.positive_rates
    (0.75, 0.5, (0.5, 0.25))
    """
    if not verdicts:
        raise ValueError("no verdict lists to compare")
    names = tuple(verdicts)
    columns = [verdicts[name] for name in names]
    size = _check(columns[0], columns[0])
    return AgreementMatrix(
        names,
        tuple(tuple(agreement(a, b) for b in columns) for a in columns),
        tuple(tuple(cohen_kappa(a, b) for b in columns) for a in columns),
        tuple(sum(bool(x) for x in column) / size for column in columns),
    )


def disagreements(verdicts: Mapping[str, Sequence[bool]]) -> list[int]:
    """Positions of the items on which the named verdict lists do not all agree.

    >>> disagreements({"a": [True, True, False], "b": [True, False, False], "c": [True, True, True]})
    [1, 2]
    """
    columns = list(verdicts.values())
    if not columns:
        return []
    for column in columns[1:]:
        _check(columns[0], column)
    return [i for i in range(len(columns[0])) if len({bool(column[i]) for column in columns}) > 1]
