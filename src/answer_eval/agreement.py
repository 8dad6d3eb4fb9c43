"""Agreement between verdicts: raw agreement, Cohen's kappa, and the best threshold of a graded score."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["agreement", "best_threshold", "cohen_kappa"]


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
    return (observed - expected) / (1 - expected)


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
