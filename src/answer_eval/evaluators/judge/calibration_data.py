"""Calibration data for Trust or Escalate: per-bin counts of the judge's verdicts people agree and disagree with.

:class:`Calibration` holds them on the :data:`GRID_STEPS` grid of thresholds, made from pairs of
(confidence, agreed) or read from the data shipped beside this module (``calibration.json``,
written by ``scripts/judge_calibration.py``: the cross-set confidences of the shipped judge on
three human-judged sets, binned, with each answer's question).
:func:`~answer_eval.evaluators.judge.selective.choose_threshold` tests thresholds on them. Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CALIBRATION_FORMAT",
    "DEFAULT_CALIBRATION_PATH",
    "GRID_STEPS",
    "MAX_ANSWER_ROWS",
    "Calibration",
    "calibration_set_names",
    "grid_index",
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
