"""The exact binomial tail and its extension to real counts: what the Trust-or-Escalate bounds are computed with."""

import doctest
import math

import pytest
from scipy.special import betainc
from scipy.stats import beta, binom

from answer_eval.evaluators.judge import binomial
from answer_eval.evaluators.judge.binomial import (
    binomial_cdf,
    disagreement_upper_bound,
    real_binomial_cdf,
    regularized_beta,
)

# --- binomial_cdf ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "p"),
    [
        (0, 1, 0.5),
        (0, 10, 0.5),
        (3, 10, 0.3),
        (7, 10, 0.3),
        (9, 10, 0.99),
        (50, 100, 0.5),
        (12, 1_000, 0.05),
        (60, 1_000, 0.05),
        (0, 22, 0.1),
        (147, 804, 0.1),
        (1_500, 20_000, 0.1),
        (1_950, 20_000, 0.1),
        (2_000, 20_000, 0.1),
        (2_100, 20_000, 0.1),
        (2_500, 20_000, 0.1),
        (19_990, 20_000, 0.9995),
        (1_000, 20_000, 0.05),
        (393, 9_690, 0.05),
        (9_500, 100_000, 0.1),
        (10_100, 100_000, 0.1),
        (3, 100_000, 1e-5),
    ],
)
def test_binomial_cdf_matches_scipy(k, n, p):
    expected = float(binom.cdf(k, n, p))
    assert expected > 0.0
    assert math.isclose(binomial_cdf(k, n, p), expected, rel_tol=1e-8)


def test_binomial_cdf_edges():
    assert binomial_cdf(-1, 5, 0.5) == 0.0
    assert binomial_cdf(5, 5, 0.5) == binomial_cdf(9, 5, 0.5) == 1.0
    assert binomial_cdf(0, 0, 0.3) == 1.0
    assert binomial_cdf(2, 5, 0.0) == 1.0
    assert binomial_cdf(4, 5, 1.0) == 0.0
    assert binomial_cdf(100, 20_000, 0.1) == pytest.approx(0.0, abs=1e-300)  # about 1e-760: underflows to 0
    assert binomial_cdf(0, 22, 0.1) == pytest.approx(0.9**22, rel=1e-12)


@pytest.mark.parametrize(("k", "n", "p"), [(1, -1, 0.5), (1, 5, -0.1), (1, 5, 1.5), (1, 5, math.nan)])
def test_binomial_cdf_refuses_bad_arguments(k, n, p):
    with pytest.raises(ValueError, match="must be"):
        binomial_cdf(k, n, p)


def test_binomial_cdf_refuses_non_integer_counts():
    with pytest.raises(TypeError):
        binomial_cdf(1.5, 5, 0.5)  # type: ignore[arg-type]


# --- the binomial extended to real counts (an effective sample size: answers over a design effect) -


@pytest.mark.parametrize(
    ("a", "b", "x"),
    [
        (1.0, 1.0, 0.3),
        (0.5, 0.5, 0.5),
        (2.5, 7.25, 0.1),
        (30.0, 1.0, 0.95),
        (1.0, 30.0, 0.01),
        (97.3, 3.7, 0.97),
        (100.0, 11.0, 0.9),
        (804.0, 148.0, 0.82),
        (5_886.0, 1_000.0, 0.85),
        (9_296.5, 394.5, 0.96),
        (9_296.5, 394.5, 0.99),
        (20_000.0, 1.0, 0.9999),
    ],
)
def test_regularized_beta_matches_scipy(a, b, x):
    expected = float(betainc(a, b, x))
    assert math.isclose(regularized_beta(a, b, x), expected, rel_tol=1e-9, abs_tol=1e-300)


def test_regularized_beta_edges():
    assert regularized_beta(2.0, 3.0, 0.0) == 0.0
    assert regularized_beta(2.0, 3.0, 1.0) == 1.0
    assert regularized_beta(2.0, 3.0, -0.5) == 0.0
    # Symmetry: I_x(a, b) = 1 - I_{1-x}(b, a).
    assert math.isclose(regularized_beta(7.5, 2.25, 0.6), 1 - regularized_beta(2.25, 7.5, 0.4), rel_tol=1e-12)


@pytest.mark.parametrize(
    ("k", "n", "p"),
    [(0, 1, 0.5), (3, 10, 0.3), (7, 10, 0.3), (0, 22, 0.1), (147, 804, 0.1), (12, 1_000, 0.05), (393, 9_690, 0.05)],
)
def test_real_binomial_cdf_is_binomial_cdf_on_whole_numbers(k, n, p):
    assert math.isclose(real_binomial_cdf(k, n, p), binomial_cdf(k, n, p), rel_tol=1e-9)
    assert math.isclose(real_binomial_cdf(float(k), float(n), p), float(binom.cdf(k, n, p)), rel_tol=1e-9)


def test_real_binomial_cdf_between_whole_numbers():
    # Between whole counts it is I_{1-p}(n - k, k + 1), and grows with k as a tail should.
    assert math.isclose(real_binomial_cdf(2.5, 40.4, 0.1), float(betainc(37.9, 3.5, 0.9)), rel_tol=1e-9)
    values = [real_binomial_cdf(k / 4, 40.4, 0.1) for k in range(0, 40)]
    assert values == sorted(values)
    assert real_binomial_cdf(-0.5, 10.0, 0.2) == 0.0
    assert real_binomial_cdf(10.5, 10.0, 0.2) == real_binomial_cdf(3.0, 10.0, 0.0) == 1.0
    assert real_binomial_cdf(3.0, 10.0, 1.0) == 0.0


def _exact_upper(n: float, e: float, level: float) -> float:
    """The Clopper-Pearson one-sided upper bound on a rate: ``P(Bin(n, p) ≤ e) = level``, real counts allowed."""
    return 1.0 - float(beta.ppf(level, n - e, e + 1))


@pytest.mark.parametrize(
    ("n", "e", "level"),
    [
        (22, 0, 0.1),
        (30, 1, 0.05),
        (100, 10, 0.05),
        (804, 147, 0.05),
        (9_690, 393, 0.05),
        (20_000, 0, 0.05),
        (33.3, 4.1, 0.05),
        (97.6, 0.0, 0.1),
        (1_234.5, 61.7, 0.025),
    ],
)
def test_disagreement_upper_bound_is_the_exact_one(n, e, level):
    bound = disagreement_upper_bound(n, e, level)
    exact = _exact_upper(n, e, level)
    assert bound == pytest.approx(exact, abs=1e-9)
    assert bound >= exact - 1e-12  # never below the exact bound: the tail there is at most the level
    if float(e).is_integer() and float(n).is_integer():  # and with integers, the same as scipy's binomial
        assert beta.ppf(1 - level, e + 1, n - e) == pytest.approx(bound, abs=1e-9)


def test_disagreement_upper_bound_edges():
    assert disagreement_upper_bound(0, 0, 0.1) == 1.0
    assert disagreement_upper_bound(10, 10, 0.1) == 1.0
    assert disagreement_upper_bound(10, 12, 0.1) == 1.0
    assert 1 - disagreement_upper_bound(100, 0, 0.1) == pytest.approx(0.1 ** (1 / 100), abs=1e-9)
    # More disagreements or a smaller level, a higher bound.
    assert disagreement_upper_bound(100, 5, 0.1) < disagreement_upper_bound(100, 6, 0.1)
    assert disagreement_upper_bound(100, 5, 0.1) < disagreement_upper_bound(100, 5, 0.05)


def test_docstring_examples():
    result = doctest.testmod(binomial)
    assert result.attempted > 0
    assert result.failed == 0
