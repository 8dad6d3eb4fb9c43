"""Calibration data for Trust or Escalate, and the recalibration of the judge's acceptance to the user's annotators.

The data (:class:`Calibration`): per-bin counts of the judge's verdicts people agree and disagree
with, on the :data:`GRID_STEPS` grid of thresholds, made from pairs of (confidence, agreed) or read
from the data shipped beside this module (``calibration.json``, written by
``scripts/judge_calibration.py``: the cross-set confidences of the shipped judge on three
human-judged sets, binned, with each answer's question);
:func:`~answer_eval.evaluators.judge.guarantee.choose_threshold` tests thresholds on them.

Recalibration (:class:`Recalibration`) of the judge's ``acceptance`` (and so ``confidence``). Why:
annotators draw the line in different places. Of the answers the rules accept, people accept
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
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = [
    "CALIBRATION_FORMAT",
    "DEFAULT_CALIBRATION_PATH",
    "GRID_STEPS",
    "MAX_ANSWER_ROWS",
    "PENALTY",
    "Calibration",
    "Recalibration",
    "calibration_set_names",
    "cross_validate",
    "fit_recalibration",
    "grid_index",
    "recalibrate_verdicts",
]


DEFAULT_CALIBRATION_PATH = Path(__file__).with_name("calibration.json")
"""The calibration data shipped with the package (cross-set confidences on three human-judged sets)."""

GRID_STEPS = 200
"""The threshold grid and the calibration bins: edges ``k / GRID_STEPS`` (0.005 apart)."""

CALIBRATION_FORMAT = 1
"""The version of the ``calibration.json`` layout this module reads."""


def _bin(confidence: float) -> int:
    """The largest ``k`` in ``0..GRID_STEPS`` with ``confidence ≥ k / GRID_STEPS`` (exactly as a threshold compares)."""
    index = min(int(confidence * GRID_STEPS), GRID_STEPS)
    if confidence < index / GRID_STEPS:
        return index - 1
    if index < GRID_STEPS and confidence >= (index + 1) / GRID_STEPS:
        return index + 1
    return index


MAX_ANSWER_ROWS = 10**7
"""The most labelled answers a calibration file may list one by one (a few MB of JSON each million)."""


def grid_index(edge: Any, where: str) -> int:
    """The grid index of a bin's lower edge read from a file; ``ValueError`` naming ``where`` when it is none.

    A NaN, an infinity or an edge off the grid (0.1234) is refused with the edge named, never converted.
    """
    if isinstance(edge, bool) or not isinstance(edge, (int, float)) or not math.isfinite(edge):
        raise ValueError(f"{where}: a lower edge must be a finite number, got {str(edge)[:40]}")
    index = round(edge * GRID_STEPS)
    if not (0 <= index <= GRID_STEPS and math.isclose(edge, index / GRID_STEPS, abs_tol=1e-9)):
        raise ValueError(f"{where} has a lower edge off the grid: {edge!r}")
    return index


def _counts(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"calibration: {where} must be a count (an int >= 0)")
    return value


def _read_bins(bins: Any, where: str, agree: list[int], disagree: list[int]) -> int:
    """Add one set's ``[lower_edge, agree, disagree]`` rows to the per-bin counts; return its answer total."""
    if not isinstance(bins, list):
        raise ValueError(f"calibration: {where} must be a list of [lower_edge, agree, disagree]")
    total = 0
    for row in bins:
        if not (isinstance(row, list) and len(row) == 3):
            raise ValueError(f"calibration: {where} has a row that is not [lower_edge, agree, disagree]: {row!r}")
        index = grid_index(row[0], f"calibration: {where}")
        agreeing, disagreeing = _counts(row[1], f"{where} agree"), _counts(row[2], f"{where} disagree")
        agree[index] += agreeing
        disagree[index] += disagreeing
        total += agreeing + disagreeing
    return total


@dataclass(frozen=True)
class Calibration:
    """Human-judged calibration answers counted per confidence bin: enough to evaluate any grid threshold exactly.

    Bin ``k`` (``0 ≤ k ≤ GRID_STEPS``) holds the answers with ``k / GRID_STEPS ≤ confidence <
    (k + 1) / GRID_STEPS``; the last bin holds the confidences of exactly 1.0.

    Answers to one question are not independent draws (a hard question trips several systems'
    answers alike), so the threshold test needs to know which answers share a question:
    ``questions`` gives, per bin, the question of each answer it counts, agreeing ones first
    (``questions[k]`` lists ``agree[k]`` questions, then ``disagree[k]``). Without it every answer
    is its own question (files written before questions were recorded).

    :param agree: Per bin, the answers whose verdict the person agrees with.
    :param disagree: Per bin, the answers whose verdict the person disagrees with.
    :param sets: The names of the sets counted (informative).
    :param questions: Per bin, each counted answer's question (an int), or ``None`` (see above).
    """

    agree: tuple[int, ...]
    disagree: tuple[int, ...]
    sets: tuple[str, ...] = ()
    questions: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self) -> None:
        """Check that both count tuples have one count ``≥ 0`` per bin, and ``questions`` one question an answer."""
        for name in ("agree", "disagree"):
            counts = getattr(self, name)
            if len(counts) != GRID_STEPS + 1:
                raise ValueError(f"calibration: {name} needs {GRID_STEPS + 1} bins, got {len(counts)}")
            for k, count in enumerate(counts):
                _counts(count, f"{name}[{k}]")
        if self.questions is not None:
            if len(self.questions) != GRID_STEPS + 1:
                raise ValueError(f"calibration: questions needs {GRID_STEPS + 1} bins, got {len(self.questions)}")
            for k, asked in enumerate(self.questions):
                if len(asked) != self.agree[k] + self.disagree[k]:
                    raise ValueError(f"calibration: questions[{k}] must name one question for each answer of bin {k}")

    def answers(self) -> list[tuple[int, bool, int]]:
        """Every answer as ``(bin, agreed, question)``, from the most confident bin down.

        Without :attr:`questions`, each answer is its own question (numbered in this order).
        """
        found: list[tuple[int, bool, int]] = []
        for k in range(GRID_STEPS, -1, -1):
            flags = [True] * self.agree[k] + [False] * self.disagree[k]
            asked = self.questions[k] if self.questions is not None else range(len(found), len(found) + len(flags))
            found.extend((k, agreed, question) for agreed, question in zip(flags, asked, strict=True))
        return found

    @property
    def total(self) -> int:
        """The number of calibration answers."""
        return sum(self.agree) + sum(self.disagree)

    def kept(self, threshold: float) -> tuple[int, int]:
        """The answers with ``confidence ≥ threshold`` and the disagreements among them (exact on grid thresholds)."""
        if threshold > 1.0:
            return 0, 0
        first = 0 if threshold <= 0.0 else math.ceil(threshold * GRID_STEPS - 1e-9)
        disagreeing = sum(self.disagree[first:])
        return sum(self.agree[first:]) + disagreeing, disagreeing

    @classmethod
    def from_pairs(
        cls,
        confidences: Iterable[float],
        agrees: Iterable[bool],
        name: str = "given",
        groups: Iterable[Hashable] | None = None,
    ) -> Calibration:
        """Count calibration data given in memory: each answer's confidence and whether the person agrees.

        :param groups: Each answer's question (any hashable: answers to one question are counted as
            one cluster by the threshold test); ``None``: every answer its own.
        :raises ValueError: When the sequences differ in length or a confidence is not a number in ``[0, 1]``.
        """
        values, agreed_list = list(confidences), list(agrees)
        if len(values) != len(agreed_list):
            raise ValueError(f"calibration: {len(values)} confidences but {len(agreed_list)} agreements")
        given = None if groups is None else list(groups)
        if given is not None and len(given) != len(values):
            raise ValueError(f"calibration: {len(values)} confidences but {len(given)} questions")
        numbers: dict[Hashable, int] = {}
        placed: list[tuple[int, bool, int]] = []
        for i, (confidence, agreed) in enumerate(zip(values, agreed_list, strict=True)):
            if isinstance(confidence, bool) or not (isinstance(confidence, (int, float)) and 0 <= confidence <= 1):
                raise ValueError(f"calibration: confidence {i} must be a number in [0, 1], got {confidence!r}")
            question = i if given is None else numbers.setdefault(given[i], len(numbers))
            placed.append((_bin(float(confidence)), bool(agreed), question))
        return cls.from_answers(placed, name, clustered=given is not None)

    @classmethod
    def from_answers(
        cls, answers: Iterable[tuple[int, bool, int]], name: str = "given", clustered: bool = True
    ) -> Calibration:
        """Count answers given as ``(bin, agreed, question)`` (what :meth:`answers` returns).

        :param clustered: Record the questions (``False``: every answer its own question).
        """
        agree, disagree = [0] * (GRID_STEPS + 1), [0] * (GRID_STEPS + 1)
        agreeing: list[list[int]] = [[] for _ in range(GRID_STEPS + 1)]
        disagreeing: list[list[int]] = [[] for _ in range(GRID_STEPS + 1)]
        for k, agreed, question in answers:
            (agree if agreed else disagree)[k] += 1
            (agreeing if agreed else disagreeing)[k].append(question)
        questions = tuple(tuple(a + d) for a, d in zip(agreeing, disagreeing, strict=True)) if clustered else None
        return cls(tuple(agree), tuple(disagree), (name,), questions)

    @property
    def name(self) -> str:
        """The sets counted, joined by ``+`` (``"calibration"`` when none is named)."""
        return "+".join(self.sets) or "calibration"

    @classmethod
    def pooled(cls, parts: Iterable[Calibration]) -> Calibration:
        """The counts of ``parts`` summed into one calibration (their set names in order).

        :raises ValueError: When there is no part.
        """
        chosen = list(parts)
        if not chosen:
            raise ValueError("calibration: nothing to pool")
        names = tuple(name for part in chosen for name in part.sets)
        if any(part.questions is not None for part in chosen):  # the parts' questions are kept apart
            answers: list[tuple[int, bool, int]] = []
            offset = 0
            for part in chosen:
                own = part.answers()
                answers.extend((k, agreed, question + offset) for k, agreed, question in own)
                offset += 1 + max((question for _, _, question in own), default=-1)
            pooled = cls.from_answers(answers)
            return cls(pooled.agree, pooled.disagree, names, pooled.questions)
        agree = tuple(sum(counts) for counts in zip(*(part.agree for part in chosen), strict=True))
        disagree = tuple(sum(counts) for counts in zip(*(part.disagree for part in chosen), strict=True))
        return cls(agree, disagree, names)

    @classmethod
    def load_sources(
        cls, path: Path | str = DEFAULT_CALIBRATION_PATH, sets: Sequence[str] | None = None
    ) -> tuple[Calibration, ...]:
        """Read a ``calibration.json`` file, one :class:`Calibration` per set of ``sets`` (default: every set in it).

        This is what :func:`choose_threshold` tests per source.

        :raises ValueError: When the file's layout is not the one this module reads or a set is unknown.
        """
        available = _read_sets(path)
        chosen = list(available) if sets is None else list(sets)
        unknown = [name for name in chosen if name not in available]
        if unknown or not chosen:
            raise ValueError(f"calibration: unknown or no sets {unknown}; the file has {sorted(available)}")
        sources = []
        for name in chosen:
            entry = available[name]
            agree, disagree = [0] * (GRID_STEPS + 1), [0] * (GRID_STEPS + 1)
            counted = _read_bins(entry.get("bins") if isinstance(entry, dict) else None, name, agree, disagree)
            if isinstance(entry, dict) and entry.get("answers", counted) != counted:
                raise ValueError(f"calibration: {name} says {entry['answers']} answers but its bins hold {counted}")
            counted_bins = cls(tuple(agree), tuple(disagree), (name,))
            asked = entry.get("questions") if isinstance(entry, dict) else None
            sources.append(counted_bins if asked is None else _with_questions(counted_bins, asked, name))
        return tuple(sources)

    @classmethod
    def load(cls, path: Path | str = DEFAULT_CALIBRATION_PATH, sets: Sequence[str] | None = None) -> Calibration:
        """Read a ``calibration.json`` file, summing the counts of ``sets`` (default: every set in it).

        The sum is one source to :func:`choose_threshold`; :meth:`load_sources` keeps the sets apart.

        :raises ValueError: When the file's layout is not the one this module reads or a set is unknown.
        """
        return cls.pooled(cls.load_sources(path, sets))


def _with_questions(counts: Calibration, asked: Any, name: str) -> Calibration:
    """``counts`` with each answer's question, from a set's ``questions`` (in :meth:`Calibration.answers` order)."""
    if not isinstance(asked, list) or len(asked) != counts.total:
        raise ValueError(
            f"calibration: {name}'s questions must name one question for each of its {counts.total} answers"
        )
    if any(isinstance(question, bool) or not isinstance(question, int) or question < 0 for question in asked):
        raise ValueError(f"calibration: {name}'s questions must be numbers (ints >= 0)")
    answers = [(k, agreed, asked[i]) for i, (k, agreed, _) in enumerate(counts.answers())]
    return Calibration.from_answers(answers, name)


def _read_sets(path: Path | str) -> dict[str, Any]:
    """The ``sets`` object of a calibration file, after checking its layout."""
    from answer_eval.inputs.jsonl import read_json_file

    content = read_json_file(path, 16 << 20, "calibration data file")  # the shipped one is a few KB
    if not isinstance(content, dict) or content.get("format") != CALIBRATION_FORMAT:
        raise ValueError(f"calibration: {path} is not a format {CALIBRATION_FORMAT} calibration file")
    if content.get("bin_width") != 1 / GRID_STEPS or not isinstance(content.get("sets"), dict):
        raise ValueError(f"calibration: {path} needs bin_width {1 / GRID_STEPS} and a 'sets' object")
    return dict(content["sets"])


def calibration_set_names(path: Path | str = DEFAULT_CALIBRATION_PATH) -> tuple[str, ...]:
    """The names of the sets a calibration file holds, in its order.

    The shipped file holds nq301-dev, efficientqa and evouna-tq.

    :raises ValueError: When the file's layout is not the one this module reads.
    """
    return tuple(_read_sets(path))


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
