"""The binomial tails the Trust-or-Escalate tests use: ``P(X <= k)`` for ``X ~ Binomial(n, p)``, exact.

:func:`binomial_cdf` sums whole-number tails; :func:`real_binomial_cdf` extends them to real counts
(the regularized incomplete beta function), which effective sample sizes need, and
:func:`disagreement_upper_bound` inverts it: the exact (Clopper-Pearson) bound the threshold test reads.

Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["binomial_cdf", "disagreement_upper_bound", "real_binomial_cdf", "regularized_beta"]

_NEGLIGIBLE = 1e-17  # a term this small relative to the running sum no longer changes a double


def check_count(value: Any, name: str) -> int:
    """``value`` when it is an int (not a bool); ``TypeError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def _lower_tail(k: int, n: int, p: float) -> float:
    """``P(Bin(n, p) ≤ k)`` for ``0 ≤ k ≤ n·p``: the terms shrink from ``i = k`` down, summed relative to it."""
    log_top = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
    log_top += (n - k) * math.log1p(-p)
    odds = (1.0 - p) / p
    relative, term = 1.0, 1.0
    for i in range(k, 0, -1):
        term *= i / (n - i + 1) * odds  # P(i - 1) / P(i)
        relative += term
        if term < _NEGLIGIBLE * relative:
            break
    return min(1.0, math.exp(log_top + math.log(relative)))


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X ≤ k)`` for ``X ~ Binomial(n, p)``, exact up to rounding (log-space with :func:`math.lgamma`).

    The smaller tail is summed from its largest term outwards, so the result keeps its relative
    accuracy when tiny (about 1e-10 at ``n = 100,000``) and costs a few times ``sqrt(n)`` terms.

    :param k: Number of successes (any int; below 0 gives 0, ``n`` or more gives 1).
    :param n: Number of trials, ``≥ 0``.
    :param p: Success probability in ``[0, 1]``.
    :raises TypeError: When ``k`` or ``n`` is not an int.
    :raises ValueError: When ``n < 0`` or ``p`` is outside ``[0, 1]``.

    >>> round(binomial_cdf(0, 22, 0.1), 6)  # 0.9 ** 22: no error in 22 tries at a 10% error rate
    0.098477
    """
    check_count(k, "k")
    if check_count(n, "n") < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if not 0.0 <= p <= 1.0:  # also refuses nan
        raise ValueError(f"p must be in [0, 1], got {p}")
    if k < 0:
        return 0.0
    if k >= n or p == 0.0:
        return 1.0
    if p == 1.0:
        return 0.0
    if k <= n * p:
        return _lower_tail(k, n, p)
    return max(0.0, 1.0 - _lower_tail(n - k - 1, n, 1.0 - p))  # 1 - P(X ≥ k + 1), by symmetry


_BETA_TERMS = 300  # the continued fraction converges in O(sqrt(max(a, b))) terms: 300, or 10 times that
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz), for ``x < (a + 1) / (a + b + 2)``."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    fraction = d
    for m in range(1, max(_BETA_TERMS, 10 * math.isqrt(int(max(a, b))) + 1) + 1):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return fraction


def regularized_beta(a: float, b: float, x: float) -> float:
    """``I_x(a, b)``, the regularized incomplete beta function, for ``a, b > 0`` and ``x`` in ``[0, 1]``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return min(1.0, math.exp(log_front) * _beta_fraction(a, b, x) / a)
    return max(0.0, 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b)


def real_binomial_cdf(k: float, n: float, p: float) -> float:
    """``P(X ≤ k)`` for ``X ~ Binomial(n, p)`` extended to real ``k`` and ``n`` (``I_{1-p}(n - k, k + 1)``).

    Equal to :func:`binomial_cdf` on whole numbers; between them it is what an effective sample
    size (answers divided by a design effect) needs.

    >>> round(real_binomial_cdf(0, 22, 0.1), 6)
    0.098477
    """
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return regularized_beta(n - k, k + 1.0, 1.0 - p)


_PRECISION = 1e-10  # far below any difference a target agreement makes
_STEPS = 200  # the Illinois steps allowed; it takes about ten


def _excess(e: float, n: float, p: float, level: float) -> float:
    """``log P(Bin(n, p) ≤ e) - log level``: falls as ``p`` grows, nearly linear where it crosses 0."""
    return math.log(max(real_binomial_cdf(e, n, p), 1e-300)) - math.log(level)


def disagreement_upper_bound(n: float, e: float, level: float) -> float:
    """The exact one-sided upper bound on a disagreement rate: the ``p`` with ``P(Bin(n, p) ≤ e) = level``.

    ``n`` and ``e`` may be effective (real) counts; 1 when ``n`` is 0 or ``e ≥ n``. The root is
    bracketed and found by the Illinois method; the side returned is the one where the tail is at
    most ``level`` (the bound is never below the exact one).

    >>> round(1 - disagreement_upper_bound(100, 0, 0.1), 4)  # 0.1 ** (1 / 100)
    0.9772
    """
    if n <= 0 or e >= n:
        return 1.0
    low, high = 0.0, 1.0  # excess(low) > 0 >= excess(high)
    f_low, f_high = -math.log(level), _excess(e, n, 1.0 - 1e-16, level)
    side = 0
    for _ in range(_STEPS):
        if high - low < _PRECISION:
            break
        middle = (low * f_high - high * f_low) / (f_high - f_low) if f_high != f_low else (low + high) / 2
        if not low < middle < high:
            middle = (low + high) / 2
        value = _excess(e, n, middle, level)
        if value <= 0:
            high, f_high = middle, value
            f_low = f_low / 2 if side == -1 else f_low
            side = -1
        else:
            low, f_low = middle, value
            f_high = f_high / 2 if side == 1 else f_high
            side = 1
    return high
