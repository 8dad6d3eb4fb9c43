"""Pairwise comparison: which of two systems did better on each item, and whether the difference is real.

Two systems, a *candidate* and a *baseline*, answered the same items and were scored by the same
pointwise metric. Per item the choice is ``CANDIDATE`` (higher score), ``BASELINE`` or ``TIE``
(scores within ``tie_tolerance``). The candidate's win rate counts a tie as half a win, so 0.5
means "no better, no worse" and the win rate is the mean of the per-item points 1 / 0.5 / 0.
The paired significance test is chosen from the scores (see :func:`compare`) and run by
:func:`answer_eval.stats.significance.paired_test`, the same code and the same test names as ``answer-eval compare``.

>>> result = compare([1, 1, 0, 1, 1], [0, 1, 0, 0, 0])
>>> result.choices
['CANDIDATE', 'TIE', 'TIE', 'CANDIDATE', 'CANDIDATE']
>>> result.wins, result.losses, result.ties, result.win_rate, result.test, result.p_value
(3, 0, 2, 0.8, 'mcnemar_exact', 0.25)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from answer_eval.stats.significance import FLOAT_SLACK, PAIRED_TESTS, BootstrapResult, paired_test

__all__ = [
    "DEPRECATED_TESTS",
    "PAIRWISE_TESTS",
    "PairwiseChoice",
    "PairwiseResult",
    "choose",
    "compare",
    "resolve_test",
]

PAIRWISE_TESTS = ("auto", *PAIRED_TESTS)
"""Values of :func:`compare`'s ``test``: ``auto`` (McNemar for 0/1 scores, else the bootstrap) or a
name from :data:`~answer_eval.stats.significance.PAIRED_TESTS` (``mcnemar_exact``, ``sign_test``,
``paired_bootstrap``)."""

DEPRECATED_TESTS = {"mcnemar": "mcnemar_exact", "sign": "sign_test", "bootstrap": "paired_bootstrap"}
"""Old test names, still accepted with a ``DeprecationWarning``, and the names that replace them.

They were ``PairwiseEvaluator``'s own; ``answer-eval compare`` wrote the others for the same tests,
and its outputs are the ones kept.
"""


def resolve_test(test: str, *, stacklevel: int = 2) -> str:
    """The name of the test ``test`` asks for: itself, or the new name of a deprecated one.

    A deprecated name (a key of :data:`DEPRECATED_TESTS`) gives a ``DeprecationWarning``, reported
    ``stacklevel`` frames above the caller (as :func:`warnings.warn` counts from the caller: 2 is
    the caller's caller).

    >>> resolve_test("auto"), resolve_test("sign_test")
    ('auto', 'sign_test')

    :raises ValueError: For a name that is neither in :data:`PAIRWISE_TESTS` nor deprecated.
    """
    if test in DEPRECATED_TESTS:
        new = DEPRECATED_TESTS[test]
        warnings.warn(
            f"test {test!r} is deprecated, use {new!r} (the name written into outputs)",
            DeprecationWarning,
            stacklevel=stacklevel + 1,
        )
        return new
    if test not in PAIRWISE_TESTS:
        raise ValueError(f"test must be one of {', '.join(PAIRWISE_TESTS)}; got {test!r}")
    return test


class PairwiseChoice:
    """The per-item choices, as plain strings (the reference service's names)."""

    CANDIDATE = "CANDIDATE"
    """The candidate scored higher."""
    BASELINE = "BASELINE"
    """The baseline scored higher."""
    TIE = "TIE"
    """The scores differ by no more than the tie tolerance."""


_POINTS = {PairwiseChoice.CANDIDATE: 1.0, PairwiseChoice.TIE: 0.5, PairwiseChoice.BASELINE: 0.0}


def choose(candidate: float, baseline: float, tie_tolerance: float = 0.0) -> str:
    """The choice for one item: ``TIE`` when ``|candidate - baseline| <= tie_tolerance``.

    The tolerance is widened by :data:`answer_eval.stats.significance.FLOAT_SLACK` (1e-12) so that floating-point
    noise neither breaks a tie nor makes one: 0.62 against 0.60 is a tie within 0.02.

    >>> choose(0.62, 0.60), choose(0.62, 0.60, tie_tolerance=0.05)
    ('CANDIDATE', 'TIE')
    """
    difference = candidate - baseline
    if abs(difference) <= tie_tolerance + FLOAT_SLACK:
        return PairwiseChoice.TIE
    return PairwiseChoice.CANDIDATE if difference > 0 else PairwiseChoice.BASELINE


@dataclass(frozen=True)
class PairwiseResult:
    """A pairwise comparison over a batch.

    :param choices: ``CANDIDATE``, ``BASELINE`` or ``TIE`` per item.
    :param candidate_scores: The candidate's pointwise score per item.
    :param baseline_scores: The baseline's pointwise score per item.
    :param test: The significance test run: ``mcnemar_exact``, ``sign_test`` or ``paired_bootstrap``.
    :param p_value: Its two-sided p-value for "the two systems are equally good".
    :param bootstrap: The bootstrap's mean difference and interval when ``test == "paired_bootstrap"``.
    """

    choices: list[str]
    candidate_scores: list[float]
    baseline_scores: list[float]
    test: str
    p_value: float
    bootstrap: BootstrapResult | None = None

    @property
    def wins(self) -> int:
        """Items the candidate won."""
        return self.choices.count(PairwiseChoice.CANDIDATE)

    @property
    def losses(self) -> int:
        """Items the baseline won."""
        return self.choices.count(PairwiseChoice.BASELINE)

    @property
    def ties(self) -> int:
        """Items tied."""
        return self.choices.count(PairwiseChoice.TIE)

    @property
    def points(self) -> list[float]:
        """Per item: 1 for a candidate win, 0.5 for a tie, 0 for a loss."""
        return [_POINTS[choice] for choice in self.choices]

    @property
    def win_rate(self) -> float:
        """The candidate's win rate, a tie counting half: ``(wins + ties / 2) / items``."""
        return (self.wins + self.ties / 2) / len(self.choices)

    @property
    def candidate_score(self) -> float:
        """The candidate's mean score."""
        return sum(self.candidate_scores) / len(self.candidate_scores)

    @property
    def baseline_score(self) -> float:
        """The baseline's mean score."""
        return sum(self.baseline_scores) / len(self.baseline_scores)


def _binary(scores: Sequence[float]) -> bool:
    return all(score in (0, 1) for score in scores)


def compare(
    candidate_scores: Sequence[float],
    baseline_scores: Sequence[float],
    *,
    tie_tolerance: float = 0.0,
    test: str = "auto",
    n_resamples: int = 10_000,
    seed: int | None = 0,
) -> PairwiseResult:
    """Compare two systems' pointwise scores on the same items.

    Tests (all two-sided, paired by item, run by :func:`answer_eval.stats.significance.paired_test`):

    - ``mcnemar_exact``: exact McNemar on 0/1 scores (:func:`answer_eval.stats.significance.mcnemar_exact`);
      refused with ``ValueError`` when a score is not 0 or 1.
    - ``sign_test``: the sign test on the choices: wins against losses, ties left out
      (:func:`answer_eval.stats.significance.sign_test` with ``tie_tolerance``). On 0/1 scores it is McNemar.
    - ``paired_bootstrap``: the paired bootstrap of the mean score difference, ``n_resamples``
      resamples seeded with ``seed`` (:func:`answer_eval.stats.significance.paired_bootstrap`). It ignores
      ``tie_tolerance``: it tests the mean difference, not the choices.
    - ``auto`` (default): ``mcnemar_exact`` when every score of both systems is 0 or 1, else
      ``paired_bootstrap``.

    The old names ``mcnemar``, ``sign`` and ``bootstrap`` still work, with a ``DeprecationWarning``
    (:func:`resolve_test`).

    :raises ValueError: For lists of different lengths, empty lists, a negative tolerance or an
        unknown test.
    """
    test = resolve_test(test)
    if tie_tolerance < 0:
        raise ValueError("tie_tolerance must not be negative")
    if len(candidate_scores) != len(baseline_scores):
        raise ValueError(
            f"candidate has {len(candidate_scores)} scores but baseline has {len(baseline_scores)}; "
            "they must score the same items"
        )
    if not candidate_scores:
        raise ValueError("there are no scores to compare")
    candidate = [float(score) for score in candidate_scores]
    baseline = [float(score) for score in baseline_scores]
    choices = [choose(a, b, tie_tolerance) for a, b in zip(candidate, baseline, strict=True)]
    if test == "auto":
        test = "mcnemar_exact" if _binary(candidate) and _binary(baseline) else "paired_bootstrap"
    paired = paired_test(candidate, baseline, test, tolerance=tie_tolerance, n_resamples=n_resamples, seed=seed)
    return PairwiseResult(choices, candidate, baseline, paired.test, paired.p_value, paired.bootstrap)
