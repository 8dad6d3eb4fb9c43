"""Trust or escalate: keep only the judge's verdicts confident enough to agree with people as often as asked.

Why: a verdict's ``confidence`` is the probability that a person agrees with it, but a threshold
picked by eye ("keep verdicts above 0.9") promises nothing about the verdicts it keeps. Selective
evaluation (Jung et al. 2024, "Trust or Escalate: LLM Judges with Provable Guarantees for Human
Agreement") chooses the threshold from human-judged calibration data so that the kept verdicts
agree with people at least ``target_agreement`` of the time, with probability at least
``1 - delta`` over the draw of the calibration data. The others are escalated (to a stronger
judge or a person) or left unjudged.

How (:func:`threshold_bounds`, :func:`choose_threshold`), on the grid of :data:`GRID_STEPS` + 1
thresholds ``k / GRID_STEPS`` (the calibration counts are binned on the same edges, so every grid
threshold is evaluated exactly):

1. **A bound per threshold that knows answers cluster by question.** Answers to one question are
   not independent (a hard question trips several systems' answers alike: on NQ301 the variance
   of the kept disagreement rate is 1.5 to 2 times the binomial one), and a test that counts them
   as independent promised 0.85 and held it in 86% of splits, not 90%. At threshold ``λ`` with
   ``n`` answers kept and ``e`` disagreeing, the design effect ``D`` is the ratio of the
   question-level (cluster-robust) variance of ``e / n`` to the binomial one (at least 1; 1 when
   nothing disagrees or every answer is its own question); the bound is the exact one-sided
   (Clopper-Pearson) upper bound on the disagreement rate with the effective counts ``n / D`` and
   ``e / D`` (:func:`~answer_eval.evaluators.judge.binomial.disagreement_upper_bound`, the
   binomial extended to real counts). Without questions (:attr:`Calibration.questions`), ``D = 1``:
   the exact binomial test.
2. **Fixed-sequence testing from several starts** (Learn then Test, Angelopoulos et al. 2021):
   one sequence starts at the first threshold (from the top) that keeps :data:`START_SHARES` 30%
   of the calibration answers, one at 70%; each walks down the grid at level ``delta / 2`` (``delta``
   when both starts fall on one threshold) and
   stops at its first failure. A threshold passes when some sequence reached it with every test
   on the way passing; the chosen threshold is the lowest that passes. The starts depend on the
   confidences only, never on the agreements, so the family-wise error is at most ``delta``.
   One start at the top let the few most confident answers decide alone: two confident errors
   among the 104 most confident answers of a 1,000-label set stopped every threshold below.
3. **One corrected bound per threshold.** A threshold's *corrected* lower bound is the largest,
   over the sequences that reach it, of the smallest bound on the way there
   (:attr:`Bounds.lower`). A threshold passes for a target exactly when its corrected bound is at
   least the target, so the curve ``answer-eval calibrate`` prints, the report's chart and the
   chosen threshold all read the same numbers, and "none keeps any" is never said while some
   threshold's corrected bound clears the target. Thresholds above the first start are not tested
   (their corrected bound is 0).

The simulation behind these choices (``benchmarks/judge_guarantee.py``, docs/answer-judge.md):
binary search with a Bonferroni correction over its steps and choose-on-half/test-on-the-other
keep less at every size; three or five starts keep less than two on NQ-style sets.

Per source (the default): calibration data from several sources (the human-judged sets) is not
pooled. Pooled, the largest or easiest source decides: in the shipped data EVOUNA TriviaQA's 9,690
answers, which people accept when the rules do, carry the test, and a threshold chosen on the pool
can miss the target on an NQ-style set. With ``per_source=True`` the procedure runs on each source
separately, each at level ``delta``; a threshold is used only when it passes on every source, and
the chosen threshold is the lowest that passes everywhere. The guarantee then holds on each
source (on all at once with probability at least ``1 - k · delta`` for ``k`` sources).

The calibration data shipped beside this module (``calibration.json``, written by
``scripts/judge_calibration.py``) holds, for each of the three human-judged sets, the cross-set
confidences of the shipped judge (the acceptance model fitted on the other two sets), binned,
with each answer's question. :mod:`~answer_eval.evaluators.judge.calibration` reads them.

The agreement-coverage curve (:func:`coverage_curve`): for each confidence threshold, how many verdicts
it keeps and how well they agree; what ``answer-eval calibrate`` prints and ``answer-eval report``
draws: at threshold ``λ`` the verdicts with ``confidence ≥ λ`` are kept; the curve gives their share,
their observed agreement with people and the *corrected* lower bound on their agreement
(:attr:`Bounds.lower`): the bound the threshold test reads, clustered by question and corrected for the
fixed sequences it runs, so a threshold passes for a target exactly when its bound on the curve reaches
it (0 for a threshold no sequence tests).

Standard library only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from answer_eval.evaluators.judge.binomial import disagreement_upper_bound
from answer_eval.evaluators.judge.calibration import GRID_STEPS, Calibration

__all__ = [
    "START_SHARES",
    "Bounds",
    "CurvePoint",
    "Selection",
    "choose_threshold",
    "coverage_curve",
    "threshold_bounds",
]


START_SHARES = (0.3, 0.7)
"""Where the fixed sequences start: the first threshold (from the top) keeping these shares of the
calibration answers. Each sequence is tested at ``delta`` divided by the number of distinct starts."""


@dataclass(frozen=True)
class Bounds:
    """Every grid threshold's lower bound on the agreement of the verdicts it keeps, as the test reads them.

    Index ``k`` is threshold ``k / GRID_STEPS``.

    :param lower: The corrected lower bound (see the module docstring): a threshold passes for a
        target when ``lower[k] ≥ target``; 0 where no sequence reaches.
    :param each: The bound of each threshold alone, at :attr:`level` (0 where nothing is kept).
    :param kept: The calibration answers each threshold keeps.
    :param disagreeing: The disagreements among them.
    :param design_effect: The design effect of each threshold's kept answers (1: as if independent).
    :param starts: The grid indices the sequences start at, highest first.
    :param level: The level of each test: ``delta`` over the number of starts.
    :param questions: The questions the calibration answers come from.
    """

    lower: tuple[float, ...]
    each: tuple[float, ...]
    kept: tuple[int, ...]
    disagreeing: tuple[int, ...]
    design_effect: tuple[float, ...]
    starts: tuple[int, ...]
    level: float
    questions: int

    @property
    def total(self) -> int:
        """The calibration answers."""
        return self.kept[0]

    def passing(self, target: float) -> list[int]:
        """The grid indices whose corrected bound reaches ``target``, lowest first."""
        return [k for k, bound in enumerate(self.lower) if bound >= target]

    def tested(self, target: float) -> int:
        """How many thresholds the sequences tested for ``target`` (each stops after its first failure)."""
        seen: set[int] = set()
        for start in self.starts:
            for k in range(start, -1, -1):
                seen.add(k)
                if self.each[k] < target:
                    break
        return len(seen)

    def best(self) -> tuple[float, int]:
        """The highest target any threshold can promise, and the lowest grid index promising it (0.0, -1: none)."""
        highest = max(self.lower, default=0.0)
        if highest <= 0.0:
            return 0.0, -1
        return highest, min(k for k, bound in enumerate(self.lower) if bound >= highest)

    def labels_needed(self, target: float) -> int | None:
        """About how many labelled answers would let a start pass ``target``, if their agreement held.

        Every start whose observed agreement beats ``target`` is scaled up (its kept and
        disagreeing counts, and the calibration's size, times a factor) until its bound reaches
        ``target``; the fewest answers over the starts. ``None`` when no start agrees more than
        ``target`` (no number of labels would do).
        """
        needed: list[int] = []
        for start in self.starts:
            n, e = self.kept[start], self.disagreeing[start]
            if not n or (n - e) / n <= target:
                continue
            factor = _factor_needed(n / self.design_effect[start], e / self.design_effect[start], self.level, target)
            if factor is not None:
                needed.append(math.ceil(self.total * factor))
        return min(needed) if needed else None


_MOST_LABELS = 1e4
""":meth:`Bounds.labels_needed` looks up to this many times the labels given; past it, "no number would do"."""


def _factor_needed(n: float, e: float, level: float, target: float) -> float | None:
    """The factor on ``n`` and ``e`` whose bound reaches ``target`` (``None`` past :data:`_MOST_LABELS`)."""

    def reaches(factor: float) -> bool:
        return 1.0 - disagreement_upper_bound(n * factor, e * factor, level) >= target

    low, high = 1.0, 2.0
    while not reaches(high):
        low, high = high, high * 2
        if high > _MOST_LABELS:
            return None
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


class _Kept(NamedTuple):
    """What a threshold keeps: answers, disagreements, the questions they come from, and Σe², Σen, Σn² by question."""

    kept: int
    disagreeing: int
    questions: int
    ee: float
    en: float
    nn: float


def _running_sums(answers: Sequence[tuple[int, bool, int]]) -> list[_Kept]:
    """Per grid index, what the threshold keeps (every answer at or above it), walking down the grid once."""
    n_of: dict[int, int] = {}
    e_of: dict[int, int] = {}
    by_bin: list[list[tuple[bool, int]]] = [[] for _ in range(GRID_STEPS + 1)]
    for k, agreed, question in answers:
        by_bin[k].append((agreed, question))
    kept = disagreeing = 0
    ee = en = nn = 0.0
    sums = [_Kept(0, 0, 0, 0.0, 0.0, 0.0)] * (GRID_STEPS + 1)
    for k in range(GRID_STEPS, -1, -1):
        for agreed, question in by_bin[k]:
            n, e = n_of.get(question, 0), e_of.get(question, 0)
            grown_n, grown_e = n + 1, e + (not agreed)
            ee += grown_e * grown_e - e * e
            en += grown_e * grown_n - e * n
            nn += grown_n * grown_n - n * n
            n_of[question], e_of[question] = grown_n, grown_e
            kept += 1
            disagreeing += not agreed
        sums[k] = _Kept(kept, disagreeing, len(n_of), ee, en, nn)
    return sums


def _estimated_effect(row: _Kept) -> float | None:
    """The cluster-robust variance of the disagreement rate over the binomial one (``None``: nothing to estimate it)."""
    if not row.kept or row.disagreeing in (0, row.kept) or row.questions < 2:
        return None
    rate = row.disagreeing / row.kept
    spread = max(0.0, row.ee - 2 * rate * row.en + rate * rate * row.nn)
    clustered = row.questions / (row.questions - 1) * spread / (row.kept * row.kept)
    return max(1.0, clustered / (rate * (1 - rate) / row.kept))


def _design_effects(sums: Sequence[_Kept]) -> tuple[float, ...]:
    """Each threshold's design effect: its own estimate, or where it has none, the whole calibration's.

    Why: a threshold whose kept answers never disagree gives no estimate of how they cluster, and
    60 agreeing answers to 10 questions are not 60 independent draws. There the whole
    calibration's effect (every answer kept) stands in, capped at the threshold's answers per kept
    question (the most a design effect can be); when no answer of the calibration disagrees (or
    every one does), each kept question counts as one draw. Where the kept answers do disagree,
    their own estimate is used: flooring it at the whole calibration's too (a larger effect, from
    the less confident answers) kept half as much on EVOUNA at a = 0.95 and no more often reached
    the target (benchmarks/selection_study.py).
    """
    pooled = _estimated_effect(sums[0])
    effects = []
    for row in sums:
        own = _estimated_effect(row)
        if own is not None or not row.kept:
            effects.append(own or 1.0)
            continue
        per_question = row.kept / row.questions
        effects.append(max(1.0, per_question if pooled is None else min(pooled, per_question)))
    return tuple(effects)


@functools.lru_cache(maxsize=8)
def threshold_bounds(calibration: Calibration, delta: float) -> Bounds:
    """Every grid threshold's bound, and the corrected bounds the selection reads (see the module docstring)."""
    answers = calibration.answers()
    questions = len({question for _, _, question in answers})
    # Every answer its own question: the exact binomial test (the cluster variance's small-sample factor aside).
    clustered = calibration.questions is not None and questions < len(answers)
    sums = _running_sums(answers)
    total = sums[0].kept
    starts = sorted(
        {max(k for k in range(GRID_STEPS + 1) if sums[k].kept >= math.ceil(share * total)) for share in START_SHARES}
        if total
        else set(),
        reverse=True,
    )
    level = delta / max(1, len(starts))
    effects = _design_effects(sums) if clustered else (1.0,) * len(sums)
    computed: dict[tuple[int, int, float], float] = {}
    each = []
    for (kept, disagreeing, *_), effect in zip(sums, effects, strict=True):
        key = (kept, disagreeing, effect)
        if key not in computed:
            computed[key] = 1.0 - disagreement_upper_bound(kept / effect, disagreeing / effect, level) if kept else 0.0
        each.append(computed[key])
    lower = [0.0] * (GRID_STEPS + 1)
    for start in starts:
        running = math.inf
        for k in range(start, -1, -1):
            running = min(running, each[k])
            lower[k] = max(lower[k], running)
    return Bounds(
        tuple(lower),
        tuple(each),
        tuple(row.kept for row in sums),
        tuple(row.disagreeing for row in sums),
        effects,
        tuple(starts),
        level,
        questions,
    )


@dataclass(frozen=True)
class SourceThreshold:
    """One calibration source in a :class:`Selection`: its own threshold and what the chosen threshold keeps of it.

    :param name: The source (:attr:`Calibration.name`).
    :param threshold: The lowest threshold that passes on this source alone; ``math.inf`` when none passes.
    :param highest_tested: The first (highest) threshold tested on this source (the highest start);
        ``math.inf`` when none was tested.
    :param thresholds_tested: How many grid thresholds were tested on this source.
    :param kept: This source's answers kept at the chosen threshold.
    :param total: This source's answers.
    :param kept_agreement: The observed agreement of the kept verdicts (``nan`` when none is kept).
    :param bounds: This source's bounds (:func:`threshold_bounds`).
    :param target: The target the selection asked (what :meth:`passes` compares the bounds with).
    """

    name: str
    threshold: float
    highest_tested: float
    thresholds_tested: int
    kept: int
    total: int
    kept_agreement: float
    bounds: Bounds | None = None
    target: float | None = None

    def passes(self, threshold: float) -> bool:
        """Whether ``threshold`` (a grid threshold) passed on this source: its corrected bound reaches the target.

        The thresholds that pass need not be one interval (two sequences, one may stop early).
        """
        if self.bounds is None or self.target is None or not math.isfinite(threshold):
            return False
        k = round(threshold * GRID_STEPS)
        return 0 <= k <= GRID_STEPS and self.bounds.lower[k] >= self.target


@dataclass(frozen=True)
class Selection:
    """The threshold :func:`choose_threshold` chose, and what it keeps of the calibration data.

    :param threshold: Keep a verdict when its ``confidence ≥ threshold``; ``math.inf`` when no
        threshold passed (every verdict is escalated).
    :param target_agreement: The agreement asked of the kept verdicts.
    :param delta: The allowed probability that the guarantee fails.
    :param kept: The calibration answers kept at ``threshold``.
    :param total: The calibration answers.
    :param kept_agreement: The observed agreement of the kept calibration verdicts (``nan`` when none is kept).
    :param thresholds_tested: How many grid thresholds were tested (summed over the sources).
    :param guarantee_met: Whether a threshold passed (on every source, per source).
    :param mode: ``"per_source"`` or ``"pooled"``.
    :param sources: Each calibration source's own threshold, bounds and what ``threshold`` keeps of it.
    """

    threshold: float
    target_agreement: float
    delta: float
    kept: int
    total: int
    kept_agreement: float
    thresholds_tested: int
    guarantee_met: bool
    mode: str = "pooled"
    sources: tuple[SourceThreshold, ...] = ()

    @property
    def kept_share(self) -> float:
        """The share of calibration answers kept (0 when there are none)."""
        return self.kept / self.total if self.total else 0.0

    def keeps(self, confidence: float) -> bool:
        """Whether a verdict with this confidence is kept (trusted) rather than escalated."""
        return confidence >= self.threshold


def _check_probability(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def _observed(kept: int, disagreeing: int) -> float:
    return (kept - disagreeing) / kept if kept else math.nan


def _sources(calibration: Calibration | Sequence[Calibration] | None) -> tuple[Calibration, ...]:
    if calibration is None:
        return Calibration.load_sources()
    if isinstance(calibration, Calibration):
        return (calibration,)
    if isinstance(calibration, (str, bytes)) or not isinstance(calibration, Sequence):
        raise TypeError(f"calibration must be a Calibration or a sequence of them, got {type(calibration).__name__}")
    sources = tuple(calibration)
    if not sources:
        raise ValueError("calibration: no source given")
    for source in sources:
        if not isinstance(source, Calibration):
            raise TypeError(f"calibration must be a Calibration or a sequence of them, got a {type(source).__name__}")
    return sources


def choose_threshold(
    target_agreement: float,
    delta: float = 0.1,
    calibration: Calibration | Sequence[Calibration] | None = None,
    per_source: bool = True,
) -> Selection:
    """Choose the lowest grid threshold whose kept verdicts agree with people at least ``target_agreement`` of the time.

    The guarantee: with probability at least ``1 - delta`` over the calibration data (drawn by
    question), the verdicts kept (``confidence ≥ threshold``) on new answers from the same
    distribution agree with people at least ``target_agreement`` of the time. Per source (the
    default), it holds for each source's distribution: the threshold passes on every source
    separately (``math.inf``, every verdict escalated, when none does).

    :param target_agreement: The agreement asked, strictly between 0 and 1.
    :param delta: The allowed failure probability, strictly between 0 and 1 (default 0.1).
    :param calibration: Human-judged calibration counts: one :class:`Calibration` (one source,
        whatever sets it sums) or a sequence of them (one a source); default the shipped ones, one
        source per set (:meth:`Calibration.load_sources`).
    :param per_source: ``True`` (default): the threshold must pass on each source; ``False``: the
        sources are pooled and tested as one (the larger sources then decide).
    :raises ValueError: When ``target_agreement`` or ``delta`` is not strictly between 0 and 1, or no source is given.
    :raises TypeError: When ``calibration`` is not a Calibration or a sequence of them.

    >>> selection = choose_threshold(0.8)  # the shipped calibration data: three sets, 16,380 human-judged answers
    >>> selection.mode, selection.guarantee_met
    ('per_source', True)
    >>> pooled = choose_threshold(0.9, per_source=False)  # pooled, TriviaQA's easy answers carry the test
    >>> pooled.guarantee_met, pooled.threshold
    (True, 0.615)
    """
    target = _check_probability(target_agreement, "target_agreement")
    allowed = _check_probability(delta, "delta")
    if not isinstance(per_source, bool):
        raise TypeError(f"per_source must be a bool, got {type(per_source).__name__}")
    sources = _sources(calibration)
    bounds = [threshold_bounds(source, allowed) for source in sources]
    own = [bound.passing(target) for bound in bounds]
    if per_source:
        common = set(range(GRID_STEPS + 1))
        for passing in own:
            common &= set(passing)
        threshold = min(common) / GRID_STEPS if common else math.inf
        tested = sum(bound.tested(target) for bound in bounds)
    else:
        pooled = threshold_bounds(Calibration.pooled(sources), allowed)
        passing = pooled.passing(target)
        threshold = passing[0] / GRID_STEPS if passing else math.inf
        tested = pooled.tested(target)
    parts = []
    for source, bound, passing in zip(sources, bounds, own, strict=True):
        kept, disagreeing = source.kept(threshold)
        parts.append(
            SourceThreshold(
                source.name,
                passing[0] / GRID_STEPS if passing else math.inf,
                bound.starts[0] / GRID_STEPS if bound.starts else math.inf,
                bound.tested(target),
                kept,
                source.total,
                _observed(kept, disagreeing),
                bound,
                target,
            )
        )
    kept = sum(part.kept for part in parts)
    disagreeing = sum(source.kept(threshold)[1] for source in sources)
    total = sum(part.total for part in parts)
    mode = "per_source" if per_source else "pooled"
    met = math.isfinite(threshold)
    return Selection(
        threshold, target, allowed, kept, total, _observed(kept, disagreeing), tested, met, mode, tuple(parts)
    )


@dataclass(frozen=True)
class CurvePoint:
    """One threshold of the curve.

    :param threshold: Keep a verdict when ``confidence ≥ threshold``.
    :param kept: The verdicts kept.
    :param kept_share: Their share of all verdicts.
    :param kept_agreement: Their observed agreement with people (``nan`` when none is kept).
    :param lower_bound: The corrected lower bound on that agreement at ``delta`` (0 when none is kept or not tested).
    """

    threshold: float
    kept: int
    kept_share: float
    kept_agreement: float
    lower_bound: float


def coverage_curve(calibration: Calibration, delta: float = 0.1, step: float = 0.05) -> list[CurvePoint]:
    """The curve at thresholds ``1.0, 1 - step, ..., 0.0`` (grid thresholds, so each is exact).

    :raises ValueError: When ``delta`` is not strictly between 0 and 1 or ``step`` is not a multiple
        of the grid's width in ``(0, 1]``.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be strictly between 0 and 1, got {delta!r}")
    stride = round(step * GRID_STEPS)
    if not (1 <= stride <= GRID_STEPS and math.isclose(stride / GRID_STEPS, step)):
        raise ValueError(f"step must be a multiple of {1 / GRID_STEPS} in (0, 1], got {step!r}")

    bounds = threshold_bounds(calibration, delta)
    total = calibration.total
    points = []
    for k in range(GRID_STEPS, -1, -stride):
        kept, disagreeing = bounds.kept[k], bounds.disagreeing[k]
        points.append(
            CurvePoint(
                k / GRID_STEPS,
                kept,
                kept / total if total else 0.0,
                (kept - disagreeing) / kept if kept else math.nan,
                bounds.lower[k],
            )
        )
    return points
