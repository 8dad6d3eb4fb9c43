"""Agreement between raters: two sets of verdicts, or several raters of the same items.

Two: raw agreement, Cohen's kappa, and the best threshold of a graded score. Several: Krippendorff's
alpha and Fleiss' kappa.

What a jury of LLM judges reports of itself (:mod:`answer_eval.llm.jury`): how far its judges
agree with one another beyond chance, which says whether the panel's consensus rests on judges that
see the same thing. Pure Python, as the rest of :mod:`answer_eval.stats`.

- :func:`krippendorff_alpha` (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"):
  any number of raters, missing ratings allowed, with the ``nominal``, ``ordinal``, ``interval`` or
  ``ratio`` difference function. The tests check it against that paper's worked example (nominal
  0.743, ordinal 0.815, interval 0.849, ratio 0.797).
- :func:`fleiss_kappa` (Fleiss 1971): the same number of ratings per item, nominal categories. The
  tests check it against the worked example in Wikipedia's article (0.210).

Both are ``None`` where they are undefined: when every rating is the same value (no variation, so
chance agreement is perfect and the ratio is 0/0), or when no item has two ratings.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "ALPHA_LEVELS",
    "HUMAN",
    "AgreementMatrix",
    "agreement",
    "agreement_matrix",
    "best_threshold",
    "cohen_kappa",
    "disagreements",
    "fleiss_kappa",
    "krippendorff_alpha",
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


ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")
"""The difference functions :func:`krippendorff_alpha` knows, by the level of measurement they suit."""


_Distance = Callable[[float, float], float]


def krippendorff_alpha(units: Sequence[Sequence[float | None]], level: str = "interval") -> float | None:
    """Krippendorff's alpha of ``units``: per item, each rater's value (``None``: not rated).

    The coincidence matrix counts, within each item with at least two values, every ordered pair of
    values from two different raters, weighted ``1 / (values - 1)``; alpha is
    ``1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck)`` (Krippendorff 2011, section C).

    :param units: One sequence per item (a row of the reliability data, transposed); the raters'
        order does not matter. Items with fewer than two values are not pairable and are left out.
    :param level: ``nominal``, ``ordinal`` (ranks over the values' frequencies), ``interval``
        (squared difference) or ``ratio``.
    :returns: Alpha, or ``None`` when fewer than two values can be paired or every value is the same.
    :raises ValueError: For an unknown level, or a value that is not a finite number (``nominal`` takes any hashable).
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level is one of {', '.join(ALPHA_LEVELS)}, got {level!r}")
    coincidences: defaultdict[tuple[float, float], float] = defaultdict(float)
    for unit in units:
        values = Counter(value for value in unit if value is not None)
        paired = sum(values.values())
        if paired < 2:
            continue
        for first, first_count in values.items():
            for second, second_count in values.items():
                pairs = first_count * (second_count - (first == second))
                if pairs:
                    coincidences[first, second] += pairs / (paired - 1)
    totals: defaultdict[float, float] = defaultdict(float)
    for (first, _), weight in coincidences.items():
        totals[first] += weight
    total = sum(totals.values())
    if total < 2 or len(totals) < 2:
        return None
    distance = _distance(level, totals)
    observed = sum(weight * distance(first, second) for (first, second), weight in coincidences.items())
    expected = sum(totals[a] * totals[b] * distance(a, b) for a in totals for b in totals)
    return 1.0 - (total - 1.0) * observed / expected


def _distance(level: str, totals: Mapping[float, float]) -> _Distance:
    """The squared difference function of ``level`` (ordinal's is over ``totals``, the values' frequencies)."""
    if level == "nominal":
        return lambda a, b: 0.0 if a == b else 1.0
    for value in totals:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{level} alpha needs finite numbers, got {value!r}")
    if level == "interval":
        return lambda a, b: float(a - b) ** 2
    if level == "ratio":
        return lambda a, b: 0.0 if a == b else ((a - b) / (a + b)) ** 2
    ordered = sorted(totals)
    # The ordinal distance of two values: the frequencies from one to the other, each end counted half.
    below: dict[float, float] = {}
    running = 0.0
    for value in ordered:
        below[value] = running
        running += totals[value]

    def ordinal(a: float, b: float) -> float:
        low, high = min(a, b), max(a, b)
        return (below[high] + totals[high] - below[low] - (totals[low] + totals[high]) / 2) ** 2

    return ordinal


def fleiss_kappa(items: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of ``items``: per item, the category each of its raters gave (the same count per item).

    ``(P - Pe) / (1 - Pe)``, ``P`` the mean share of agreeing rater pairs per item, ``Pe`` the sum
    of the squared shares of each category over every rating (Fleiss 1971).

    :returns: Kappa, or ``None`` when there is no item, or every rating is one category.
    :raises ValueError: When the items have different numbers of ratings, or fewer than two.
    """
    if not items:
        return None
    raters = len(items[0])
    if raters < 2 or any(len(item) != raters for item in items):
        raise ValueError(f"every item needs the same number of ratings (two at least); the first has {raters}")
    shares: Counter[Hashable] = Counter()
    agreement = 0.0
    for item in items:
        counts = Counter(item)
        shares.update(counts)
        agreement += (sum(count * count for count in counts.values()) - raters) / (raters * (raters - 1))
    ratings = len(items) * raters
    chance = sum((count / ratings) ** 2 for count in shares.values())
    if chance >= 1.0:
        return None
    return (agreement / len(items) - chance) / (1.0 - chance)
