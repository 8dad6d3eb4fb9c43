"""Agreement of an LLM grader with human ratings: graded scales and pairwise preferences, with bootstrap intervals.

The figures are those of one contingency table of ratings (the grader's category by the human's):
ranks, kappa, shares. Every figure is a function of the table alone, so a bootstrap resample costs
one pass over the rows and a figure costs the table's size, not the rows' square: the rows are
counted, resampled and the figures' intervals drawn. Pure Python: scipy and scikit-learn are only
test dependencies of the package; the tests check these figures against ``scipy.stats.spearmanr``,
``scipy.stats.kendalltau`` (tau-b) and ``sklearn.metrics.cohen_kappa_score(weights="quadratic")``
to 1e-12.
"""

from __future__ import annotations

import bisect
import math
import random
import sys
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from answer_eval.stats.significance import _quantile

__all__ = [
    "BIN_RULE",
    "MAX_SCALE_POINTS",
    "MIN_ROWS_FOR_INTERVAL",
    "PREFERENCES",
    "RatingAgreement",
    "RatingTable",
    "decisive_accuracy",
    "exact_agreement",
    "kendall_tau_b",
    "nearest_point",
    "pairwise_accuracy",
    "places",
    "quadratic_kappa",
    "rating_agreement",
    "spearman",
    "within_one",
]


PREFERENCES = ("BASELINE", "TIE", "CANDIDATE")
"""A pairwise grade, from the baseline's side to the candidate's (the rubric output's ``choice`` values)."""


MAX_SCALE_POINTS = 101
"""The most points a scale may have (0..100): a longer one is refused, never built point by point.

A rubric scale has a handful of points; a scale of millions is a typo (a rating of ``100000000``
among 1..5), and building it would cost memory in proportion to the numbers, not to the rows.
"""


@dataclass(frozen=True)
class RatingTable:
    """Counts of (grader category, human category) pairs.

    :param positions: Each grader category's place on the scale (0 for its lowest value), lowest
        first; only the categories seen are kept, so an unused point of the scale costs nothing.
    :param counts: ``counts[i][j]``: rows the grader put in category ``i`` and the human in ``j``.
    :param human_positions: The human categories' places, lowest first (``None``: the same as
        ``positions``). The two sides keep their own categories, so a grader with many distinct
        weighed grades against a human on five points costs a table of that many rows by five.
    """

    positions: tuple[int, ...]
    counts: tuple[tuple[int, ...], ...]
    human_positions: tuple[int, ...] | None = None

    @property
    def columns(self) -> tuple[int, ...]:
        """The human categories' places (the columns of ``counts``)."""
        return self.positions if self.human_positions is None else self.human_positions

    @property
    def total(self) -> int:
        """The rows counted."""
        return sum(map(sum, self.counts))

    @property
    def grader_counts(self) -> list[int]:
        """Rows per grader category."""
        return [sum(row) for row in self.counts]

    @property
    def human_counts(self) -> list[int]:
        """Rows per human category."""
        return [sum(column) for column in zip(*self.counts, strict=True)]

    @classmethod
    def of(cls, grader: Sequence[Hashable], human: Sequence[Hashable], scale: Sequence[Hashable]) -> RatingTable:
        """The table of two ratings of the same rows on ``scale`` (its values, lowest first).

        :raises ValueError: For lists of different lengths, a value not on the scale, or a scale of
            more than :data:`MAX_SCALE_POINTS` points.
        """
        if len(grader) != len(human):
            raise ValueError(f"rating lists differ in length: {len(grader)} and {len(human)}")
        place = places(scale)
        for value in (*grader, *human):
            if value not in place:
                raise ValueError(f"{value!r} is not on the scale {list(scale)}")
        return cls.from_pairs(Counter((place[a], place[b]) for a, b in zip(grader, human, strict=True)))

    @classmethod
    def from_pairs(cls, pairs: Mapping[tuple[int, int], int]) -> RatingTable:
        """The table of counted (grader position, human position) pairs: each side's categories seen."""
        rows = tuple(sorted({a for a, _ in pairs}))
        columns = tuple(sorted({b for _, b in pairs}))
        row_of = {position: n for n, position in enumerate(rows)}
        column_of = {position: n for n, position in enumerate(columns)}
        counts = [[0] * len(columns) for _ in rows]
        for (a, b), number in pairs.items():
            counts[row_of[a]][column_of[b]] += number
        return cls(rows, tuple(map(tuple, counts)), columns)


def scale_points(scale: Sequence[Hashable]) -> int:
    """The points of ``scale``, without building it (a ``range`` of any length has its length)."""
    try:
        return len(scale)
    except OverflowError:  # a range longer than the machine's sizes: far past any bound
        return sys.maxsize


def places(scale: Sequence[Hashable]) -> dict[Hashable, int]:
    """Each value of ``scale``'s place on it (0 for the lowest); a scale past :data:`MAX_SCALE_POINTS` is refused."""
    points = scale_points(scale)
    if points > MAX_SCALE_POINTS:
        raise ValueError(f"a scale of {points:,} points: at most {MAX_SCALE_POINTS} are taken")
    return {value: position for position, value in enumerate(scale)}


def nearest_point(value: float, scale: Sequence[float]) -> int | None:
    """The position of ``value``'s nearest point on ``scale`` (numbers, lowest first), a half toward the higher.

    ``None`` for a value below the lowest point or above the highest: off the scale, not binned.

    >>> nearest_point(4.0853, [1, 2, 3, 4, 5]), nearest_point(2.5, [1, 2, 3, 4, 5]), nearest_point(5.5, [1, 5])
    (3, 2, None)
    """
    if not scale or not scale[0] <= value <= scale[-1]:
        return None
    above = bisect.bisect_left(scale, value)  # the first point at or above the value
    if scale[above] == value or above == 0:
        return above
    return above if scale[above] - value <= value - scale[above - 1] else above - 1


def _mid_ranks(counts: Sequence[int]) -> list[float]:
    # Tied rows share the mean of the ranks they span (1-based), as scipy's rankdata("average").
    ranks, below = [], 0
    for number in counts:
        ranks.append(below + (number + 1) / 2)
        below += number
    return ranks


def spearman(table: RatingTable) -> float | None:
    """Spearman's rho: Pearson's correlation of the mid-ranks; ``None`` when one side gives one value only."""
    n = table.total
    middle = (n + 1) / 2  # the mean of mid-ranks is always this
    grader = [rank - middle for rank in _mid_ranks(table.grader_counts)]
    human = [rank - middle for rank in _mid_ranks(table.human_counts)]
    spread_g = math.fsum(number * x * x for number, x in zip(table.grader_counts, grader, strict=True))
    spread_h = math.fsum(number * y * y for number, y in zip(table.human_counts, human, strict=True))
    if spread_g <= 0 or spread_h <= 0:
        return None
    together = math.fsum(
        number * grader[i] * human[j] for i, row in enumerate(table.counts) for j, number in enumerate(row)
    )
    return max(-1.0, min(1.0, together / math.sqrt(spread_g * spread_h)))


def kendall_tau_b(table: RatingTable) -> float | None:
    """Kendall's tau-b (ties corrected); ``None`` when one side gives one value only.

    ``(P - Q) / sqrt((n0 - n1) (n0 - n2))``: concordant minus discordant pairs over the pairs that
    neither side ties. One pass over the grader's categories, highest first, keeping per human
    category the rows above: no second table, so a tall table (many weighed grades) costs its cells once.
    """
    counts, n = table.counts, table.total
    above = [0] * len(table.columns)  # rows in grader categories above the current one, per human category
    concordant = discordant = 0
    for row in reversed(counts):
        total_above, before = sum(above), 0  # before: rows above in a lower human category
        for j, number in enumerate(row):
            if number:
                concordant += number * (total_above - before - above[j])  # above for both
                discordant += number * before  # grader above, human below
            before += above[j]
        for j, number in enumerate(row):
            above[j] += number
    pairs = n * (n - 1) // 2
    tied_grader = sum(number * (number - 1) // 2 for number in table.grader_counts)
    tied_human = sum(number * (number - 1) // 2 for number in table.human_counts)
    untied = (pairs - tied_grader) * (pairs - tied_human)
    if untied <= 0:
        return None
    return max(-1.0, min(1.0, (concordant - discordant) / math.sqrt(untied)))


def quadratic_kappa(table: RatingTable) -> float | None:
    """Cohen's kappa with quadratic weights ``(i - j)**2`` over the scale's places.

    As ``sklearn.metrics.cohen_kappa_score(weights="quadratic", labels=scale)``; ``None`` when the
    disagreement chance predicts is 0 (both sides give the same one value).
    """
    n, places, columns = table.total, table.positions, table.columns
    grader, human = table.grader_counts, table.human_counts
    observed = math.fsum(
        number * (places[i] - columns[j]) ** 2 for i, row in enumerate(table.counts) for j, number in enumerate(row)
    )
    expected = math.fsum(
        grader[i] * human[j] * (places[i] - columns[j]) ** 2 for i in range(len(places)) for j in range(len(columns))
    )
    if expected <= 0:
        return None
    kappa = 1 - observed * n / expected
    return 0.0 if abs(kappa) < 1e-12 else kappa


def _share_within(table: RatingTable, steps: int) -> float:
    places, columns = table.positions, table.columns
    near = sum(
        number
        for i, row in enumerate(table.counts)
        for j, number in enumerate(row)
        if abs(places[i] - columns[j]) <= steps
    )
    return near / table.total


def exact_agreement(table: RatingTable) -> float:
    """The share of rows on which the grader and the human give the same value."""
    return _share_within(table, 0)


def within_one(table: RatingTable) -> float:
    """The share of rows on which they are at most one point of the scale apart."""
    return _share_within(table, 1)


def _preference_counts(table: RatingTable) -> dict[tuple[int, int], int]:
    return {
        (table.positions[i], table.columns[j]): number
        for i, row in enumerate(table.counts)
        for j, number in enumerate(row)
    }


def pairwise_accuracy(table: RatingTable) -> float:
    """Accuracy against the human preference, a tie counting half.

    On a table over :data:`PREFERENCES` (0 baseline, 1 tie, 2 candidate): the same choice scores 1,
    a tie against a side (either way round) 0.5, opposite sides 0.
    """
    counts = _preference_counts(table)
    points = math.fsum(number * (1.0 - abs(a - b) / 2) for (a, b), number in counts.items())
    return points / table.total


def decisive_accuracy(table: RatingTable) -> float | None:
    """Accuracy on the rows where both the grader and the human chose a side (ties left out); ``None`` if none."""
    counts = _preference_counts(table)
    decisive = {pair: number for pair, number in counts.items() if 1 not in pair}
    total = sum(decisive.values())
    if total == 0:
        return None
    return sum(number for (a, b), number in decisive.items() if a == b) / total


Statistic = Callable[[RatingTable], "float | None"]


GRADED_FIGURES: dict[str, Statistic] = {
    "spearman": spearman,
    "kendall_tau_b": kendall_tau_b,
    "quadratic_kappa": quadratic_kappa,
    "exact": exact_agreement,
    "within_one": within_one,
}
"""The figures of a graded scale, by their name in the output."""


PAIRWISE_FIGURES: dict[str, Statistic] = {
    "accuracy": pairwise_accuracy,
    "decisive_accuracy": decisive_accuracy,
    "exact": exact_agreement,
}
"""The figures of pairwise preferences: ties half, ties left out, and the same choice of three."""


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
