"""Comparing two systems on the same questions: scores with intervals, the paired test, the changed items.

Two files of answers to the same questions are aligned row by row (:func:`align`); each evaluator's
per-item scores of the two systems are then compared by :func:`compare_scores`: each system's
score with a 95% interval (Wilson for 0/1 scores, a seeded percentile bootstrap for graded ones),
the difference B - A with its paired test (exact McNemar for 0/1, paired bootstrap for graded; run
by :func:`answer_eval.stats.significance.paired_test`, as ``PairwiseEvaluator``'s are), and the items whose
verdict changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from answer_eval.errors import InputError
from answer_eval.inputs.item_files import Items, display_text
from answer_eval.reports.scorers import EvaluatorSpec
from answer_eval.stats.significance import FLOAT_SLACK, bootstrap_interval, paired_test, wilson_interval

__all__ = ["ChangedItem", "Difference", "EvaluatorComparison", "ScoreEstimate", "align", "compare_scores", "estimate"]

CONFIDENCE = 0.95
"""Confidence level of every interval."""


def _short(text: str | None, limit: int = 80) -> str:
    text = "" if text is None else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def align(a: Items, b: Items) -> None:
    """Check that two files hold the same questions with the same acceptable answers, row by row.

    Questions are compared with white space at the ends ignored; a row with no question matches
    only a row with none. :raises InputError: Naming the first row that differs (in the second
    file, with the first file's line), or the first row of the longer file that has no partner.
    """
    for position, (question_a, question_b) in enumerate(zip(a.questions, b.questions, strict=False)):
        if (question_a or "").strip() != (question_b or "").strip() or (question_a is None) != (question_b is None):
            raise InputError(
                f"question differs from {a.path} line {a.lines[position]}: "
                f"{_short(question_b)!r} here, {_short(question_a)!r} there; the files must hold the same "
                "questions in the same order",
                b.path,
                b.lines[position],
            )
        if a.golds[position] != b.golds[position]:
            raise InputError(
                f"acceptable answers differ from {a.path} line {a.lines[position]}: "
                f"{list(b.golds[position])!r} here, {list(a.golds[position])!r} there",
                b.path,
                b.lines[position],
            )
    if len(a) != len(b):
        longer = a if len(a) > len(b) else b
        raise InputError(
            f"{a.path} has {len(a)} rows and {b.path} has {len(b)}: this row has no partner in the other file",
            longer.path,
            longer.lines[min(len(a), len(b))],
        )


@dataclass(frozen=True)
class ScoreEstimate:
    """A system's mean score with its confidence interval.

    :param score: Mean score over the items.
    :param low: Lower end of the interval.
    :param high: Upper end of the interval.
    :param method: ``"wilson"`` (0/1 scores) or ``"bootstrap"`` (graded; percentile, seeded).
    """

    score: float
    low: float
    high: float
    method: str


def estimate(
    scores: Sequence[float], graded: bool, *, seed: int | None = 0, n_resamples: int = 10_000
) -> ScoreEstimate:
    """Mean of ``scores`` with a 95% interval: Wilson for 0/1 scores, percentile bootstrap for graded ones."""
    mean = sum(scores) / len(scores)
    if graded:
        low, high = bootstrap_interval(scores, n_resamples, CONFIDENCE, seed)
        return ScoreEstimate(mean, low, high, "bootstrap")
    low, high = wilson_interval(sum(1 for score in scores if score >= 0.5), len(scores), CONFIDENCE)
    return ScoreEstimate(mean, low, high, "wilson")


@dataclass(frozen=True)
class Difference:
    """The difference B - A of two systems' mean scores and its paired test.

    :param value: Mean of B's scores minus mean of A's.
    :param test: ``"mcnemar_exact"`` (0/1 scores) or ``"paired_bootstrap"`` (graded), names from
        :data:`answer_eval.stats.significance.PAIRED_TESTS`.
    :param p_value: Two-sided p-value of "no difference".
    :param low: Lower end of the bootstrap interval of the difference (``None`` for McNemar).
    :param high: Upper end of that interval (``None`` for McNemar).
    :param a_only: Items only A gets right (McNemar), else ``None``.
    :param b_only: Items only B gets right (McNemar), else ``None``.
    """

    value: float
    test: str
    p_value: float
    low: float | None = None
    high: float | None = None
    a_only: int | None = None
    b_only: int | None = None


@dataclass(frozen=True)
class ChangedItem:
    """An item whose score differs between the two systems.

    :param position: Its position (0-based) among the items.
    :param line_a: Its line in A's file.
    :param line_b: Its line in B's file.
    :param question: The question, if the files have one.
    :param golds: The acceptable answers.
    :param prediction_a: A's answer as text.
    :param prediction_b: B's answer as text.
    :param score_a: A's score.
    :param score_b: B's score.
    """

    position: int
    line_a: int
    line_b: int
    question: str | None
    golds: tuple[str, ...]
    prediction_a: str
    prediction_b: str
    score_a: float
    score_b: float


@dataclass(frozen=True)
class EvaluatorComparison:
    """One evaluator's comparison of two systems.

    :param evaluator: The evaluator's registry name.
    :param title: Its name in reports.
    :param graded: Whether its scores are graded rather than 0/1.
    :param a: System A's score.
    :param b: System B's score.
    :param difference: B - A with its paired test.
    :param changed: The items whose score changed: for 0/1 scores the items whose verdict flipped,
        in file order; for graded scores every item whose score moved, largest change first.
    """

    evaluator: str
    title: str
    graded: bool
    a: ScoreEstimate
    b: ScoreEstimate
    difference: Difference
    changed: tuple[ChangedItem, ...]

    def to_json(self) -> dict[str, Any]:
        """The comparison as one JSON-ready mapping (every changed item included)."""
        data = asdict(self)
        data["changed"] = [{**asdict(item), "golds": list(item.golds)} for item in self.changed]
        return data


def compare_scores(
    spec: EvaluatorSpec,
    a: Items,
    b: Items,
    scores_a: Sequence[float],
    scores_b: Sequence[float],
    *,
    seed: int | None = 0,
    n_resamples: int = 10_000,
) -> EvaluatorComparison:
    """Compare two aligned systems' per-item scores under one evaluator (see :class:`EvaluatorComparison`)."""
    if not len(a) == len(b) == len(scores_a) == len(scores_b):
        raise ValueError("the two systems must have one score per item, on the same items")
    # B first: the difference is B - A, and B is PairwiseEvaluator's candidate, A its baseline.
    if spec.graded:
        paired = paired_test(
            scores_b, scores_a, "paired_bootstrap", n_resamples=n_resamples, confidence=CONFIDENCE, seed=seed
        )
    else:
        # The test is chosen by the evaluator, not by the scores (a graded metric can happen to give
        # only 0s and 1s); a 0/1 evaluator's verdict is ``score >= 0.5``.
        paired = paired_test(
            [score >= 0.5 for score in scores_b], [score >= 0.5 for score in scores_a], "mcnemar_exact"
        )
    bootstrap = paired.bootstrap
    difference = Difference(
        paired.difference,
        paired.test,
        paired.p_value,
        None if bootstrap is None else bootstrap.low,
        None if bootstrap is None else bootstrap.high,
        a_only=paired.second_only,
        b_only=paired.first_only,
    )
    moved = [i for i, (x, y) in enumerate(zip(scores_a, scores_b, strict=True)) if abs(y - x) > FLOAT_SLACK]
    if spec.graded:
        moved.sort(key=lambda i: (-abs(scores_b[i] - scores_a[i]), i))
    changed = tuple(
        ChangedItem(
            i,
            a.lines[i],
            b.lines[i],
            a.questions[i],
            a.golds[i],
            display_text(a.predictions[i]),
            display_text(b.predictions[i]),
            float(scores_a[i]),
            float(scores_b[i]),
        )
        for i in moved
    )
    return EvaluatorComparison(
        spec.name,
        spec.title,
        spec.graded,
        estimate(scores_a, spec.graded, seed=seed, n_resamples=n_resamples),
        estimate(scores_b, spec.graded, seed=seed, n_resamples=n_resamples),
        difference,
        changed,
    )
