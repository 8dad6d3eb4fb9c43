"""Calibration data for Trust or Escalate: per-bin counts of the judge's verdicts people agree and disagree with.

:class:`Calibration` holds them on the :data:`GRID_STEPS` grid of thresholds, made from pairs of
(confidence, agreed) or read from the data shipped beside this module (``calibration.json``,
written by ``scripts/judge_calibration.py``: the cross-set confidences of the shipped judge on
three human-judged sets, binned). :func:`~answer_eval.evaluators.judge.selective.choose_threshold`
tests thresholds on them. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CALIBRATION_FORMAT", "DEFAULT_CALIBRATION_PATH", "GRID_STEPS", "Calibration", "calibration_set_names"]

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
    from answer_eval.engine.files import read_json_file

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
