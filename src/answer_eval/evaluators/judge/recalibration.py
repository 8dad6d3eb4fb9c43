"""Recalibration of the judge's ``acceptance`` (and so ``confidence``) to the user's annotators.

Why: annotators draw the line in different places. Of the answers the rules accept, people accept
99% in EVOUNA, 93% in NQ301 and 84% in EfficientQA, so the shipped acceptance model (fitted on the
three sets together) is too sure on one set and too unsure on another. ``answer-eval calibrate``
refits it to the user's labels and writes the fit into the calibration file (JSON, a handful of
numbers: nothing executed).

What is fitted (:data:`KIND`, ``"platt-verdict"``): Platt scaling of the shipped model's score with
the rules' verdict as a second input,

    ``logit(acceptance') = intercept + slope · logit(acceptance) + accepted_shift · [rules accept]``,

fitted by penalised maximum likelihood (Newton's method, deterministic) with an L2 penalty of
:data:`PENALTY` pulling ``(intercept, slope, accepted_shift)`` toward ``(0, 1, 0)``: the shipped
model. Only graded verdicts move (``JudgeVerdict.graded``): an answer with no text stays certain
and a near miss stays at 0.5.

Why this one: the candidates were measured with grouped-by-question splits on each human-judged
set (cross-set verdicts: the acceptance model fitted without the set), fitted on 100, 300 and 1,000
labelled answers and scored on the rest: log-loss of ``acceptance`` (lower is better) and the
agreement of the verdicts that follow it (``benchmarks/judge_recalibration.py``; the table is in
docs/answer-judge.md, "Recalibration"):

- an **intercept shift** alone (one number) moves every answer the same way: no better log-loss,
  and verdicts following it agree less on EVOUNA (0.939 at 300 labels, the rules 0.960): its
  annotators accept more of what the rules accept, not more of what they refuse;
- **Platt** (two numbers) and **Platt with the rules' verdict** (three), both penalised, lower the
  log-loss at every size on every set (NQ301 0.472 → 0.458 at 300, EVOUNA 0.166 → 0.121); the
  second slightly more where the annotators differ most (EVOUNA 0.116 against 0.119 at 1,000): it
  can say "these annotators accept fewer of the rules' accepts", the 84%/93%/99% above;
- **isotonic** scaling overfits below 1,000 labels (NQ301 0.564 against the shipped 0.475 at 100);
- a **full refit** of the 28-feature logistic model is the best at 1,000 labels on EVOUNA
  (log-loss 0.106, verdicts agreeing 0.966 against the rules' 0.960) but the worst at 100 (NQ301
  0.586; verdicts agreeing 0.774 against 0.816), and it needs every answer's features at run time,
  which a verdict does not carry. A few hundred labels is the everyday case, so it is not the one.

The verdict stays the rules' unless the file says ``"recalibrated"`` (``answer-eval calibrate``
chooses that only when grouped cross-validation on the user's labels shows more agreement than the
rules, by a one-sided sign test at :data:`WIN_LEVEL` on the answers where the two differ:
:func:`cross_validate`).

Standard library only, but for the fit (numpy, which haystack-ai brings, imported when fitting).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "KIND",
    "PENALTY",
    "CrossValidation",
    "Recalibration",
    "cross_validate",
    "fit_recalibration",
    "recalibrate_verdicts",
]

KIND = "platt-verdict"
"""The recalibration's name in the calibration file."""

PENALTY = 10.0
"""The L2 penalty pulling the fit toward the shipped model (chosen on cross-validated log-loss, 100-1,000 labels)."""

FOLDS = 5
"""Grouped cross-validation folds."""

WIN_LEVEL = 0.05
"""The one-sided sign test's level on the answers where only one of the two verdicts agrees: the
recalibrated verdicts replace the rules' only when they win more of those at this level. A bare
"more agreeing answers" picked them in 15-40% of random NQ301 splits by noise alone, and they then
agreed less often than the rules on the rest (benchmarks/judge_guarantee.py)."""

_EDGE = 1e-6  # acceptances of exactly 0 or 1 are clipped before the logit
_LIMIT = 50.0  # a coefficient past this is no fit of probabilities: a damaged or hand-edited file
_WRONG = "wrong"  # FailureKind.WRONG, without importing the failure taxonomy at import time


def _logit(probability: float) -> float:
    clipped = min(max(probability, _EDGE), 1.0 - _EDGE)
    return math.log(clipped / (1.0 - clipped))


def _logistic(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class Recalibration:
    """A fitted recalibration: ``logit(a') = intercept + slope · logit(a) + accepted_shift · [rules accept]``.

    :param intercept: Added to every graded answer's log-odds of acceptance.
    :param slope: Multiplies the shipped model's log-odds (``1``: unchanged; ``≥ 0``, so the order is kept).
    :param accepted_shift: Added to the log-odds of the answers the rules accept.
    :param answers: The graded labelled answers it was fitted on.
    """

    intercept: float = 0.0
    slope: float = 1.0
    accepted_shift: float = 0.0
    answers: int = 0

    def acceptance(self, acceptance: float, rules_accept: bool) -> float:
        """The recalibrated probability that a person accepts an answer."""
        z = self.intercept + self.slope * _logit(acceptance) + (self.accepted_shift if rules_accept else 0.0)
        return _logistic(z)

    def to_dict(self) -> dict[str, Any]:
        """The ``recalibration`` object of a calibration file."""
        return {
            "kind": KIND,
            "intercept": self.intercept,
            "slope": self.slope,
            "accepted_shift": self.accepted_shift,
            "answers": self.answers,
            "penalty": PENALTY,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recalibration:
        """Read a file's ``recalibration`` object.

        :raises ValueError: Naming what is wrong: an unknown kind, a coefficient that is not a finite
            number within ±50, a negative slope, a count that is not an int ``≥ 0``.
        """
        if data.get("kind") != KIND:
            raise ValueError(f"recalibration kind {data.get('kind')!r} is unknown (this package reads {KIND!r})")
        numbers = {}
        for name in ("intercept", "slope", "accepted_shift"):
            value = data.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"recalibration {name} must be a finite number, got {value!r}")
            if abs(value) > _LIMIT:
                raise ValueError(f"recalibration {name} is {value!r}, outside [-{_LIMIT:g}, {_LIMIT:g}]: hand-edited?")
            numbers[name] = float(value)
        if numbers["slope"] < 0:
            raise ValueError(f"recalibration slope must be >= 0 (it keeps the model's order), got {numbers['slope']!r}")
        answers = data.get("answers", 0)
        if isinstance(answers, bool) or not isinstance(answers, int) or answers < 0:
            raise ValueError(f"recalibration answers must be a count (an int >= 0), got {answers!r}")
        return cls(numbers["intercept"], numbers["slope"], numbers["accepted_shift"], answers)


def fit_recalibration(
    acceptances: Sequence[float], rules_accept: Sequence[bool], labels: Sequence[bool], penalty: float = PENALTY
) -> Recalibration:
    """Fit the recalibration on graded answers: their shipped acceptance, the rules' verdict and the person's.

    Deterministic (Newton's method from the shipped model, at most 100 steps; numpy, imported
    here); with no answer, the shipped model itself. ``penalty`` must be positive (it keeps the fit
    finite when the labels separate perfectly).

    :raises ValueError: When the three sequences differ in length or ``penalty`` is not positive.
    """
    if not len(acceptances) == len(rules_accept) == len(labels):
        raise ValueError("recalibration: acceptances, rules verdicts and labels differ in length")
    if not penalty > 0:
        raise ValueError(f"recalibration: penalty must be positive, got {penalty!r}")
    import numpy as np

    clipped = np.clip(np.asarray(acceptances, dtype=float), _EDGE, 1.0 - _EDGE)
    design = np.column_stack(
        [np.ones(len(clipped)), np.log(clipped / (1.0 - clipped)), np.asarray(rules_accept, dtype=float)]
    )
    outcome = np.asarray(labels, dtype=float)
    prior = np.array([0.0, 1.0, 0.0])
    theta = prior.copy()
    for _ in range(100):
        q = 1.0 / (1.0 + np.exp(-np.clip(design @ theta, -700.0, 700.0)))
        gradient = design.T @ (q - outcome) + penalty * (theta - prior)
        hessian = design.T @ (design * (q * (1.0 - q))[:, None]) + penalty * np.eye(3)
        step = np.linalg.solve(hessian, gradient)
        theta = theta - step
        if float(np.abs(step).max()) < 1e-10:
            break
    # A negative slope would reverse the shipped model's order: the labels cannot support that with
    # the penalty's pull toward 1 unless they are tiny or adversarial; hold the order.
    intercept, slope, shift = (max(-_LIMIT, min(_LIMIT, float(value))) for value in theta)
    return Recalibration(intercept, max(0.0, slope), shift, len(clipped))


def recalibrate_verdicts(verdicts: Sequence[Any], recalibration: Recalibration, follow: bool = False) -> list[Any]:
    """The verdicts with recalibrated ``acceptance`` and ``confidence`` (graded ones only; the others unchanged).

    ``verdicts`` are :class:`~answer_eval.evaluators.judge.cascade.JudgeVerdict`. With ``follow``,
    a graded verdict also follows the recalibrated acceptance (right when it is at least 0.5), its
    failure kind becoming ``None`` (right) or ``"wrong"``; without it the verdict stays the rules'.
    The evidence says what changed.
    """
    changed = []
    for verdict in verdicts:
        if not verdict.graded:
            changed.append(verdict)
            continue
        acceptance = recalibration.acceptance(verdict.acceptance, verdict.correct)
        correct = acceptance >= 0.5 if follow else verdict.correct
        evidence = f"{verdict.evidence}; recalibrated to your annotators: {acceptance:.0%}"
        failure_kind = verdict.failure_kind
        if correct != verdict.correct:
            said = "right" if verdict.correct else "wrong"
            evidence += f"; the verdict follows the recalibrated acceptance (the rules said {said})"
            failure_kind = None if correct else _WRONG
        changed.append(
            replace(
                verdict,
                correct=correct,
                acceptance=acceptance,
                confidence=acceptance if correct else 1.0 - acceptance,
                evidence=evidence,
                failure_kind=failure_kind,
            )
        )
    return changed


@dataclass(frozen=True)
class CrossValidation:
    """Rules against recalibrated verdicts under grouped cross-validation on the user's labels.

    :param folds: The folds (answers to one question are never split between fitting and testing).
    :param rules_agreeing: Answers on which the rules' verdict agrees with the person.
    :param recalibrated_agreeing: Answers on which the verdict following the recalibration fitted
        without the answer's fold agrees with the person.
    :param answers: The answers.
    :param acceptances: Each answer's out-of-fold recalibrated acceptance (its shipped one when not graded).
    :param recalibrated_only: Answers where only the recalibrated verdict agrees with the person.
    :param rules_only: Answers where only the rules' verdict agrees.
    """

    folds: int
    rules_agreeing: int
    recalibrated_agreeing: int
    answers: int
    acceptances: tuple[float, ...]
    recalibrated_only: int = 0
    rules_only: int = 0

    @property
    def rules_agreement(self) -> float:
        """The rules' agreement with the labels."""
        return self.rules_agreeing / self.answers

    @property
    def recalibrated_agreement(self) -> float:
        """The cross-validated agreement of the verdicts that follow the recalibrated acceptance."""
        return self.recalibrated_agreeing / self.answers

    @property
    def sign_test_p(self) -> float:
        """One-sided sign test p-value of "the recalibrated verdicts agree more often" on the answers they split."""
        from answer_eval.evaluators.judge.binomial import binomial_cdf

        split = self.recalibrated_only + self.rules_only
        return 1.0 - binomial_cdf(self.recalibrated_only - 1, split, 0.5) if split else 1.0

    @property
    def recalibrated_wins(self) -> bool:
        """Whether the recalibrated verdicts agree more often than the rules, by the sign test at :data:`WIN_LEVEL`."""
        return self.recalibrated_agreeing > self.rules_agreeing and self.sign_test_p <= WIN_LEVEL


def _fold_of(groups: Sequence[Hashable], folds: int) -> list[int]:
    """Each answer's fold: groups ordered by a hash of their name, dealt round-robin (deterministic, balanced)."""
    names = sorted({str(group) for group in groups}, key=lambda name: hashlib.sha256(name.encode()).hexdigest())
    fold = {name: i % folds for i, name in enumerate(names)}
    return [fold[str(group)] for group in groups]


def cross_validate(
    verdicts: Sequence[Any], labels: Sequence[bool], groups: Sequence[Hashable], folds: int = FOLDS
) -> CrossValidation | None:
    """Grouped cross-validation of the recalibration on labelled verdicts (``None`` with fewer than 2 groups).

    Each fold's answers get the recalibration fitted on the other folds' graded answers; the
    verdicts that follow it are compared with the rules' on the same answers.
    """
    if not len(verdicts) == len(labels) == len(groups):
        raise ValueError("cross-validation: verdicts, labels and groups differ in length")
    count = min(folds, len({str(group) for group in groups}))
    if count < 2:
        return None
    fold = _fold_of(groups, count)
    acceptances = [verdict.acceptance for verdict in verdicts]
    recalibrated_agreeing = recalibrated_only = rules_only = 0
    for k in range(count):
        train = [i for i in range(len(verdicts)) if fold[i] != k and verdicts[i].graded]
        fitted = fit_recalibration(
            [verdicts[i].acceptance for i in train], [verdicts[i].correct for i in train], [labels[i] for i in train]
        )
        for i in (i for i in range(len(verdicts)) if fold[i] == k):
            verdict = verdicts[i]
            if verdict.graded:
                acceptances[i] = fitted.acceptance(verdict.acceptance, verdict.correct)
                correct = acceptances[i] >= 0.5
            else:
                correct = verdict.correct
            agrees, rules_agree = correct == labels[i], verdict.correct == labels[i]
            recalibrated_agreeing += agrees
            recalibrated_only += agrees and not rules_agree
            rules_only += rules_agree and not agrees
    rules_agreeing = sum(verdict.correct == label for verdict, label in zip(verdicts, labels, strict=True))
    return CrossValidation(
        count,
        rules_agreeing,
        recalibrated_agreeing,
        len(verdicts),
        tuple(acceptances),
        recalibrated_only,
        rules_only,
    )
