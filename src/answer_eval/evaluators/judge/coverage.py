"""The agreement-coverage curve: for each confidence threshold, how many verdicts it keeps and how well they agree.

What ``answer-eval calibrate`` prints and ``answer-eval report`` draws: at threshold ``λ`` the
verdicts with ``confidence ≥ λ`` are kept; the curve gives their share, their observed agreement
with people and the *corrected* lower bound on their agreement
(:attr:`~answer_eval.evaluators.judge.selective.Bounds.lower`): the bound the threshold test reads,
clustered by question and corrected for the fixed sequences it runs, so a threshold passes for a
target exactly when its bound on the curve reaches it (0 for a threshold no sequence tests).

Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from answer_eval.evaluators.judge.calibration_data import GRID_STEPS, Calibration

__all__ = ["CurvePoint", "coverage_curve"]


@dataclass(frozen=True)
class CurvePoint:
    """One threshold of the curve.

    :param threshold: Keep a verdict when ``confidence ≥ threshold``.
    :param kept: The verdicts kept.
    :param kept_share: Their share of all verdicts.
    :param kept_agreement: Their observed agreement with people (``nan`` when none is kept).
    :param lower_bound: The corrected lower bound on that agreement at ``delta`` (0 when none is kept or not tested).
    """

    threshold: float
    kept: int
    kept_share: float
    kept_agreement: float
    lower_bound: float


def coverage_curve(calibration: Calibration, delta: float = 0.1, step: float = 0.05) -> list[CurvePoint]:
    """The curve at thresholds ``1.0, 1 - step, ..., 0.0`` (grid thresholds, so each is exact).

    :raises ValueError: When ``delta`` is not strictly between 0 and 1 or ``step`` is not a multiple
        of the grid's width in ``(0, 1]``.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be strictly between 0 and 1, got {delta!r}")
    stride = round(step * GRID_STEPS)
    if not (1 <= stride <= GRID_STEPS and math.isclose(stride / GRID_STEPS, step)):
        raise ValueError(f"step must be a multiple of {1 / GRID_STEPS} in (0, 1], got {step!r}")
    from answer_eval.evaluators.judge.selective import threshold_bounds

    bounds = threshold_bounds(calibration, delta)
    total = calibration.total
    points = []
    for k in range(GRID_STEPS, -1, -stride):
        kept, disagreeing = bounds.kept[k], bounds.disagreeing[k]
        points.append(
            CurvePoint(
                k / GRID_STEPS,
                kept,
                kept / total if total else 0.0,
                (kept - disagreeing) / kept if kept else math.nan,
                bounds.lower[k],
            )
        )
    return points
