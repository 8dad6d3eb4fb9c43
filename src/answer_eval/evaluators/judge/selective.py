"""Trust or escalate: keep only the judge's verdicts confident enough to agree with people as often as asked.

Why: a verdict's ``confidence`` is the probability that a person agrees with it, but a threshold
picked by eye ("keep verdicts above 0.9") promises nothing about the verdicts it keeps. Selective
evaluation (Jung et al. 2024, "Trust or Escalate: LLM Judges with Provable Guarantees for Human
Agreement") chooses the threshold from human-judged calibration data so that the kept verdicts
agree with people at least ``target_agreement`` of the time, with probability at least
``1 - delta`` over the draw of the calibration data. The others are escalated (to a stronger
judge or a person) or left unjudged.

How (:func:`choose_threshold`): fixed-sequence testing over a fixed grid of thresholds, from the
most confident down. At threshold ``λ``, with ``n`` calibration answers kept (confidence ``≥ λ``)
and ``e`` disagreements among them, the null hypothesis "the kept verdicts' disagreement rate
exceeds ``1 - target_agreement``" has the exact binomial p-value
``P(Bin(n, 1 - target_agreement) ≤ e)`` (:func:`binomial_cdf`). While it is at most ``delta`` the
hypothesis is rejected and the next, lower threshold is tried; the first threshold not rejected
ends the sequence, and the lowest rejected one is chosen. Because the thresholds are tried in an
order fixed in advance and the sequence stops at the first failure, no correction for testing
many thresholds is needed.

The grid is the :data:`GRID_STEPS` + 1 thresholds ``k / GRID_STEPS`` for ``k`` from
``GRID_STEPS`` down to 0 (1.0, 0.995, ..., 0.0). The calibration counts are binned on the same
edges, so every grid threshold is evaluated exactly.

Where the sequence starts: at the first (highest) grid threshold that keeps at least ``min_kept``
calibration answers (default :data:`MIN_KEPT`, 100) and enough of them for the test to be able to
reject at all (zero disagreements would: ``P(Bin(n, 1 - target_agreement) ≤ 0) ≤ delta``). The thresholds
above it are not tested, and so never chosen. Without the floor, the few most confident answers
decide alone: one disagreement among the 24 EfficientQA answers kept at 0.995 (p = 0.106 for a
target of 0.85) stops the sequence before any larger set is looked at. Where it starts depends
only on the calibration confidences (how many answers each threshold keeps), never on the
agreements, so the sequence is still fixed in advance given the confidences (the binomial test's
conditioning) and the fixed-sequence guarantee holds unchanged.

Per source (the default): calibration data from several sources (the human-judged sets) is not
pooled. Pooled, the largest or easiest source decides: in the shipped data EVOUNA TriviaQA's 9,690
answers, which people accept when the rules do, carry the test, and a threshold chosen on the pool
can miss the target on an NQ-style set (held out, NQ301 dev kept 0.817 of the time for a target of
0.85). With ``per_source=True`` the fixed-sequence test runs on each source separately, each at
level ``delta``; a threshold is used only when it passes on every source (the test rejected it on
each: it lies between that source's lowest passing threshold and the first one it tested), and the
chosen threshold is the highest of the per-source thresholds, the lowest that passes everywhere.
The guarantee then holds on each source: with probability at least ``1 - delta`` over that
source's calibration data, its kept verdicts agree with people at least ``target_agreement`` of
the time (on all sources at once with probability at least ``1 - k · delta`` for ``k`` sources, by
the union bound). One source whose confident verdicts disagree too often therefore keeps every
verdict from being trusted: that is the price of a promise that holds whichever source new data
resembles. ``min_kept`` counts each source's own answers (in pooled mode, the pool's).

The calibration data shipped beside this module (``calibration.json``, written by
``scripts/judge_calibration.py``) holds, for each of the three human-judged sets, the cross-set
confidences of the shipped judge (the acceptance model fitted on the other two sets), binned.
:mod:`~answer_eval.evaluators.judge.calibration_data` reads them, one
:class:`~answer_eval.evaluators.judge.calibration_data.Calibration` a set (what :func:`choose_threshold`
uses by default); :mod:`~answer_eval.evaluators.judge.binomial` gives the exact binomial tail.

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.evaluators.judge.binomial import binomial_cdf, check_count
from answer_eval.evaluators.judge.calibration_data import GRID_STEPS, Calibration

__all__ = ["MIN_KEPT", "Selection", "SourceThreshold", "choose_threshold"]

MIN_KEPT = 100
"""The default ``min_kept`` of :func:`choose_threshold`: a source's sequence starts at the first
threshold keeping at least this many of its calibration answers."""


@dataclass(frozen=True)
class SourceThreshold:
    """One calibration source in a :class:`Selection`: its own threshold and what the chosen threshold keeps of it.

    :param name: The source (:attr:`Calibration.name`).
    :param threshold: The lowest threshold that passes the fixed-sequence test on this source alone;
        ``math.inf`` when none passes.
    :param highest_tested: The first (highest) threshold tested on this source; every grid threshold
        from it down to ``threshold`` passes on it. ``math.inf`` when none was tested.
    :param thresholds_tested: How many grid thresholds were tested on this source.
    :param kept: This source's answers kept at the chosen threshold.
    :param total: This source's answers.
    :param kept_agreement: The observed agreement of the kept verdicts (``nan`` when none is kept).
    """

    name: str
    threshold: float
    highest_tested: float
    thresholds_tested: int
    kept: int
    total: int
    kept_agreement: float

    def passes(self, threshold: float) -> bool:
        """Whether ``threshold`` (a grid threshold) passed the test on this source."""
        return self.threshold <= threshold <= self.highest_tested


@dataclass(frozen=True)
class Selection:
    """The threshold :func:`choose_threshold` chose, and what it keeps of the calibration data.

    :param threshold: Keep a verdict when its ``confidence ≥ threshold``; ``math.inf`` when no
        threshold passed (every verdict is escalated).
    :param target_agreement: The agreement with people asked of the kept verdicts.
    :param delta: The allowed probability that the guarantee fails.
    :param kept: The calibration answers kept at ``threshold``.
    :param total: The calibration answers.
    :param kept_agreement: The observed agreement of the kept calibration verdicts (``nan`` when none is kept).
    :param thresholds_tested: How many grid thresholds were tested (the last one failed unless the grid ran out).
    :param guarantee_met: Whether a threshold passed (on every source, per source), i.e. some verdicts can be
        kept with the guarantee.
    :param mode: ``"per_source"`` (the threshold passed on every source) or ``"pooled"`` (on the sum of them).
    :param sources: Each calibration source's own threshold and what ``threshold`` keeps of it (in
        ``pooled`` mode, for information: the pooled test decided).

    ``kept``, ``total`` and ``kept_agreement`` count all sources together; in ``per_source`` mode
    ``thresholds_tested`` is the sum of the sources' counts.
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


def _sequence(calibration: Calibration, risk: float, delta: float, min_kept: int) -> tuple[int | None, int | None, int]:
    """Fixed-sequence testing down the grid: the lowest rejected and first tested bins (``None``: none), the count."""
    kept = disagreeing = tested = 0
    lowest: int | None = None
    first: int | None = None
    for k in range(GRID_STEPS, -1, -1):
        kept += calibration.agree[k] + calibration.disagree[k]
        disagreeing += calibration.disagree[k]
        if first is None and (kept < min_kept or binomial_cdf(0, kept, risk) > delta):
            continue  # before the start: too few answers kept, or none that could reject (depends on n only)
        tested += 1
        first = k if first is None else first
        if binomial_cdf(disagreeing, kept, risk) > delta:
            break
        lowest = k
    return lowest, first, tested


def _lowest_rejected(calibration: Calibration, risk: float, delta: float, min_kept: int) -> tuple[int | None, int]:
    """The lowest rejected bin (``None`` if none) and how many were tested."""
    lowest, _first, tested = _sequence(calibration, risk, delta, min_kept)
    return lowest, tested


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
    min_kept: int = MIN_KEPT,
) -> Selection:
    """Choose the lowest grid threshold whose kept verdicts agree with people at least ``target_agreement`` of the time.

    The guarantee: with probability at least ``1 - delta`` over the calibration data, the verdicts
    kept (``confidence ≥ threshold``) on new answers from the same distribution agree with people
    at least ``target_agreement`` of the time. Per source (the default), it holds for each source's
    distribution: the threshold passes the test on every source separately, and the chosen one is
    the highest of the sources' own thresholds (``math.inf``, every verdict escalated, when that one
    does not pass on every source, or one source passes none).

    Each source's sequence starts at the first grid threshold that keeps at least ``min_kept`` of
    its calibration answers (and enough for the test to be able to reject); higher thresholds are
    not tested and so never chosen. The start depends on the confidences alone, never on the
    agreements, so the guarantee holds whatever ``min_kept`` is, as long as it is fixed before the
    agreements are looked at.

    :param target_agreement: The agreement asked, strictly between 0 and 1.
    :param delta: The allowed failure probability, strictly between 0 and 1 (default 0.1).
    :param calibration: Human-judged calibration counts: one :class:`Calibration` (one source,
        whatever sets it sums) or a sequence of them (one a source); default the shipped ones, one
        source per set (:meth:`Calibration.load_sources`).
    :param per_source: ``True`` (default): the threshold must pass on each source; ``False``: the
        sources are summed and tested as one (the larger sources then decide).
    :param min_kept: The fewest calibration answers of a source (the pool, when pooled) a tested
        threshold keeps, an int ``≥ 0`` (default :data:`MIN_KEPT`, 100). ``0`` starts at the first
        threshold where the test can reject; a source with fewer answers tests nothing.
    :raises ValueError: When ``target_agreement`` or ``delta`` is not strictly between 0 and 1, no
        source is given, or ``min_kept`` is negative.
    :raises TypeError: When ``calibration`` is not a Calibration or a sequence of them, or
        ``min_kept`` is not an int.

    >>> selection = choose_threshold(0.8)  # the shipped calibration data: three sets, 16,380 human-judged answers
    >>> selection.mode, selection.guarantee_met, selection.threshold
    ('per_source', False, inf)
    >>> [(source.name, source.threshold, source.highest_tested) for source in selection.sources]
    [('nq301-dev', 0.28, 0.995), ('efficientqa', inf, 0.98), ('evouna-tq', 0.0, 0.99)]

    EfficientQA's sequence starts at 0.98, its first threshold keeping 100 answers: 18 of those 119
    disagree (p = 0.110 for 80% agreement), so it passes none. Started among its 24 most confident
    answers instead, it passes down to 0.985:

    >>> fewer = choose_threshold(0.8, min_kept=0)
    >>> fewer.threshold, round(fewer.kept_share, 3)
    (0.985, 0.035)
    >>> pooled = choose_threshold(0.9, per_source=False)  # summed, TriviaQA's easy answers carry the test
    >>> pooled.guarantee_met, pooled.threshold, round(pooled.kept_share, 3)
    (True, 0.585, 0.946)
    """
    target = _check_probability(target_agreement, "target_agreement")
    allowed = _check_probability(delta, "delta")
    if not isinstance(per_source, bool):
        raise TypeError(f"per_source must be a bool, got {type(per_source).__name__}")
    if check_count(min_kept, "min_kept") < 0:
        raise ValueError(f"min_kept must be >= 0, got {min_kept}")
    sources = _sources(calibration)
    risk = 1.0 - target
    runs = [_sequence(source, risk, allowed, min_kept) for source in sources]
    if per_source:
        own = [math.inf if lowest is None else lowest / GRID_STEPS for lowest, _first, _tested in runs]
        tops = [math.inf if first is None else first / GRID_STEPS for _lowest, first, _tested in runs]
        highest = max(own)
        met = math.isfinite(highest) and all(highest <= top for top in tops)
        threshold = highest if met else math.inf
        tested = sum(run[2] for run in runs)
    else:
        lowest, tested = _lowest_rejected(Calibration.pooled(sources), risk, allowed, min_kept)
        met = lowest is not None
        threshold = math.inf if lowest is None else lowest / GRID_STEPS
    parts = []
    for source, (lowest, first, count) in zip(sources, runs, strict=True):
        kept, disagreeing = source.kept(threshold)
        parts.append(
            SourceThreshold(
                source.name,
                math.inf if lowest is None else lowest / GRID_STEPS,
                math.inf if first is None else first / GRID_STEPS,
                count,
                kept,
                source.total,
                _observed(kept, disagreeing),
            )
        )
    kept = sum(part.kept for part in parts)
    disagreeing = sum(source.kept(threshold)[1] for source in sources)
    total = sum(part.total for part in parts)
    mode = "per_source" if per_source else "pooled"
    return Selection(
        threshold, target, allowed, kept, total, _observed(kept, disagreeing), tested, met, mode, tuple(parts)
    )
