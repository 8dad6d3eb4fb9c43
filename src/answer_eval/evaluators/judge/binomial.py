"""The exact binomial lower tail the Trust-or-Escalate tests use: ``P(X <= k)`` for ``X ~ Binomial(n, p)``.

Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["binomial_cdf", "check_count"]

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
