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
:meth:`Calibration.load_sources` reads them one :class:`Calibration` a set (what
:func:`choose_threshold` uses by default), :meth:`Calibration.load` summed into one.

Standard library only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_CALIBRATION_PATH",
    "GRID_STEPS",
    "MIN_KEPT",
    "Calibration",
    "Selection",
    "SourceThreshold",
    "binomial_cdf",
    "calibration_set_names",
    "choose_threshold",
]

DEFAULT_CALIBRATION_PATH = Path(__file__).with_name("calibration.json")
"""The calibration data shipped with the package (cross-set confidences on three human-judged sets)."""

GRID_STEPS = 200
"""The threshold grid and the calibration bins: edges ``k / GRID_STEPS`` (0.005 apart)."""

MIN_KEPT = 100
"""The default ``min_kept`` of :func:`choose_threshold`: a source's sequence starts at the first
threshold keeping at least this many of its calibration answers."""

CALIBRATION_FORMAT = 1
"""The version of the ``calibration.json`` layout this module reads."""

_NEGLIGIBLE = 1e-17  # a term this small relative to the running sum no longer changes a double


def _check_count(value: Any, name: str) -> int:
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
    _check_count(k, "k")
    if _check_count(n, "n") < 0:
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


def _bin(confidence: float) -> int:
    """The largest ``k`` in ``0..GRID_STEPS`` with ``confidence ≥ k / GRID_STEPS`` (exactly as a threshold compares)."""
    index = min(int(confidence * GRID_STEPS), GRID_STEPS)
    if confidence < index / GRID_STEPS:
        return index - 1
    if index < GRID_STEPS and confidence >= (index + 1) / GRID_STEPS:
        return index + 1
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
        if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], (int, float))):
            raise ValueError(f"calibration: {where} has a row that is not [lower_edge, agree, disagree]: {row!r}")
        index = round(row[0] * GRID_STEPS)
        if not (0 <= index <= GRID_STEPS and math.isclose(row[0], index / GRID_STEPS, abs_tol=1e-9)):
            raise ValueError(f"calibration: {where} has a lower edge off the grid: {row[0]!r}")
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

    :param agree: Per bin, the answers whose verdict the person agrees with.
    :param disagree: Per bin, the answers whose verdict the person disagrees with.
    :param sets: The names of the sets counted (informative).
    """

    agree: tuple[int, ...]
    disagree: tuple[int, ...]
    sets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Check that both count tuples have one count ``≥ 0`` per bin."""
        for name in ("agree", "disagree"):
            counts = getattr(self, name)
            if len(counts) != GRID_STEPS + 1:
                raise ValueError(f"calibration: {name} needs {GRID_STEPS + 1} bins, got {len(counts)}")
            for k, count in enumerate(counts):
                _counts(count, f"{name}[{k}]")

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
    def from_pairs(cls, confidences: Iterable[float], agrees: Iterable[bool], name: str = "given") -> Calibration:
        """Count calibration data given in memory: each answer's confidence and whether the person agrees.

        :raises ValueError: When the two differ in length or a confidence is not a number in ``[0, 1]``.
        """
        values, agreed_list = list(confidences), list(agrees)
        if len(values) != len(agreed_list):
            raise ValueError(f"calibration: {len(values)} confidences but {len(agreed_list)} agreements")
        agree, disagree = [0] * (GRID_STEPS + 1), [0] * (GRID_STEPS + 1)
        for i, (confidence, agreed) in enumerate(zip(values, agreed_list, strict=True)):
            if isinstance(confidence, bool) or not (isinstance(confidence, (int, float)) and 0 <= confidence <= 1):
                raise ValueError(f"calibration: confidence {i} must be a number in [0, 1], got {confidence!r}")
            (agree if agreed else disagree)[_bin(float(confidence))] += 1
        return cls(tuple(agree), tuple(disagree), (name,))

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
        agree = tuple(sum(counts) for counts in zip(*(part.agree for part in chosen), strict=True))
        disagree = tuple(sum(counts) for counts in zip(*(part.disagree for part in chosen), strict=True))
        return cls(agree, disagree, tuple(name for part in chosen for name in part.sets))

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
            sources.append(cls(tuple(agree), tuple(disagree), (name,)))
        return tuple(sources)

    @classmethod
    def load(cls, path: Path | str = DEFAULT_CALIBRATION_PATH, sets: Sequence[str] | None = None) -> Calibration:
        """Read a ``calibration.json`` file, summing the counts of ``sets`` (default: every set in it).

        The sum is one source to :func:`choose_threshold`; :meth:`load_sources` keeps the sets apart.

        :raises ValueError: When the file's layout is not the one this module reads or a set is unknown.
        """
        return cls.pooled(cls.load_sources(path, sets))


def _read_sets(path: Path | str) -> dict[str, Any]:
    """The ``sets`` object of a calibration file, after checking its layout."""
    content = json.loads(Path(path).read_text(encoding="utf-8"))
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
    if _check_count(min_kept, "min_kept") < 0:
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
