"""Paired significance tests in answer_eval.stats.significance, checked against scipy on known values."""

import random

import numpy as np
import pytest
from scipy import stats as scipy_stats

from answer_eval.stats.significance import (
    PAIRED_TESTS,
    binomial_two_sided,
    mcnemar_exact,
    paired_bootstrap,
    paired_test,
    sign_test,
)


@pytest.mark.parametrize(
    ("successes", "trials"),
    [(0, 1), (1, 1), (9, 10), (3, 7), (50, 100), (40, 100), (0, 5), (5, 5), (480, 1000), (13, 40), (1, 2)],
)
def test_binomial_two_sided_equals_scipy_binomtest(successes, trials):
    expected = scipy_stats.binomtest(successes, trials, 0.5, alternative="two-sided").pvalue
    assert binomial_two_sided(successes, trials) == pytest.approx(expected, rel=1e-12)


def test_binomial_with_no_trials_is_no_evidence():
    assert binomial_two_sided(0, 0) == 1.0


def test_binomial_stays_exact_for_large_samples():
    expected = scipy_stats.binomtest(4_850, 10_000, 0.5).pvalue
    assert binomial_two_sided(4_850, 10_000) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("successes", "trials"), [(-1, 3), (4, 3), (0, -1)])
def test_binomial_refuses_impossible_counts(successes, trials):
    with pytest.raises(ValueError, match="successes"):
        binomial_two_sided(successes, trials)


def _binary_pairs(seed, size, p_first, p_second):
    rng = random.Random(seed)
    return [int(rng.random() < p_first) for _ in range(size)], [int(rng.random() < p_second) for _ in range(size)]


@pytest.mark.parametrize("seed", range(6))
def test_mcnemar_is_the_binomial_test_on_discordant_pairs(seed):
    first, second = _binary_pairs(seed, 60, 0.7, 0.55)
    result = mcnemar_exact(first, second)
    b = sum(1 for a, c in zip(first, second, strict=True) if a == 1 and c == 0)
    c = sum(1 for a, d in zip(first, second, strict=True) if a == 0 and d == 1)
    assert (result.first_only, result.second_only, result.discordant) == (b, c, b + c)
    assert result.p_value == pytest.approx(scipy_stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-12)


def test_mcnemar_known_table_and_symmetry():
    # 2x2 table with 10 discordant pairs split 9 / 1: p = 22/1024.
    first = [1] * 9 + [0] * 1 + [1] * 30 + [0] * 20
    second = [0] * 9 + [1] * 1 + [1] * 30 + [0] * 20
    assert mcnemar_exact(first, second).p_value == pytest.approx(22 / 1024)
    assert mcnemar_exact(second, first).p_value == mcnemar_exact(first, second).p_value


def test_mcnemar_with_no_disagreement_is_one():
    assert mcnemar_exact([1, 0, 1], [1, 0, 1]).p_value == 1.0


def test_mcnemar_accepts_bools_and_float_outcomes():
    assert mcnemar_exact([True, True, False], [0.0, 0.0, 0.0]).first_only == 2


def test_mcnemar_refuses_graded_scores_naming_the_item():
    with pytest.raises(ValueError, match="item 1"):
        mcnemar_exact([1, 0.5], [0, 0])


@pytest.mark.parametrize(("first", "second"), [([1, 0], [1]), ([], [])], ids=["different lengths", "empty"])
def test_paired_tests_refuse_unpaired_or_empty_samples(first, second):
    for test in (mcnemar_exact, sign_test, paired_bootstrap):
        with pytest.raises(ValueError, match="paired samples"):
            test(first, second)


@pytest.mark.parametrize("seed", range(5))
def test_sign_test_equals_scipy_binomtest_on_the_signs(seed):
    rng = random.Random(seed)
    first = [round(rng.random(), 1) for _ in range(50)]
    second = [round(rng.random() * 0.9, 1) for _ in range(50)]
    result = sign_test(first, second)
    plus = sum(a > b for a, b in zip(first, second, strict=True))
    minus = sum(a < b for a, b in zip(first, second, strict=True))
    assert (result.positive, result.negative, result.zero) == (plus, minus, 50 - plus - minus)
    assert result.p_value == pytest.approx(scipy_stats.binomtest(plus, plus + minus, 0.5).pvalue, rel=1e-12)


def test_sign_test_tolerance_turns_small_differences_into_ties():
    result = sign_test([0.52, 0.9, 0.1], [0.50, 0.2, 0.3], tolerance=0.05)
    assert (result.positive, result.negative, result.zero) == (1, 1, 1)
    with pytest.raises(ValueError, match="tolerance"):
        sign_test([1], [0], tolerance=-0.1)


def test_sign_test_on_binary_outcomes_is_mcnemar():
    first, second = _binary_pairs(11, 80, 0.6, 0.45)
    assert sign_test(first, second).p_value == mcnemar_exact(first, second).p_value


def _graded_pairs(seed, size, shift):
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.8, size)
    return list(base + rng.normal(shift, 0.15, size)), list(base)


def test_paired_bootstrap_interval_agrees_with_scipy_bootstrap():
    first, second = _graded_pairs(1, 150, 0.03)
    ours = paired_bootstrap(first, second, n_resamples=10_000, seed=7)
    reference = scipy_stats.bootstrap(
        (np.array(first), np.array(second)),
        lambda a, b, axis: np.mean(a - b, axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile",
        random_state=np.random.default_rng(7),
    )
    assert ours.mean_difference == pytest.approx(float(np.mean(np.array(first) - np.array(second))))
    low, high = reference.confidence_interval
    width = high - low
    assert ours.low == pytest.approx(low, abs=0.03 * width)
    assert ours.high == pytest.approx(high, abs=0.03 * width)


@pytest.mark.parametrize(("seed", "shift"), [(2, 0.03), (3, 0.0), (4, 0.05)])
def test_paired_bootstrap_p_value_is_close_to_the_paired_t_test_on_large_samples(seed, shift):
    first, second = _graded_pairs(seed, 200, shift)
    ours = paired_bootstrap(first, second, n_resamples=10_000, seed=seed)
    expected = scipy_stats.ttest_rel(first, second).pvalue
    assert ours.p_value == pytest.approx(expected, abs=0.015)


def test_paired_bootstrap_is_reproducible_with_a_seed():
    first, second = _graded_pairs(5, 40, 0.02)
    assert paired_bootstrap(first, second, n_resamples=500, seed=3) == paired_bootstrap(
        first, second, n_resamples=500, seed=3
    )
    assert paired_bootstrap(first, second, n_resamples=500, seed=3) != paired_bootstrap(
        first, second, n_resamples=500, seed=4
    )


def test_paired_bootstrap_of_identical_systems_has_p_one_and_a_zero_interval():
    scores = [0.1, 0.5, 0.9, 0.3]
    result = paired_bootstrap(scores, scores, n_resamples=200)
    assert result.p_value == 1.0
    assert (result.mean_difference, result.low, result.high) == (0.0, 0.0, 0.0)


def test_paired_bootstrap_p_value_is_never_zero():
    result = paired_bootstrap([1.0] * 30, [0.0] * 30, n_resamples=999)
    assert result.p_value == pytest.approx(1 / 1000)
    assert result.low == result.high == 1.0


@pytest.mark.parametrize(("option", "value"), [("n_resamples", 0), ("confidence", 1.0), ("confidence", 0)])
def test_paired_bootstrap_refuses_bad_options(option, value):
    with pytest.raises(ValueError, match=option):
        paired_bootstrap([1, 0], [0, 1], **{option: value})


def test_paired_test_runs_each_test_under_its_function_s_name():
    first, second = [0.9, 0.7, 0.65, 0.8, 0.41, 0.75, 0.6, 0.7], [0.5, 0.6, 0.7, 0.3, 0.40, 0.5, 0.2, 0.1]
    assert PAIRED_TESTS == ("mcnemar_exact", "sign_test", "paired_bootstrap")
    boot = paired_test(first, second, "paired_bootstrap", n_resamples=800, confidence=0.9, seed=4)
    assert boot.bootstrap == paired_bootstrap(first, second, n_resamples=800, confidence=0.9, seed=4)
    assert (boot.test, boot.p_value, boot.difference) == (
        "paired_bootstrap",
        boot.bootstrap.p_value,
        boot.bootstrap.mean_difference,
    )
    sign = paired_test(first, second, "sign_test", tolerance=0.02)
    assert (sign.test, sign.p_value) == ("sign_test", sign_test(first, second, 0.02).p_value)
    assert (sign.first_only, sign.second_only, sign.bootstrap) == (None, None, None)
    assert sign.difference == pytest.approx(sum(first) / 8 - sum(second) / 8)
    wins, losses = [1, 1, 1, 0, 1, 0], [0, 0, 1, 1, 1, 0]
    exact = paired_test(wins, losses, "mcnemar_exact")
    assert (exact.test, exact.first_only, exact.second_only) == ("mcnemar_exact", 2, 1)
    assert exact.p_value == mcnemar_exact(wins, losses).p_value
    assert exact.difference == pytest.approx(1 / 6)


def test_paired_test_refuses_an_unknown_test():
    with pytest.raises(ValueError, match="test must be one of mcnemar_exact, sign_test, paired_bootstrap"):
        paired_test([1], [0], "mcnemar")
