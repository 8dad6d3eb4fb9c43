"""The cascade's LLM level: judge, then LLM, then a person, under one promise (Jung et al. 2024, cascaded selection).

Why: the judge alone keeps only the verdicts it is sure enough of for the target agreement; the
rest go to a person. An LLM grader decides many of those well, but not every one: the cascade keeps
an LLM verdict only when the LLM is sure enough of it, and that too is chosen on the user's labels.

How, for a target agreement ``a`` and a risk ``delta`` (:func:`cascade_thresholds`):

1. The judge's threshold ``t_J`` is chosen at ``delta / 2`` on the judge's calibration answers
   (:func:`~answer_eval.evaluators.judge.selective.choose_threshold`).
2. The LLM's threshold ``t_L`` is chosen at ``delta / 2`` on the labelled answers the judge does not
   keep (judge confidence ``< t_J``), each with the LLM's verdict confidence
   (:attr:`~answer_eval.evaluators.judge.escalation.LLMVerdict.confidence`) and whether the person
   agrees with the LLM's verdict, clustered by question as the judge's are.
3. At run time a verdict with confidence ``>= t_J`` is the judge's; below, the LLM is asked and its
   verdict kept when its confidence is ``>= t_L``; else the answer is ``abstained`` (for a person).

The promise: each kept level agrees ``>= a`` with probability ``>= 1 - delta / 2``, so all kept
verdicts together (a mixture of sets that each agree ``>= a``) agree ``>= a`` with probability
``>= 1 - delta`` (union bound). Caveat: ``t_J`` is chosen on the same labels that define the LLM's
calibration subset, so the LLM level's answers are not a fresh draw given ``t_J``.

One LLM with one reply has confidence 1.0 on every verdict: its level keeps every escalated verdict
or none. A jury's majority share (2 of 3: 0.667) lets the level keep the unanimous ones only.

The calibration file holds the LLM level as its ``escalation`` object (:class:`LLMLevel`): the
grader's signature (:func:`grader_signature`: models, servers without credentials, structured
output, prompt version; never a key), and each labelled answer the LLM graded as ``[llm_conf_edge,
agreed, question, judge_bin]``, with ``asked`` (the answers below ``judge_below`` it was asked on)
and ``not_graded`` (of them, those without a verdict: failures, a budget stop; calibrate sends the
answers in a seeded random order, so a budget stop leaves a uniformly random subset graded), and,
optionally, ``highest_target`` and ``delta`` (what calibrate was asked: a refusal names them).
Standard library only.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.errors import CalibrationFileError
from answer_eval.evaluators.judge.calibration_data import GRID_STEPS, MAX_ANSWER_ROWS, Calibration, grid_index
from answer_eval.evaluators.judge.selective import Selection, choose_threshold

__all__ = ["Cascade", "LLMLevel", "cascade_thresholds", "check_grader", "grader_signature", "judge_bin_of"]

_MAX_GRADER_CHARS = 4096  # a grader's signature is a few names: a longer one was not written by calibrate
_EVERY = GRID_STEPS + 1  # judge_below when every labelled answer was asked (no judge threshold passed)
_CALIBRATED_FOR = ("highest_target", "delta")  # optional: what calibrate was asked, named by a refusal


def judge_bin_of(threshold: float) -> int:
    """The grid index of a judge threshold: answers of a lower bin are escalated (``inf``: every answer)."""
    return _EVERY if not math.isfinite(threshold) else round(threshold * GRID_STEPS)


def grader_signature(
    models: Sequence[Any],
    servers: Sequence[Any],
    structured: str,
    generation: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """What identifies the escalation's grader in a calibration file: never an API key, servers without credentials.

    :param models: Each judge's model (one for one LLM; a jury's in order).
    :param servers: Each judge's server URL, already without credentials (``None``: OpenAI's).
    :param structured: The structured output asked (it changes the replies).
    :param generation: Each judge's generation options (``temperature``, ``max_tokens``, ``seed``...), as
        :func:`~answer_eval.llm.generators.shown_generator` shows them (headers and secrets by name only);
        ``None``: none set (the server's defaults, as ``--escalate-model`` sends). They change the replies, so
        a level graded at one temperature is refused at another, as for another model.
    """
    from answer_eval.llm.prompts import PROMPT_VERSION

    options = [{} for _ in models] if generation is None else [dict(one) for one in generation]
    plain = json.loads(json.dumps({"models": list(models), "servers": list(servers)}, default=str))
    generation_kwargs = json.loads(json.dumps(options, sort_keys=True, default=str))
    return {**plain, "generation": generation_kwargs, "structured": structured, "prompt": PROMPT_VERSION}


def check_grader(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> None:
    """Refuse a grader other than the one the LLM level was calibrated with, naming what differs.

    :raises CalibrationFileError: (a ``ValueError``) naming each differing part, the file's value and today's.
    """
    names = sorted(set(recorded) | set(now))
    differing = [
        f"{name}: {recorded.get(name)!r}, now {now.get(name)!r}"
        for name in names
        if recorded.get(name) != now.get(name)
    ]
    if differing:
        raise CalibrationFileError(
            f"the calibration's LLM level was graded by another grader ({'; '.join(differing)}): escalate to the "
            "grader it names, or run answer-eval calibrate --escalate-model again"
        )


@dataclass(frozen=True)
class LLMLevel:
    """The labelled answers the LLM graded for the cascade (see the module docstring).

    :param grader: :func:`grader_signature` of the LLM that graded them.
    :param answers: Each graded answer as ``(llm_bin, agreed, question, judge_bin)``: the grid bin of the
        LLM's verdict confidence, whether the person agrees with the LLM's verdict, the question's number
        (the judge's numbering), the grid bin of the judge's confidence.
    :param asked: The labelled answers with a judge bin below :attr:`judge_below`, every one sent to the LLM.
    :param not_graded: Of them, those with no verdict (failures, budget stop): not in :attr:`answers`.
    :param judge_below: The judge bin the answers below were asked (``GRID_STEPS + 1``: every answer).
    :param highest_target: The highest target ``calibrate`` graded for (``judge_below`` is its ``t_J``), and
    :param delta: the risk it was asked at (each level at ``delta / 2``); ``None``: not recorded (optional in
        the file): a refusal names them when they are.
    """

    grader: Mapping[str, Any]
    answers: tuple[tuple[int, bool, int, int], ...]
    asked: int
    not_graded: int
    judge_below: int
    highest_target: float | None = None
    delta: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The file's ``escalation`` object (``highest_target`` and ``delta`` only when recorded)."""
        recorded = {name: getattr(self, name) for name in _CALIBRATED_FOR if getattr(self, name) is not None}
        return {
            "grader": dict(self.grader),
            **recorded,
            "judge_below": self.judge_below,
            "asked": self.asked,
            "not_graded": self.not_graded,
            "answers": [[k / GRID_STEPS, int(agreed), question, judge] for k, agreed, question, judge in self.answers],
        }

    def calibration(self, judge_threshold: float) -> Calibration:
        """The LLM level's calibration for a judge threshold: the graded answers the judge would not keep."""
        below = judge_bin_of(judge_threshold)
        return Calibration.from_answers([(k, a, q) for k, a, q, judge in self.answers if judge < below], "llm")

    @classmethod
    def from_dict(cls, data: Any, where: str, judge: Calibration) -> LLMLevel:
        """Read and check a file's ``escalation`` object against its judge answers (``CalibrationFileError``)."""
        if not isinstance(data, Mapping):
            raise CalibrationFileError(f"{where}: escalation must be an object or absent")
        grader = data.get("grader")
        if not isinstance(grader, Mapping) or len(json.dumps(grader, default=str)) > _MAX_GRADER_CHARS:
            raise CalibrationFileError(f"{where}: escalation grader must be a short object (the grader's signature)")
        counts = {}
        for name, high in (("asked", judge.total), ("not_graded", judge.total), ("judge_below", _EVERY)):
            value = data.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
                raise CalibrationFileError(
                    f"{where}: escalation {name} must be an int in [0, {high}], got {str(value)[:40]}"
                )
            counts[name] = value
        try:
            answers = _read_rows(data.get("answers"), counts["judge_below"])
        except (ValueError, OverflowError) as exc:
            raise CalibrationFileError(f"{where}: escalation {exc}") from None
        below = counts["judge_below"]
        eligible = Counter(k for k, _, _ in judge.answers() if k < below)
        if counts["asked"] != sum(eligible.values()):
            raise CalibrationFileError(
                f"{where}: escalation asked is {counts['asked']}, but {sum(eligible.values())} labelled answers lie "
                "below its judge_below: hand-edited? run answer-eval calibrate again"
            )
        if len(answers) + counts["not_graded"] != counts["asked"] or Counter(row[3] for row in answers) - eligible:
            raise CalibrationFileError(
                f"{where}: escalation lists {len(answers)} graded and {counts['not_graded']} not graded answers, "
                f"which are not the {counts['asked']} asked: hand-edited? run answer-eval calibrate again"
            )
        calibrated_for = {
            name: _optional_unit(data.get(name), f"{where}: escalation {name}") for name in _CALIBRATED_FOR
        }
        return cls(dict(grader), tuple(answers), counts["asked"], counts["not_graded"], below, **calibrated_for)


def _optional_unit(value: Any, where: str) -> float | None:
    """An optional number strictly between 0 and 1 (``CalibrationFileError`` naming ``where`` otherwise)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise CalibrationFileError(f"{where} must be a number in (0, 1) or absent, got {str(value)[:40]}")
    return float(value)


def _read_rows(rows: Any, below: int) -> list[tuple[int, bool, int, int]]:
    """The ``answers`` rows: ``[llm_conf_edge, agreed, question, judge_bin]``, each checked (``ValueError``)."""
    shape = "answers must be a list of [llm_conf_edge, agreed, question, judge_bin]"
    if not isinstance(rows, list) or len(rows) > MAX_ANSWER_ROWS:
        raise ValueError(f"{shape} (at most {MAX_ANSWER_ROWS:,})")
    read = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4 and all(not isinstance(value, bool) for value in row)):
            raise ValueError(f"{shape}, got {str(row)[:80]}")
        edge, agreed, question, judge = row
        if not isinstance(edge, (int, float)) or not all(isinstance(value, int) for value in (agreed, question, judge)):
            raise ValueError(f"{shape}, got {str(row)[:80]}")
        k = grid_index(edge, "answers (an LLM confidence)")
        if agreed not in (0, 1) or not 0 <= question <= MAX_ANSWER_ROWS or not 0 <= judge < below:
            raise ValueError(
                f"answers has a row with agreed not 0/1, a bad question or a judge_bin not below "
                f"judge_below {below}: {str(row)[:80]}"
            )
        read.append((k, bool(agreed), question, judge))
    return read


@dataclass(frozen=True)
class Cascade:
    """The two thresholds of the cascade for a target, and the selections behind them.

    :param judge_threshold: ``t_J``: the judge's verdict is kept at confidence ``>= t_J`` (``inf``: never).
    :param llm_threshold: ``t_L``: the LLM's verdict is kept at confidence ``>= t_L`` (``inf``: never).
    :param judge: The judge level's selection (at ``delta / 2``).
    :param llm: The LLM level's selection (at ``delta / 2``, on the answers the judge does not keep).
    """

    judge_threshold: float
    llm_threshold: float
    judge: Selection
    llm: Selection


def cascade_thresholds(judge: Calibration, level: LLMLevel, target: float, delta: float) -> Cascade:
    """The cascade's ``t_J`` and ``t_L`` for ``target`` at risk ``delta`` (each level at ``delta / 2``).

    :raises CalibrationFileError: When ``t_J`` escalates answers the LLM level did not grade (a target above
        the highest one ``answer-eval calibrate --escalate-model`` was given, or a smaller delta: both raise
        ``t_J``), naming the target and delta asked and, when the file records them, the ones it was made for.
    """
    chosen = choose_threshold(target, delta / 2, judge)
    if judge_bin_of(chosen.threshold) > level.judge_below:
        edge = (
            "every answer" if level.judge_below >= _EVERY else f"judge confidence < {level.judge_below / GRID_STEPS:g}"
        )
        made = (
            f", for target {level.highest_target:g} at delta {level.delta:g}"
            if level.highest_target is not None and level.delta is not None
            else ""
        )
        raise CalibrationFileError(
            f"target_agreement {target:g} at delta {delta:g} escalates answers the calibration's LLM level did not "
            f"grade (it graded {edge}{made}): run answer-eval calibrate --escalate-model with --target {target:g} "
            f"--delta {delta:g}"
        )
    llm = choose_threshold(target, delta / 2, level.calibration(chosen.threshold))
    return Cascade(chosen.threshold, llm.threshold, chosen, llm)
