"""The report's agreement-coverage section: how well the judge's most confident verdicts agree with people.

Per system, from the judge's verdicts, their ``confidence`` and the file's human labels (a row
agrees when the judge's ``correct`` equals the label), :func:`system_coverage` computes the curve of
:func:`answer_eval.evaluators.judge.guarantee.coverage_curve`: at each confidence threshold, the share
of verdicts kept, their agreement with people and its *corrected* lower bound at ``delta``
(:func:`answer_eval.evaluators.judge.guarantee.threshold_bounds`, answers to one question counted
as one cluster): the bound the threshold test reads, so the chart, the in-sample threshold and
``answer-eval calibrate`` read the same numbers. Thresholds above the test's highest start are not
tested: they have no bound (``nan``, "not tested" on the page), not a bound of 0.

Where the verdicts and confidences come from, first found first:

- a file written by ``answer-eval judge --output`` (every row carries its mark, under any
  ``--column-prefix``): its ``correct``, ``confidence`` and, when there, ``abstained`` (or
  ``escalated``) columns;
- the judge run now by ``report`` (``-e judge``, one of the defaults) on a predictions file.

What is marked on the curve:

- ``abstained`` in the rows (``answer-eval judge --target-agreement``), or ``escalated`` (the same
  with an LLM, whose verdicts then fill ``correct`` for the escalated rows): the run's own
  threshold. The rows say which verdicts the run kept, not the threshold, so the mark is those
  kept rows as they are (their share and agreement, exact), and the threshold shown is the lowest
  confidence among them (the run's threshold lies between the highest abstained confidence and it);
- ``target_agreement`` (``report --target-agreement``): the threshold
  :func:`answer_eval.evaluators.judge.guarantee.choose_threshold` chooses on these very labels,
  labelled in-sample: it is drawn on the labels it was chosen on, so the curve flatters it. When
  no threshold passes, a note gives the highest agreement any threshold can promise on these labels
  (:meth:`~answer_eval.evaluators.judge.guarantee.Bounds.best`) and about how many labels would let
  the target pass (:meth:`~answer_eval.evaluators.judge.guarantee.Bounds.labels_needed`).

A system lacking what the curve needs gets a reason instead (one line on the page); a value the
curve cannot read (a confidence that is not a number in [0, 1], a verdict, ``abstained`` or
``escalated`` that is not true/false) is an :class:`answer_eval.errors.InputError` naming
the file and line. A confidence written as text (a CSV cell, ``"0.979"``) is read as the number
it writes.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from answer_eval.engine.row_transforms import find_marked
from answer_eval.errors import InputError
from answer_eval.evaluators.judge.calibration import GRID_STEPS, Calibration
from answer_eval.evaluators.judge.guarantee import (
    Bounds,
    CurvePoint,
    choose_threshold,
    coverage_curve,
    threshold_bounds,
)
from answer_eval.inputs.item_files import DEFAULT_LABEL_FIELD, Items
from answer_eval.reports.scorers import EvaluatorRun

__all__ = ["IN_SAMPLE", "NO_JUDGE", "NO_LABEL", "CoverageMark", "SystemCoverage", "system_coverage"]

CURVE_STEP = 0.01
"""The curve's thresholds are ``1.0, 0.99, ..., 0.0`` (grid thresholds: each is exact)."""

TABLE_THRESHOLDS = (0.95, 0.9, 0.8, 0.7, 0.5, 0.0)
"""The thresholds the page's table shows (besides the marked ones); 0.0 keeps every verdict."""

IN_SAMPLE = "in-sample: chosen on the same labels it is drawn on"
"""The words that label a threshold ``report --target-agreement`` chose."""

NO_LABEL = (
    f"no human label column ({DEFAULT_LABEL_FIELD!r} when the first row has it; name another with --label-field "
    "and its acceptable values with --positive)"
)
"""Why a file has no curve: it has no human label column."""
NO_JUDGE = (
    "no judge verdicts with their confidence: give a file written by 'answer-eval judge --output', or let the "
    "report run the judge (-e judge)"
)
"""Why a file has no curve: it is no judged file, and the judge did not run on it."""
NO_CONFIDENCE = "the judged file has no 'confidence' column (written by an older answer-eval judge?): judge it again"
"""Why a file has no curve: it is a judged file without the judge's confidences."""
_MAX_SHOWN = 60  # characters of a bad value quoted in an error


@dataclass(frozen=True)
class CoverageMark:
    """A threshold marked on the curve.

    :param kind: ``"run"`` (the kept rows of a run with ``abstained`` or ``escalated``) or
        ``"in_sample"`` (chosen by ``--target-agreement`` on these labels).
    :param threshold: Verdicts with ``confidence ≥ threshold`` are kept.
    :param kept: The verdicts kept.
    :param kept_share: Their share of the system's verdicts.
    :param kept_agreement: Their agreement with people.
    :param lower_bound: The lower bound on that agreement at the section's ``delta``: for an
        in-sample mark the corrected bound of its threshold (the one the choice read); for a run's,
        the bound of those kept rows as one fixed set (its threshold was not chosen on these labels),
        answers to one question counted as one cluster.
    :param label: What the mark is, in words.
    :param target_agreement: The agreement asked (in-sample marks).
    """

    kind: str
    threshold: float
    kept: int
    kept_share: float
    kept_agreement: float
    lower_bound: float
    label: str
    target_agreement: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The mark as JSON-ready values."""
        return {
            "kind": self.kind,
            "threshold": self.threshold,
            "kept": self.kept,
            "kept_share": self.kept_share,
            "kept_agreement": self.kept_agreement,
            "lower_bound": self.lower_bound,
            "label": self.label,
            "target_agreement": self.target_agreement,
        }


@dataclass(frozen=True)
class SystemCoverage:
    """One system's agreement-coverage curve, or why it is not drawn.

    :param reason: Why the curve is not drawn; ``None`` when it is.
    :param applies: Whether the system has anything the section speaks of (a human label or the
        judge's confidences): a report where no system does has no section at all.
    :param source: Where the verdicts came from: ``"file"`` (a judged file) or ``"run"`` (the judge run now).
    :param delta: The level of the lower bound.
    :param points: The curve, from threshold 1.0 down to 0.0 (:data:`CURVE_STEP` apart); a point's
        ``lower_bound`` is ``nan`` where the threshold is not tested (above the test's highest start).
    :param agreement: The agreement of every verdict with people.
    :param marks: The thresholds marked.
    :param notes: What else a reader needs (a threshold asked for and not found, a run whose kept rows are
        not those above one threshold).
    """

    reason: str | None
    applies: bool = True
    source: str = ""
    delta: float = 0.1
    points: tuple[CurvePoint, ...] = ()
    agreement: float = math.nan
    marks: tuple[CoverageMark, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def drawn(self) -> bool:
        """Whether the curve is drawn."""
        return self.reason is None

    @property
    def rows(self) -> int:
        """The verdicts the curve counts."""
        return self.points[-1].kept if self.points else 0

    def table(self) -> list[tuple[str, CurvePoint | CoverageMark]]:
        """The rows of the page's table: the :data:`TABLE_THRESHOLDS` points and the marks, most confident first."""
        wanted = {round(value, 6) for value in TABLE_THRESHOLDS}
        found: list[tuple[float, str, CurvePoint | CoverageMark]] = [
            (point.threshold, "", point) for point in self.points if round(point.threshold, 6) in wanted
        ]
        found += [(mark.threshold, mark.kind, mark) for mark in self.marks if math.isfinite(mark.threshold)]
        found.sort(key=lambda entry: (-entry[0], entry[1] == ""))
        return [(kind, row) for _, kind, row in found]

    def to_json(self) -> dict[str, Any]:
        """The section's numbers as JSON-ready values (``None`` for a number that is not one)."""
        if self.reason is not None:
            return {"drawn": False, "reason": self.reason}
        shown: dict[str, Any] = _finite(
            {
                "drawn": True,
                "source": self.source,
                "rows": self.rows,
                "agreement": self.agreement,
                "delta": self.delta,
                "step": CURVE_STEP,
                "points": [
                    {
                        "threshold": point.threshold,
                        "kept": point.kept,
                        "kept_share": point.kept_share,
                        "kept_agreement": point.kept_agreement,
                        "lower_bound": point.lower_bound,
                    }
                    for point in self.points
                ],
                "marks": [mark.to_json() for mark in self.marks],
                "notes": list(self.notes),
            }
        )
        return shown


def _finite(value: Any) -> Any:
    """``value`` with every ``nan`` or infinite float as ``None`` (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


_REPR = reprlib.Repr()  # a bad value quoted in an error: bounded in length and depth, whatever its size
_REPR.maxstring = _REPR.maxother = _MAX_SHOWN


def _shown(value: Any) -> str:
    text = _REPR.repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _number(value: Any) -> Any:
    """A number written as text (a CSV's cells are text: ``judge --output x.csv`` writes ``0.979``) as that number."""
    if isinstance(value, str) and len(value) <= _MAX_SHOWN:
        try:
            return float(value)
        except ValueError:
            return value
    return value


SET_ASIDE = ("abstained", "escalated")
"""Where ``answer-eval judge`` with a threshold says which verdicts it did not keep (the first found is read)."""


@dataclass(frozen=True)
class _Verdicts:
    correct: tuple[bool, ...]
    confidences: tuple[float, ...]
    set_aside: tuple[bool, ...] | None  # per row, whether the run did not keep the judge's verdict
    source: str
    column: str = ""  # the column set_aside was read from: abstained or escalated


def _bad(message: str, items: Items, line: int) -> InputError:
    return InputError(f"{message} (the agreement-coverage curve reads it)", items.path, line)


def _file_verdicts(items: Items, prefix: str) -> _Verdicts:
    """The judged file's verdicts, confidences and abstentions (or escalations), each value checked (its line named)."""
    aside = next((key for key in SET_ASIDE if prefix + key in items.rows[0]), None)
    keys = ("correct", "confidence", *(() if aside is None else (aside,)))
    flags = tuple(key for key in keys if key != "confidence")
    correct, confidences, set_aside = [], [], []
    for line, row in zip(items.lines, items.rows, strict=True):
        for key in keys:
            if prefix + key not in row:
                raise _bad(
                    f"missing field {_shown(prefix + key)}, which the first row of this judged file has", items, line
                )
        value = _number(row[prefix + "confidence"])
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            shown = f"field {_shown(prefix + 'confidence')}: {_shown(value)}"
            raise _bad(f"{shown} is not a number in [0, 1]", items, line)
        for key in flags:
            if not isinstance(row[prefix + key], bool):
                raise _bad(f"field {_shown(prefix + key)}: {_shown(row[prefix + key])} is not true/false", items, line)
        correct.append(row[prefix + "correct"])
        confidences.append(float(value))
        if aside is not None:
            set_aside.append(row[prefix + aside])
    kept = None if aside is None else tuple(set_aside)
    return _Verdicts(tuple(correct), tuple(confidences), kept, "file", aside or "")


def _verdicts(items: Items, run: EvaluatorRun | None) -> _Verdicts | str:
    """The judge's verdicts for the curve, or why there are none."""
    prefix = find_marked(items.rows, "judge")
    if prefix is not None and prefix + "confidence" in items.rows[0]:
        return _file_verdicts(items, prefix)
    if run is not None and run.confidences is not None:
        return _Verdicts(tuple(score >= 0.5 for score in run.scores), run.confidences, None, "run")
    return NO_CONFIDENCE if prefix is not None else NO_JUDGE


def _fixed_set_bound(agrees: Sequence[bool], groups: Sequence[str], delta: float) -> float:
    """The lower bound on the agreement of one set of verdicts fixed beforehand, at ``delta``, questions as clusters.

    The set as a calibration whose answers all sit at confidence 1: one threshold, so one test at
    ``delta`` (both starts fall on it), read with the same design effect as the curve's bounds.
    """
    bounds = threshold_bounds(Calibration.from_pairs([1.0] * len(agrees), agrees, "kept", groups), delta)
    return bounds.lower[GRID_STEPS]


def _run_mark(
    verdicts: _Verdicts, agrees: Sequence[bool], groups: Sequence[str], delta: float
) -> tuple[CoverageMark | None, list[str]]:
    """The mark of a run with a threshold: the rows it kept as they are; notes when they are not one threshold's."""
    assert verdicts.set_aside is not None
    column = verdicts.column
    kept = [i for i, aside in enumerate(verdicts.set_aside) if not aside]
    if not kept:
        return None, [f"the run kept no verdict (its {column} column is true on every row): no mark"]
    lowest = min(verdicts.confidences[i] for i in kept)
    agreeing = sum(agrees[i] for i in kept)
    total = len(verdicts.set_aside)
    dropped = [verdicts.confidences[i] for i, aside in enumerate(verdicts.set_aside) if aside]
    label = f"the run's threshold: it kept confidence ≥ {lowest:.4g} (the lowest kept"
    label += f"; the highest {column}: {max(dropped):.4g})" if dropped else f"; none {column})"
    mark = CoverageMark(
        "run",
        lowest,
        len(kept),
        len(kept) / total,
        agreeing / len(kept),
        _fixed_set_bound([agrees[i] for i in kept], [groups[i] for i in kept], delta),
        label,
    )
    notes = []
    if column == "escalated" and dropped:
        notes.append(
            "the escalated rows' verdicts are the LLM's (their correct column holds them): below the run's threshold "
            "the curve counts those, not the judge's own"
        )
    # Strictly above: the file's confidences are rounded (4 decimals), so a tie may be a rounding.
    crossing = sum(1 for confidence in dropped if confidence > lowest)
    if crossing:
        notes.append(
            f"{crossing} {column} verdict(s) are more confident than the least confident kept one: the kept rows are "
            "not those above one threshold (the file was edited, filtered or merged?); the mark shows them as they are"
        )
    return mark, notes


def _none_passes(bounds: Bounds, target: float, delta: float) -> str:
    """Why no threshold passes ``target``, from the bounds: the most any threshold promises, and the labels it needs."""
    total = bounds.total
    best, index = bounds.best()
    if index < 0:
        why = f"no threshold can promise any agreement at delta {delta:g} on this file's {total} labelled verdicts"
    else:
        where = f"confidence ≥ {index / GRID_STEPS:.3f}, keeping {bounds.kept[index]}"
        why = (
            f"the most any threshold can promise at delta {delta:g} is {best:.3f} ({where} of this file's {total} "
            "labelled verdicts)"
        )
    needed = bounds.labels_needed(target)
    if needed is None:
        starts = ", ".join(f"the {bounds.kept[k]} at confidence ≥ {k / GRID_STEPS:.3f}" for k in bounds.starts)
        why += f"; no number of labels would let {target:g} pass: the verdicts the test starts from ({starts}) agree"
        why += f" with people no more than {target:g} of the time"
    else:
        why += (
            f"; about {needed} labelled verdicts in all ({needed - total} more) would let {target:g} pass, if their "
            "agreement held"
        )
    return why


def _in_sample_mark(calibration: Calibration, target: float, delta: float) -> tuple[CoverageMark | None, str | None]:
    """The threshold ``choose_threshold`` picks on these labels, or why there is none."""
    selection = choose_threshold(target, delta, calibration)
    bounds = threshold_bounds(calibration, delta)  # the very bounds the choice read (cached)
    if not selection.guarantee_met:
        return None, f"--target-agreement {target:g}: no threshold chosen: {_none_passes(bounds, target, delta)}"
    kept, _ = calibration.kept(selection.threshold)
    label = f"{IN_SAMPLE} (target agreement {target:g}, delta {delta:g})"
    return (
        CoverageMark(
            "in_sample",
            selection.threshold,
            kept,
            selection.kept_share,
            selection.kept_agreement,
            bounds.lower[round(selection.threshold * GRID_STEPS)],
            label,
            target,
        ),
        None,
    )


def _untested(points: Sequence[CurvePoint], bounds: Bounds) -> tuple[CurvePoint, ...]:
    """The points, each above the test's highest start with ``nan`` for its bound: not tested, not an agreement of 0."""
    highest = bounds.starts[0] if bounds.starts else -1
    return tuple(
        point if round(point.threshold * GRID_STEPS) <= highest else replace(point, lower_bound=math.nan)
        for point in points
    )


def system_coverage(
    items: Items, run: EvaluatorRun | None, *, target_agreement: float | None = None, delta: float = 0.1
) -> SystemCoverage:
    """One system's agreement-coverage curve and marks, or why it is not drawn.

    :param items: The system's items (its rows and human labels).
    :param run: The judge's run on them, when the report ran the judge (its confidences are used
        when the file is not a judged file).
    :param target_agreement: Mark the threshold :func:`choose_threshold` chooses on these labels for this agreement.
    :param delta: The level of the lower bound and of that choice.
    :raises InputError: When a judged file holds a confidence, verdict or abstention the curve cannot read.
    """
    if items.labels is None:  # nothing is drawn: a judged file's columns are not read, so not refused
        judged = find_marked(items.rows, "judge") is not None
        return SystemCoverage(NO_LABEL, applies=judged or (run is not None and run.confidences is not None))
    found = _verdicts(items, run)
    if isinstance(found, str):
        return SystemCoverage(found)
    agrees = [verdict == label for verdict, label in zip(found.correct, items.labels, strict=True)]
    groups = items.question_groups()
    calibration = Calibration.from_pairs(found.confidences, agrees, items.path, groups)
    marks: list[CoverageMark] = []
    notes: list[str] = []
    if found.set_aside is not None:
        mark, said = _run_mark(found, agrees, groups, delta)
        marks.extend([mark] if mark is not None else [])
        notes.extend(said)
    if target_agreement is not None:
        mark, note = _in_sample_mark(calibration, target_agreement, delta)
        marks.extend([mark] if mark is not None else [])
        notes.extend([note] if note is not None else [])
    return SystemCoverage(
        None,
        source=found.source,
        delta=delta,
        points=_untested(coverage_curve(calibration, delta, CURVE_STEP), threshold_bounds(calibration, delta)),
        agreement=sum(agrees) / len(agrees),
        marks=tuple(marks),
        notes=tuple(notes),
    )
