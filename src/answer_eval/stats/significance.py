"""Confidence intervals for scores and paired significance tests for comparing two systems.

:func:`paired_test` is the one place that runs a paired test on two systems' per-item scores; both
``answer-eval compare`` (:func:`answer_eval.stats.compare.compare_scores`) and ``PairwiseEvaluator``
(:func:`answer_eval.stats.pairwise.compare`) go through it, so a test has one name (:data:`PAIRED_TESTS`)
and one p-value wherever it is reported.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "FLOAT_SLACK",
    "PAIRED_TESTS",
    "BootstrapResult",
    "McNemarResult",
    "PairedTestResult",
    "SignTestResult",
    "binomial_two_sided",
    "bootstrap_interval",
    "mcnemar_exact",
    "paired_bootstrap",
    "paired_test",
    "sign_test",
    "wilson_interval",
]


def wilson_interval(successes: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion of ``successes`` out of ``total``.

    Preferred over the normal ("Wald") interval because it stays inside [0, 1] and keeps its
    coverage near 0 and 1 and for small samples (Wilson, 1927).

    >>> [round(x, 4) for x in wilson_interval(8, 10)]
    [0.4902, 0.9433]
    """
    if total <= 0:
        raise ValueError("total must be positive")
    if not 0 <= successes <= total:
        raise ValueError("successes must be between 0 and total")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


FLOAT_SLACK = 1e-12
"""Differences this small are floating-point noise: a tolerance is widened by it when comparing scores."""


def binomial_two_sided(successes: int, trials: int) -> float:
    """Exact two-sided p-value of ``successes`` out of ``trials`` under a fair coin (p = 0.5).

    Twice the smaller tail, capped at 1: for p = 0.5 the distribution is symmetric, so this equals
    the "sum of outcomes no more likely than the one observed" rule of ``scipy.stats.binomtest``.
    Computed exactly with integers (``math.comb``), so it stays right for large ``trials``.
    ``trials == 0`` gives 1.0 (no evidence either way).

    >>> round(binomial_two_sided(9, 10), 6)
    0.021484
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError("need 0 <= successes <= trials")
    if trials == 0:
        return 1.0
    smaller = min(successes, trials - successes)
    term = 1  # comb(trials, 0), then comb(trials, i) by the recurrence
    tail = 0
    for i in range(smaller + 1):
        tail += term
        term = term * (trials - i) // (i + 1)
    return min(1.0, 2 * tail / (1 << trials))


def _paired(first: Sequence[float], second: Sequence[float]) -> None:
    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} and {len(second)}")
    if not first:
        raise ValueError("paired samples are empty")


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test on paired 0/1 outcomes.

    :param first_only: Items the first system got right and the second wrong.
    :param second_only: Items the second system got right and the first wrong.
    :param p_value: Two-sided exact p-value (binomial on the discordant pairs).
    """

    first_only: int
    second_only: int
    p_value: float

    @property
    def discordant(self) -> int:
        """Items on which the two systems disagree."""
        return self.first_only + self.second_only


def mcnemar_exact(first: Sequence[float], second: Sequence[float]) -> McNemarResult:
    """Exact McNemar test of two systems' paired 0/1 outcomes on the same items.

    Only the discordant pairs carry information: under the null hypothesis that both systems are
    equally good, each discordant item is a fair coin, so the p-value is the exact two-sided
    binomial test of ``first_only`` out of ``first_only + second_only`` (1.0 when they never
    disagree). Outcomes must be 0 or 1 (``True``/``False`` and ``0.0``/``1.0`` accepted).

    >>> result = mcnemar_exact([1, 1, 1, 1, 0, 1], [0, 0, 0, 0, 0, 1])
    >>> result.first_only, result.second_only, round(result.p_value, 4)
    (4, 0, 0.125)
    """
    _paired(first, second)
    first_only = second_only = 0
    for position, (a, b) in enumerate(zip(first, second, strict=True)):
        if a not in (0, 1) or b not in (0, 1):
            raise ValueError(f"McNemar's test needs 0/1 outcomes; item {position} has {a!r} and {b!r}")
        if a and not b:
            first_only += 1
        elif b and not a:
            second_only += 1
    return McNemarResult(first_only, second_only, binomial_two_sided(first_only, first_only + second_only))


@dataclass(frozen=True)
class SignTestResult:
    """Sign test on paired scores.

    :param positive: Items where the first score is higher (by more than the tolerance).
    :param negative: Items where the second score is higher (by more than the tolerance).
    :param zero: Items counted as ties and left out of the test.
    :param p_value: Two-sided exact p-value (binomial on the non-tied items).
    """

    positive: int
    negative: int
    zero: int
    p_value: float


def sign_test(first: Sequence[float], second: Sequence[float], tolerance: float = 0.0) -> SignTestResult:
    """Two-sided sign test of paired scores: whether one system scores higher more often than the other.

    Each item's difference ``first - second`` is a plus, a minus, or a tie when its absolute value
    is at most ``tolerance`` (plus :data:`FLOAT_SLACK`, so 0.62 - 0.60 is within 0.02). Ties are
    dropped (the usual convention) and the p-value is the exact two-sided binomial test of the
    pluses among the non-tied items. On 0/1 outcomes with a tolerance below 1 it is the same test
    as :func:`mcnemar_exact`.

    >>> result = sign_test([0.9, 0.8, 0.7, 0.6, 0.5], [0.1, 0.2, 0.3, 0.6, 0.4])
    >>> result.positive, result.negative, result.zero, round(result.p_value, 4)
    (4, 0, 1, 0.125)
    """
    _paired(first, second)
    if tolerance < 0:
        raise ValueError("tolerance must not be negative")
    positive = negative = 0
    for a, b in zip(first, second, strict=True):
        difference = a - b
        if abs(difference) <= tolerance + FLOAT_SLACK:
            continue
        if difference > 0:
            positive += 1
        else:
            negative += 1
    zero = len(first) - positive - negative
    return SignTestResult(positive, negative, zero, binomial_two_sided(positive, positive + negative))


@dataclass(frozen=True)
class BootstrapResult:
    """Paired bootstrap of the mean score difference between two systems.

    :param mean_difference: Mean of ``first - second`` over the items.
    :param low: Lower end of the percentile confidence interval of the mean difference.
    :param high: Upper end of that interval.
    :param p_value: Two-sided p-value of "no difference" (see :func:`paired_bootstrap`).
    :param n_resamples: Bootstrap resamples drawn.
    :param confidence: Confidence level of the interval.
    """

    mean_difference: float
    low: float
    high: float
    p_value: float
    n_resamples: int
    confidence: float


def _quantile(ordered: Sequence[float], q: float) -> float:
    # Linear interpolation between order statistics (numpy's default "linear" method).
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def paired_bootstrap(
    first: Sequence[float],
    second: Sequence[float],
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> BootstrapResult:
    """Paired bootstrap test of the mean difference between two systems' scores on the same items.

    Items are resampled with replacement ``n_resamples`` times, keeping each item's pair of scores
    together; each resample gives a mean difference ``d*``. The interval is the percentile interval
    of the ``d*``. The two-sided p-value tests "no difference" by centring the bootstrap
    distribution on zero: ``(1 + #{|d* - d| >= |d|}) / (n_resamples + 1)`` where ``d`` is the
    observed mean difference, so it is never 0 and is 1.0 when ``d == 0``. ``seed`` makes the
    result reproducible (``None`` draws a fresh seed).

    >>> result = paired_bootstrap([0.9, 0.8, 0.7, 0.9], [0.5, 0.6, 0.7, 0.4], n_resamples=2000)
    >>> round(result.mean_difference, 4), result.low > 0, result.p_value < 0.05
    (0.275, True, True)
    """
    _paired(first, second)
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    differences = [float(a) - float(b) for a, b in zip(first, second, strict=True)]
    size = len(differences)
    observed = math.fsum(differences) / size
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(differences, k=size)) / size for _ in range(n_resamples))
    # Rounding noise must not count a resample equal to the observed distance as "more extreme".
    threshold = abs(observed) - 1e-12 * max(1.0, abs(observed))
    extreme = sum(1 for mean in means if abs(mean - observed) >= threshold)
    alpha = 1 - confidence
    return BootstrapResult(
        mean_difference=observed,
        low=_quantile(means, alpha / 2),
        high=_quantile(means, 1 - alpha / 2),
        p_value=min(1.0, (1 + extreme) / (n_resamples + 1)),
        n_resamples=n_resamples,
        confidence=confidence,
    )


PAIRED_TESTS = ("mcnemar_exact", "sign_test", "paired_bootstrap")
"""The paired tests :func:`paired_test` runs, each named after the function here that runs it.

These are the names written into outputs: the ``test`` of ``answer-eval compare`` and ``report``
and of ``PairwiseEvaluator``.
"""


@dataclass(frozen=True)
class PairedTestResult:
    """A paired test of two systems' per-item scores, as :func:`paired_test` ran it.

    :param test: The test run, one of :data:`PAIRED_TESTS`.
    :param p_value: Its two-sided p-value of "the two systems are equally good".
    :param difference: Mean of the first system's scores minus mean of the second's (for
        ``paired_bootstrap`` its :attr:`BootstrapResult.mean_difference`).
    :param first_only: ``mcnemar_exact``: items only the first system gets right, else ``None``.
    :param second_only: ``mcnemar_exact``: items only the second system gets right, else ``None``.
    :param bootstrap: ``paired_bootstrap``: its result (interval included), else ``None``.
    """

    test: str
    p_value: float
    difference: float
    first_only: int | None = None
    second_only: int | None = None
    bootstrap: BootstrapResult | None = None


def paired_test(
    first: Sequence[float],
    second: Sequence[float],
    test: str,
    *,
    tolerance: float = 0.0,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> PairedTestResult:
    """Run the paired test ``test`` (one of :data:`PAIRED_TESTS`) of ``first`` against ``second``.

    ``mcnemar_exact`` needs 0/1 scores (:func:`mcnemar_exact`); ``sign_test`` counts differences
    within ``tolerance`` as ties (:func:`sign_test`); ``paired_bootstrap`` resamples
    ``n_resamples`` times with ``seed`` and gives a ``confidence`` interval of the difference
    (:func:`paired_bootstrap`). Choosing the test is the caller's business.

    >>> result = paired_test([1, 1, 1, 1, 0, 1], [0, 0, 0, 0, 0, 1], "mcnemar_exact")
    >>> result.test, round(result.p_value, 4), round(result.difference, 4), result.first_only
    ('mcnemar_exact', 0.125, 0.6667, 4)

    :raises ValueError: For an unknown test, unpaired or empty samples, or what the test refuses.
    """
    if test not in PAIRED_TESTS:
        raise ValueError(f"test must be one of {', '.join(PAIRED_TESTS)}; got {test!r}")
    if test == "paired_bootstrap":
        bootstrap = paired_bootstrap(first, second, n_resamples, confidence, seed)
        return PairedTestResult(test, bootstrap.p_value, bootstrap.mean_difference, bootstrap=bootstrap)
    first_only: int | None = None
    second_only: int | None = None
    if test == "mcnemar_exact":
        mcnemar = mcnemar_exact(first, second)
        p_value, first_only, second_only = mcnemar.p_value, mcnemar.first_only, mcnemar.second_only
    else:
        p_value = sign_test(first, second, tolerance).p_value
    # Each mean on its own, not the mean of the differences: the value compare has always reported.
    difference = sum(first) / len(first) - sum(second) / len(second)
    return PairedTestResult(test, p_value, difference, first_only, second_only)


def bootstrap_interval(
    scores: Sequence[float], n_resamples: int = 10_000, confidence: float = 0.95, seed: int | None = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of graded scores (one system).

    Items are resampled with replacement ``n_resamples`` times; the interval is the percentile
    interval of the resampled means (the interval :func:`paired_bootstrap` gives for a difference,
    here for one sample). Use :func:`wilson_interval` for 0/1 scores. ``seed`` makes it
    reproducible (``None`` draws a fresh seed). Every score equal gives a zero-width interval.

    >>> [round(x, 4) for x in bootstrap_interval([0.2, 0.4, 0.6, 0.8, 1.0], n_resamples=2000)]
    [0.36, 0.84]
    """
    if not scores:
        raise ValueError("scores are empty")
    if n_resamples < 1:
        raise ValueError("n_resamples must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError("confidence must be between 0 and 1")
    values = [float(score) for score in scores]
    size = len(values)
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(values, k=size)) / size for _ in range(n_resamples))
    alpha = 1 - confidence
    return _quantile(means, alpha / 2), _quantile(means, 1 - alpha / 2)
