"""The agreement-coverage curve: for each confidence threshold, how many verdicts it keeps and how well they agree.

What ``answer-eval calibrate`` prints and ``answer-eval report`` draws: at threshold ``λ`` the
verdicts with ``confidence ≥ λ`` are kept; the curve gives their share, their observed agreement
with people and the exact (Clopper-Pearson) one-sided lower bound on their agreement at level
``delta``: with probability at least ``1 - delta`` the kept verdicts' agreement on such data is at
least that bound.

Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from answer_eval.evaluators.judge.binomial import binomial_cdf
from answer_eval.evaluators.judge.calibration_data import GRID_STEPS, Calibration
from answer_eval.evaluators.judge.selective import threshold_bounds

__all__ = ["CurvePoint", "agreement_lower_bound", "coverage_curve"]

_BISECTIONS = 60  # 2^-60: past double precision


@dataclass(frozen=True)
class CurvePoint:
    """One threshold of the curve.

    :param threshold: Keep a verdict when ``confidence ≥ threshold``.
    :param kept: The verdicts kept.
    :param kept_share: Their share of all verdicts.
    :param kept_agreement: Their observed agreement with people (``nan`` when none is kept).
    :param lower_bound: The corrected lower bound on that agreement at level ``delta`` (0 where the
        test does not reach: above its highest start, or none kept).
    """

    threshold: float
    kept: int
    kept_share: float
    kept_agreement: float
    lower_bound: float


def agreement_lower_bound(kept: int, agreeing: int, delta: float) -> float:
    """The Clopper-Pearson lower bound: the ``p`` with ``P(Bin(kept, p) ≥ agreeing) = delta`` (0 when nothing agrees).

    >>> round(agreement_lower_bound(100, 100, 0.1), 4)  # 0.1 ** (1 / 100)
    0.9772
    """
    if not 0 <= agreeing <= kept:
        raise ValueError(f"agreeing must be in [0, kept], got {agreeing} of {kept}")
    if agreeing == 0:
        return 0.0
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):  # P(X ≥ agreeing) grows with p
        middle = (low + high) / 2
        if 1.0 - binomial_cdf(agreeing - 1, kept, middle) < delta:
            low = middle
        else:
            high = middle
    return low


def coverage_curve(calibration: Calibration, delta: float = 0.1, step: float = 0.05) -> list[CurvePoint]:
    """The curve at thresholds ``1.0, 1 - step, ..., 0.0`` (grid thresholds, so each is exact).

    Each point's ``lower_bound`` is :func:`~answer_eval.evaluators.judge.selective.threshold_bounds`'s
    corrected bound at that threshold (its questions counted as clusters when the calibration has them).

    :raises ValueError: When ``delta`` is not strictly between 0 and 1 or ``step`` is not a multiple
        of the grid's width in ``(0, 1]``.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be strictly between 0 and 1, got {delta!r}")
    stride = round(step * GRID_STEPS)
    if not (1 <= stride <= GRID_STEPS and math.isclose(stride / GRID_STEPS, step)):
        raise ValueError(f"step must be a multiple of {1 / GRID_STEPS} in (0, 1], got {step!r}")
    bounds = threshold_bounds(calibration, delta)
    total = calibration.total
    points = []
    for k in range(GRID_STEPS, -1, -stride):
        threshold = k / GRID_STEPS
        kept, disagreeing = calibration.kept(threshold)
        agreeing = kept - disagreeing
        points.append(
            CurvePoint(
                threshold,
                kept,
                kept / total if total else 0.0,
                agreeing / kept if kept else math.nan,
                bounds.lower[k],
            )
        )
    return points
