"""A calibration made on the user's own labels: what ``answer-eval calibrate`` writes and the judge loads.

Why: the shipped calibration (``calibration.json``: three human-judged sets, a threshold kept only
when it passes on each) promises agreement on data like those sets. A user's annotators draw the
line elsewhere (of the answers the rules accept, people accept 99% in EVOUNA, 93% in NQ301, 84% in
EfficientQA), so the promise that holds for *their* data needs *their* labels: a few hundred
answers a person judged, drawn like the data to be judged (Jung et al. 2024).

The file is JSON, versioned (:data:`FORMAT`, :data:`VERSION`), and carries:

- ``judge``: the signature of the judge whose confidences were counted (:func:`verdict_signature`);
  a judge with another signature refuses the file, naming what differs;
- ``source``: where the labels came from (the input's digest, rows, positives, the label field);
- ``answers`` (version 2): each labelled answer as ``[lower_edge, agreed, question]``: the grid bin
  of the judge's confidence (:mod:`answer_eval.evaluators.judge.guarantee`), whether the person
  agreed with the verdict (1 or 0) and its question, a number (answers to one question are one
  cluster to the threshold test; the question's text is not written). Version 1 files counted
  ``bins`` (``[lower_edge, agree, disagree]`` rows) without questions: they are still read, each
  answer its own question, with a warning to calibrate again;
- ``recalibration``: how ``acceptance`` (and so ``confidence``) is refitted to these annotators
  (:mod:`answer_eval.evaluators.judge.calibration`: ``{"kind": "platt-verdict", "intercept",
  "slope", "accepted_shift", "answers", "penalty"}``), or ``null`` for the shipped model's;
- ``verdict``: ``"rules"`` (the judge's verdicts) or ``"recalibrated"`` (a verdict follows the
  recalibrated acceptance), recorded so that nothing changes silently;
- ``cross_validation`` (informative): the rules' and the recalibrated verdicts' agreement with the
  labels under grouped cross-validation, which decided ``verdict``;
- ``escalation`` (optional, written by ``answer-eval calibrate --escalate-model``): the cascade's LLM
  level (:mod:`answer_eval.evaluators.judge.escalation`): the grader's signature and the LLM's verdict
  confidence and agreement on each labelled answer the judge would not keep.

The answers carry the confidences the judge gives *with* the file's recalibration and verdict, each
answer's from the recalibration fitted without its cross-validation fold (so the threshold test
never sees a confidence fitted on its own label); :meth:`UserCalibration.apply` gives the judge's
verdicts those confidences at run time.

Without a user calibration, :func:`default_selection` says what ``target_agreement`` means (the
shipped calibration, on an assumption it names, with a warning to calibrate).

Standard library only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from answer_eval.errors import CalibrationFileError
from answer_eval.evaluators.judge.calibration import (
    GRID_STEPS,
    MAX_ANSWER_ROWS,
    Calibration,
    Recalibration,
    _read_bins,
    cross_validate,
    fit_recalibration,
    grid_index,
    recalibrate_verdicts,
)
from answer_eval.evaluators.judge.escalation import LLMLevel
from answer_eval.evaluators.judge.guarantee import Selection, choose_threshold

__all__ = [
    "DEFAULT_SETS",
    "FORMAT",
    "UserCalibration",
    "default_selection",
    "fit_user_calibration",
    "fit_with_answers",
    "load_user_calibration",
    "read_user_calibration",
    "verdict_signature",
]

logger = logging.getLogger(__name__)

FORMAT = "answer-eval-judge-calibration"
VERSION = 2
"""The version written; version 1 (bins without questions) is read too."""
VERDICT_FIELDS = ("not_found_label", "extra_not_found_phrases")
"""The judge options that change its verdicts and confidences: a calibration holds for these only."""
_REMOVED_PARTS = frozenset({"semantic:no"})
"""Signature parts of removed options at the value that changed nothing: the deprecated semantic stage, off.
A file written before the removal signs it; the judge it was made for is today's judge."""

_MODEL_PATH = Path(__file__).with_name("model.json")
_MAX_FILE_BYTES = 16 << 20  # a calibration file is a few KB; a larger one is not one
_MAX_ANSWERS = 10**9  # labelled answers a calibration may count: past it the binomial tests lose their floats


def _without_removed(signature: str) -> str:
    return "|".join(part for part in signature.split("|") if part not in _REMOVED_PARTS)


def verdict_signature(options: Any) -> str:
    """The signature a calibration is tied to: the judge's verdict options, the package version and its model.

    ``options`` is a :class:`~answer_eval.evaluators.judge.judge_core.JudgeOptions`; only the fields
    named in :data:`VERDICT_FIELDS` count (a target agreement or an escalation model changes no
    confidence), and the acceptance model's digest does (a retrained model makes new confidences).
    """
    names = {item.name for item in dataclasses.fields(options)}
    kept = {name: getattr(options, name) for name in VERDICT_FIELDS if name in names}
    signature = options.signature("judge")
    parts = [part for part in signature.split("|") if part.partition(":")[0] in (*kept, "v")]
    model = hashlib.sha256(_MODEL_PATH.read_bytes()).hexdigest()[:12]
    return "|".join(["judge", *parts, f"model:{model}"])


@dataclass(frozen=True)
class UserCalibration:
    """A calibration on the user's labels (see the module docstring for the file it is read from).

    :param judge_signature: :func:`verdict_signature` of the judge whose confidences were counted.
    :param calibration: The counted confidences and agreements, one source to
        :func:`~answer_eval.evaluators.judge.guarantee.choose_threshold`.
    :param source: Where the labels came from (digest, rows, positives, label field).
    :param recalibration: How acceptance is refitted (``None``: the shipped model's).
    :param verdict: ``"rules"`` or ``"recalibrated"``.
    :param cross_validation: The grouped cross-validation that chose ``verdict`` (informative):
        ``folds``, ``answers``, ``rules_agreement``, ``recalibrated_agreement``; ``None`` when none ran.
    :param escalation: The cascade's LLM level (``None``: the judge alone, or escalated without a promise).
    """

    judge_signature: str
    calibration: Calibration
    source: Mapping[str, Any] = field(default_factory=dict)
    recalibration: Mapping[str, Any] | None = None
    verdict: str = "rules"
    cross_validation: Mapping[str, Any] | None = None
    escalation: LLMLevel | None = None

    def check_signature(self, signature: str) -> None:
        """Refuse a judge whose :func:`verdict_signature` differs, naming what differs."""
        if signature in (self.judge_signature, _without_removed(self.judge_signature)):
            return
        from answer_eval.evaluators.base import signature_differences

        differences = "; ".join(signature_differences(self.judge_signature, signature)) or "the signature"
        raise CalibrationFileError(
            f"the calibration was made for another judge ({differences}): run answer-eval calibrate again"
        )

    def to_dict(self) -> dict[str, Any]:
        """The file's content."""
        answers = [[k / GRID_STEPS, int(agreed), question] for k, agreed, question in self.calibration.answers()]
        more = {} if self.escalation is None else {"escalation": self.escalation.to_dict()}
        return {
            "format": FORMAT,
            "version": VERSION,
            "judge": self.judge_signature,
            "source": dict(self.source),
            "bin_width": 1 / GRID_STEPS,
            "answers": answers,
            "recalibration": None if self.recalibration is None else dict(self.recalibration),
            "verdict": self.verdict,
            "cross_validation": None if self.cross_validation is None else dict(self.cross_validation),
            **more,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "the calibration") -> UserCalibration:
        """Read a file's content; :class:`CalibrationFileError` naming ``where`` and what is wrong."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise CalibrationFileError(f"{where} is not an answer-eval calibration file (format {FORMAT})")
        version = data.get("version")
        if type(version) is not int or version not in (1, VERSION):  # not 2.0, not true
            raise CalibrationFileError(f"{where} has version {version!r}; this package reads 1 and {VERSION}")
        judge = data.get("judge")
        if not isinstance(judge, str) or not judge:
            raise CalibrationFileError(f"{where} names no judge signature")
        width = data.get("bin_width")
        if not isinstance(width, float) or not math.isclose(width, 1 / GRID_STEPS):
            raise CalibrationFileError(f"{where} needs bin_width {1 / GRID_STEPS}")
        try:
            counted = _read_answers(data.get("answers")) if version == VERSION else _read_version_1(data, where)
        except (ValueError, OverflowError) as exc:  # an edge of inf or nan, hand-written
            raise CalibrationFileError(f"{where}: {exc}") from None
        total = counted.total
        source, recalibration, verdict = data.get("source", {}), data.get("recalibration"), data.get("verdict")
        if not isinstance(source, Mapping):
            raise CalibrationFileError(f"{where}: source must be an object")
        if recalibration is not None and not isinstance(recalibration, Mapping):
            raise CalibrationFileError(f"{where}: recalibration must be an object or null")
        if recalibration is not None:
            try:
                Recalibration.from_dict(recalibration)
            except ValueError as exc:
                raise CalibrationFileError(f"{where}: {exc}") from None
        if verdict not in ("rules", "recalibrated"):
            raise CalibrationFileError(f"{where}: verdict must be 'rules' or 'recalibrated', got {verdict!r}")
        if verdict == "recalibrated" and recalibration is None:
            raise CalibrationFileError(f"{where}: verdict 'recalibrated' needs a recalibration")
        _check_rows(source, total, where)
        if recalibration is not None and recalibration.get("answers", 0) > total:
            raise CalibrationFileError(
                f"{where}: recalibration answers is {recalibration['answers']}, more than the {total} it counts"
            )
        checked = data.get("cross_validation")
        if checked is not None:
            _check_cross_validation(checked, where)
            if checked["answers"] > total:
                raise CalibrationFileError(
                    f"{where}: cross_validation answers is {checked['answers']}, more than the {total} it counts"
                )
        calibration = Calibration(counted.agree, counted.disagree, ("user",), counted.questions)
        escalation = data.get("escalation")
        return cls(
            judge,
            calibration,
            dict(source),
            None if recalibration is None else dict(recalibration),
            verdict,
            None if checked is None else dict(checked),
            None if escalation is None else LLMLevel.from_dict(escalation, where, calibration),
        )

    def apply(self, verdicts: Sequence[Any]) -> list[Any]:
        """The verdicts as this calibration makes them: recalibrated acceptance and confidence.

        The verdict too when :attr:`verdict` is ``"recalibrated"``; without a recalibration, the verdicts unchanged.
        """
        if self.recalibration is None:
            return list(verdicts)
        try:
            fitted = Recalibration.from_dict(self.recalibration)
        except ValueError as exc:
            raise CalibrationFileError(str(exc)) from None
        return recalibrate_verdicts(verdicts, fitted, follow=self.verdict == "recalibrated")


def _read_answers(rows: Any) -> Calibration:
    """A version 2 file's ``answers``: ``[lower_edge, agreed, question]`` rows on the grid."""
    if not isinstance(rows, list):
        raise ValueError("answers must be a list of [lower_edge, agreed, question]")
    if len(rows) > MAX_ANSWER_ROWS:
        raise ValueError(f"answers lists more than {MAX_ANSWER_ROWS:,} answers: hand-edited?")
    placed = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 3 and all(not isinstance(v, bool) for v in row)):
            raise ValueError(f"answers has a row that is not [lower_edge, agreed, question]: {str(row)[:80]}")
        edge, agreed, question = row
        if not isinstance(edge, (int, float)) or not isinstance(agreed, int) or not isinstance(question, int):
            raise ValueError(f"answers has a row that is not [lower_edge, agreed, question]: {str(row)[:80]}")
        k = grid_index(edge, "answers")
        if agreed not in (0, 1) or not 0 <= question <= MAX_ANSWER_ROWS:
            raise ValueError(f"answers has a row with agreed not 0/1 or a question not a number: {str(row)[:80]}")
        placed.append((k, bool(agreed), question))
    return Calibration.from_answers(placed, "user")


def _read_version_1(data: Mapping[str, Any], where: str) -> Calibration:
    """A version 1 file's ``bins``, every answer its own question (said once as a warning)."""
    agree, disagree = [0] * (GRID_STEPS + 1), [0] * (GRID_STEPS + 1)
    try:
        total = _read_bins(data.get("bins"), "bins", agree, disagree)
    except ValueError as exc:  # said once with the file's name, not twice with "calibration:"
        raise ValueError(str(exc).removeprefix("calibration: ")) from None
    if total > _MAX_ANSWERS or max(*agree, *disagree) > _MAX_ANSWERS:
        raise CalibrationFileError(f"{where}: its bins count more than {_MAX_ANSWERS:,} answers: hand-edited?")
    logger.warning(
        "answer-eval: %s was written by an earlier version without the answers' questions; its promise counts "
        "answers to one question as independent: run answer-eval calibrate again",
        where,
    )
    return Calibration(tuple(agree), tuple(disagree), ("user",))


def _check_rows(source: Mapping[str, Any], total: int, where: str) -> None:
    """The file must count exactly the answers ``source.rows`` says were taken (a hand-edited count is refused).

    Why: the threshold test reads that many labelled answers; 10^8 answers over a source of 204 rows
    promise agreement no labels measured (threshold 0, every verdict kept).
    """
    rows, positives = source.get("rows"), source.get("positives")
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise CalibrationFileError(f"{where}: source.rows must be the count of labelled answers taken, got {rows!r}")
    if rows != total:
        raise CalibrationFileError(
            f"{where}: it counts {total:,} answers but source.rows says {rows:,} were taken: hand-edited? "
            "run answer-eval calibrate again"
        )
    if positives is None:
        return
    if isinstance(positives, bool) or not isinstance(positives, int) or not 0 <= positives <= rows:
        raise CalibrationFileError(
            f"{where}: source.positives must be a count of at most source.rows, got {positives!r}"
        )


def _check_cross_validation(checked: Any, where: str) -> None:
    """The ``cross_validation`` object: folds and answers as counts, the two agreements as shares."""
    if not isinstance(checked, Mapping):
        raise CalibrationFileError(f"{where}: cross_validation must be an object or null")
    for name, low in (("folds", 2), ("answers", 1)):
        value = checked.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_ANSWERS:
            raise CalibrationFileError(f"{where}: cross_validation {name} must be an int of at least {low}")
    for name in ("rules_agreement", "recalibrated_agreement"):
        value = checked.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise CalibrationFileError(f"{where}: cross_validation {name} must be a share in [0, 1]")


def fit_user_calibration(
    verdicts: Sequence[Any],
    labels: Sequence[bool],
    groups: Sequence[Hashable],
    signature: str,
    source: Mapping[str, Any] | None = None,
) -> UserCalibration:
    """A calibration on labelled answers: what ``answer-eval calibrate`` writes (see :func:`fit_with_answers`)."""
    return fit_with_answers(verdicts, labels, groups, signature, source)[0]


def fit_with_answers(
    verdicts: Sequence[Any],
    labels: Sequence[bool],
    groups: Sequence[Hashable],
    signature: str,
    source: Mapping[str, Any] | None = None,
) -> tuple[UserCalibration, list[float]]:
    """A calibration on labelled answers, and each answer's confidence as the calibration counts it (in order).

    The confidences tell which answers the judge keeps at a threshold (the cascade's LLM level is
    calibrated on the others: ``answer-eval calibrate --escalate-model``).

    ``verdicts`` are the judge's (:class:`~answer_eval.evaluators.judge.cascade.JudgeVerdict`, as
    the judge with ``signature`` gives them), ``labels`` the person's (``True``: acceptable),
    ``groups`` each answer's question (answers to one question are never split between fitting and
    testing). The recalibration is fitted on every graded answer; the verdict is ``"recalibrated"``
    only when grouped cross-validation shows more agreement than the rules (a one-sided sign test at
    :data:`~answer_eval.evaluators.judge.calibration.WIN_LEVEL`); the answers carry each
    answer's out-of-fold confidence (see the module docstring). With fewer than two groups no
    cross-validation can run: no recalibration, the shipped confidences counted.

    :raises ValueError: When the three sequences differ in length or are empty.
    """
    if not verdicts or not len(verdicts) == len(labels) == len(groups):
        raise ValueError("calibration: verdicts, labels and groups must be non-empty and of one length")
    checked = cross_validate(verdicts, labels, groups)
    if checked is None:
        confidences = [verdict.confidence for verdict in verdicts]
        agrees = [verdict.correct == label for verdict, label in zip(verdicts, labels, strict=True)]
        counts = Calibration.from_pairs(confidences, agrees, "user", groups)
        return UserCalibration(signature, counts, dict(source or {})), confidences
    graded = [i for i, verdict in enumerate(verdicts) if verdict.graded]
    fitted = fit_recalibration(
        [verdicts[i].acceptance for i in graded], [verdicts[i].correct for i in graded], [labels[i] for i in graded]
    )
    follow = checked.recalibrated_wins
    confidences, agrees = [], []
    for verdict, acceptance, label in zip(verdicts, checked.acceptances, labels, strict=True):
        correct = acceptance >= 0.5 if follow and verdict.graded else verdict.correct
        confidences.append((acceptance if correct else 1.0 - acceptance) if verdict.graded else verdict.confidence)
        agrees.append(correct == label)
    summary = {
        "folds": checked.folds,
        "answers": checked.answers,
        "rules_agreement": round(checked.rules_agreement, 6),
        "recalibrated_agreement": round(checked.recalibrated_agreement, 6),
        "recalibrated_only": checked.recalibrated_only,
        "rules_only": checked.rules_only,
        "sign_test_p": round(checked.sign_test_p, 6),
    }
    counts = Calibration.from_pairs(confidences, agrees, "user", groups)
    verdict = "recalibrated" if follow else "rules"
    return UserCalibration(signature, counts, dict(source or {}), fitted.to_dict(), verdict, summary), confidences


DEFAULT_SETS = ("nq301-dev", "evouna-tq")
"""The shipped calibration sets :func:`default_selection` tests on (per source)."""

DEFAULT_ASSUMPTION = (
    "without a calibration of your own, target_agreement assumes your annotators draw the line like those of "
    "NQ301 (Kamalloo et al. 2023) and EVOUNA TriviaQA; stricter ones break the promise (EfficientQA's: verdicts "
    "kept for 0.9 agree 0.83 of the time). Run `answer-eval calibrate` on about 300 of your own labelled answers "
    "and pass the file as calibration"
)
"""The warning :func:`default_selection` logs: its assumption, what breaks it, what to do."""


def default_selection(target_agreement: float, delta: float = 0.1, warn: bool = True) -> Selection:
    """What ``target_agreement`` means without a user calibration: the threshold on the shipped NQ301 and EVOUNA sets.

    The fixed-sequence test runs per source on the shipped calibration's :data:`DEFAULT_SETS`
    (:func:`~answer_eval.evaluators.judge.guarantee.choose_threshold`); EfficientQA is left out
    because its stricter annotators let no threshold pass at 0.9 or below, which made every verdict
    abstain. The promise holds for data judged like NQ301 or EVOUNA, not for any annotators: the
    measured figures (leave-one-set-out and grouped half-splits) are in docs/answer-judge.md. With
    ``warn`` the assumption is logged as a warning (:data:`DEFAULT_ASSUMPTION`), once per call.

    :raises ValueError: When ``target_agreement`` or ``delta`` is not strictly between 0 and 1.
    """
    selection = choose_threshold(target_agreement, delta, Calibration.load_sources(sets=DEFAULT_SETS))
    if warn:
        logger.warning("answer-eval: %s", DEFAULT_ASSUMPTION)
    return selection


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: a file holding them was not written by answer-eval calibrate.
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


_MAX_DIGITS = 20
"""The longest whole number read from a calibration file: every count in one is at most :data:`_MAX_ANSWERS`."""


class _LongNumber(str):
    """A JSON integer of more than :data:`_MAX_DIGITS` digits, kept as its text.

    Python refuses ints past 4,300 digits with a message that names no file, and a long one is no count anyway.
    """


def _whole_number(text: str) -> int | _LongNumber:
    return _LongNumber(text) if len(text.lstrip("-")) > _MAX_DIGITS else int(text)


def _long_number_at(data: Any) -> tuple[str, _LongNumber] | None:
    """Where the first over-long integer of ``data`` is (``bins[3][1]``), and it; walked with a stack, not recursion."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, _LongNumber):
            return where or "the top level", value
        if isinstance(value, dict):
            stack.extend((f"{where}.{key}" if where else str(key), item) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{where}[{index}]", item) for index, item in reversed(list(enumerate(value))))
    return None


def _read_file(path: Path) -> Any:
    """A calibration file's JSON, read as every small file a user names (a FIFO refused, not waited on)."""
    from answer_eval.inputs.jsonl import NotASmallFile, json_failure, read_small_file_bytes

    where = f"the calibration file {path}"
    try:
        raw = read_small_file_bytes(path, _MAX_FILE_BYTES, "a calibration file")
    except NotASmallFile as exc:
        raise CalibrationFileError(f"{where} {exc.detail}") from None
    except OSError as exc:
        raise CalibrationFileError(f"cannot read {where}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_int=_whole_number)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CalibrationFileError(f"{where} is not valid JSON ({json_failure(exc)}): damaged?") from None
    found = _long_number_at(data)
    if found is not None:
        field_name, number = found
        raise CalibrationFileError(
            f"{where}: {field_name} holds a whole number of {len(number.lstrip('-')):,} digits (a calibration's "
            f"counts have at most {_MAX_DIGITS}): hand-edited?"
        )
    return data


def read_user_calibration(source: str | os.PathLike[str] | Mapping[str, Any], signature: str) -> UserCalibration:
    """A calibration from a file path or its content as a dict, checked against the judge's ``signature``.

    A path is read without waiting (a FIFO, a device or a folder is refused, as ``--rubric`` and
    ``--examples`` are), at most 16 MiB of it.

    :raises CalibrationFileError: For a file that cannot be read, is not one, is damaged, or was made
        for a judge with another :func:`verdict_signature` (the message says what differs).
    """
    if isinstance(source, Mapping):
        calibration = UserCalibration.from_dict(source)
    else:
        path = Path(source)
        calibration = UserCalibration.from_dict(_read_file(path), f"the calibration file {path}")
    calibration.check_signature(signature)
    return calibration


def load_user_calibration(options: Any) -> UserCalibration | None:
    """The user's calibration of ``options`` (``None`` without one), checked against the judge's verdict signature.

    :raises CalibrationFileError: (a ``ValueError``) for a file that cannot be read, is damaged, or
        was made for a judge with other verdict options or another model (naming what differs).
    """
    if options.calibration is None:
        return None
    # The verdict signature counts the verdict options only: the calibration itself is not read for it.
    bare = dataclasses.replace(options, calibration=None)
    return read_user_calibration(options.calibration, verdict_signature(bare))
