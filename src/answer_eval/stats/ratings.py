"""Agreement of an LLM grader with human ratings: graded scales and pairwise preferences, with bootstrap intervals.

The figures are those of one contingency table (:mod:`answer_eval.stats.rating_figures`), so a
bootstrap resample costs one pass over the rows: here the rows are counted, resampled and the
figures' intervals drawn.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from answer_eval.stats.rating_figures import (
    GRADED_FIGURES,
    PAIRWISE_FIGURES,
    RatingTable,
    Statistic,
    nearest_point,
    places,
)
from answer_eval.stats.significance import _quantile

__all__ = ["BIN_RULE", "MIN_ROWS_FOR_INTERVAL", "RANK_FIGURES", "Figure", "RatingAgreement", "rating_agreement"]

MIN_ROWS_FOR_INTERVAL = 10
"""Fewer compared rows than this get the figures but no interval: a bootstrap of a handful of rows says little."""

BIN_RULE = (
    "a grade between two points of the scale (a weighed, --scoring logprobs, grade such as 4.0853) is ranked "
    "as it is by Spearman and tau-b, and taken at its nearest point of the scale (a half rounds up) by kappa, "
    "exact and within-one agreement"
)
"""How a grade that is not a point of the scale enters each figure."""


@dataclass(frozen=True)
class Figure:
    """One figure and its percentile bootstrap interval.

    :param value: The figure on the rows compared; ``None`` where it is undefined (a constant side).
    :param low: The interval's lower end; ``None`` without an interval (too few rows, or undefined on every resample).
    :param high: Its upper end.
    :param resamples: The resamples on which the figure was defined (the interval is taken over these).
    """

    value: float | None
    low: float | None
    high: float | None
    resamples: int


@dataclass(frozen=True)
class RatingAgreement:
    """A grader's agreement with human ratings.

    :param pairwise: Whether these are preferences (:data:`PREFERENCES`) rather than a graded scale.
    :param scale: The scale's values, lowest first (:data:`PREFERENCES` for pairwise).
    :param compared: The rows compared.
    :param figures: Each figure by name (:data:`GRADED_FIGURES` or :data:`PAIRWISE_FIGURES`).
    :param n_resamples: Bootstrap resamples drawn (0: too few rows for an interval).
    :param confidence: The intervals' confidence.
    :param seed: The bootstrap's seed.
    :param binned: Rows whose grade lies between two points of the scale (a weighed grade), taken
        at the nearest point by the figures of categories (:data:`BIN_RULE`).
    """

    pairwise: bool
    scale: tuple[Hashable, ...]
    compared: int
    figures: dict[str, Figure]
    n_resamples: int
    confidence: float
    seed: int | None
    binned: int = 0


def _interval(values: list[float], confidence: float) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    values.sort()
    alpha = 1 - confidence
    return _quantile(values, alpha / 2), _quantile(values, 1 - alpha / 2)


RANK_FIGURES = frozenset({"spearman", "kendall_tau_b"})
"""The graded figures that rank the grades as they are; the others take each at its nearest point (:data:`BIN_RULE`)."""


def _graderplaces(grader: Sequence[Hashable], scale: Sequence[Hashable], pairwise: bool) -> dict[Hashable, int]:
    """Each distinct grade's place on the scale: its own, or (a number between two points) its nearest point's."""
    place = places(scale)
    found: dict[Hashable, int] = {}
    for value in set(grader):
        if value in place:
            found[value] = place[value]
            continue
        between = None
        if not pairwise and isinstance(value, (int, float)) and not isinstance(value, bool):
            whole = math.isfinite(value) and value == int(value)
            between = None if whole else nearest_point(value, scale)  # type: ignore[arg-type]
        if between is None:
            raise ValueError(f"{value!r} is not on the scale {list(scale)}")
        found[value] = between
    return found


def _figures_of(
    counted: Mapping[tuple[int, int], int], binned_of: Sequence[int], statistics: Mapping[str, Statistic]
) -> dict[str, float | None]:
    """Every figure of the rows counted by (grade's rank, human place): ranks as they are, categories binned."""
    exact = RatingTable.from_pairs(counted)
    binned: Counter[tuple[int, int]] = Counter()
    for (rank, human), number in counted.items():
        binned[binned_of[rank], human] += number
    table = RatingTable.from_pairs(binned)
    return {name: statistic(exact if name in RANK_FIGURES else table) for name, statistic in statistics.items()}


def rating_agreement(
    grader: Sequence[Hashable],
    human: Sequence[Hashable],
    scale: Sequence[Hashable],
    *,
    pairwise: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> RatingAgreement:
    """Every figure of a grader's ratings against human ones, each with a percentile bootstrap interval.

    Rows are resampled with replacement ``n_resamples`` times (``seed`` makes it reproducible,
    ``None`` draws a fresh one); a figure's interval is the percentile interval over the resamples
    on which it is defined. Fewer than :data:`MIN_ROWS_FOR_INTERVAL` rows get no interval.

    A grade that is a number between two points of a graded scale (a weighed grade, ``4.0853``)
    is taken by :data:`BIN_RULE`: Spearman and tau-b rank it as it is, the other figures take it at
    its nearest point (a half rounds up). A human rating is a point of the scale.

    >>> result = rating_agreement([1, 2, 3, 4, 5], [1, 2, 3, 5, 4], [1, 2, 3, 4, 5])
    >>> result.figures["spearman"].value, result.figures["exact"].value, result.figures["within_one"].value
    (0.9, 0.6, 1.0)

    :raises ValueError: For no rows, lists of different lengths, a value off the scale, a scale of more
        than :data:`MAX_SCALE_POINTS` points, or bad bootstrap options.
    """
    if not grader:
        raise ValueError("no rows to compare")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    if len(grader) != len(human):
        raise ValueError(f"rating lists differ in length: {len(grader)} and {len(human)}")
    place = places(scale)
    for value in human:
        if value not in place:
            raise ValueError(f"{value!r} is not on the scale {list(scale)}")
    graded = _graderplaces(grader, scale, pairwise)
    # Each distinct grade by its rank (its order among the grades, the places' order where they are points).
    ranked = sorted(graded, key=lambda value: (graded[value], value))
    rank_of = {value: rank for rank, value in enumerate(ranked)}
    binned_of = [graded[value] for value in ranked]
    statistics = PAIRWISE_FIGURES if pairwise else GRADED_FIGURES
    # Each row as one integer (grade's rank * width + human place): counting integers is the cheap part.
    width = len(place)
    codes = [rank_of[a] * width + place[b] for a, b in zip(grader, human, strict=True)]
    draws: dict[str, list[float]] = {name: [] for name in statistics}
    resamples = n_resamples if len(codes) >= MIN_ROWS_FOR_INTERVAL else 0
    rng = random.Random(seed)
    for _ in range(resamples):
        counted = Counter(rng.choices(codes, k=len(codes)))
        drawn = _figures_of({divmod(code, width): number for code, number in counted.items()}, binned_of, statistics)
        for name, value in drawn.items():
            if value is not None:
                draws[name].append(value)
    whole = _figures_of({divmod(code, width): number for code, number in Counter(codes).items()}, binned_of, statistics)
    figures = {}
    for name in statistics:
        low, high = _interval(draws[name], confidence)
        figures[name] = Figure(whole[name], low, high, len(draws[name]))
    binned = sum(value not in place for value in grader)
    return RatingAgreement(pairwise, tuple(scale), len(codes), figures, resamples, confidence, seed, binned)
