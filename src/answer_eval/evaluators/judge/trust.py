"""Which of the judge's verdicts are trusted: the confidence threshold its options give, and the calibration behind it.

A verdict is trusted when its ``confidence`` is at least the threshold; the others are abstained
(left for a person) or escalated to an LLM. The threshold is, in order:

1. ``escalate_below``, as given (no promise attached);
2. with ``target_agreement``, chosen by fixed-sequence testing
   (:func:`~answer_eval.evaluators.judge.guarantee.choose_threshold`) on the user's calibration
   (``calibration``: their own labels, the promise holding on data like theirs), else on the
   shipped calibration (:func:`default_selection`: NQ301 and EVOUNA, or ``calibration_sets``,
   each on its own);
3. with an LLM and neither, :data:`~answer_eval.evaluators.judge.judge_options.DEFAULT_ESCALATE_BELOW`;
4. else none: every verdict is trusted.

The cascade (:mod:`answer_eval.evaluators.judge.escalation`): with ``target_agreement``, an LLM, and
a user calibration holding an LLM level, the judge's threshold and the LLM's are chosen each at
``delta / 2``; an LLM verdict below the LLM's threshold is abstained (for a person). The LLM must be
the grader the level was calibrated with (:func:`~answer_eval.evaluators.judge.escalation.check_grader`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.evaluators.judge.calibration import Calibration
from answer_eval.evaluators.judge.escalation import cascade_thresholds, check_grader
from answer_eval.evaluators.judge.guarantee import Selection, choose_threshold
from answer_eval.evaluators.judge.judge_options import DEFAULT_ESCALATE_BELOW, JudgeOptions
from answer_eval.evaluators.judge.user_calibration import (
    UserCalibration,
)
from answer_eval.evaluators.judge.user_calibration import default_selection as shipped_default

__all__ = ["Trust", "choose_trust", "default_selection"]

logger = logging.getLogger(__name__)


def default_selection(target_agreement: float, delta: float, sets: Sequence[str] | None) -> Selection:
    """The threshold for a target without a calibration of the user's.

    With ``sets`` (``calibration_sets``), the named shipped sets, each tested on its own. Without,
    :func:`~answer_eval.evaluators.judge.user_calibration.default_selection`: the shipped NQ301 and
    EVOUNA sets (EfficientQA's stricter annotators let no threshold pass), with a warning that the
    promise assumes annotators like theirs and to calibrate on your own labels. Every layer (the
    component, ``answer-eval judge``, Dask) comes through here.
    """
    if sets is None:
        return shipped_default(target_agreement, delta)
    return choose_threshold(target_agreement, delta, Calibration.load_sources(sets=sets))


@dataclass(frozen=True)
class Trust:
    """The threshold the judge's options give, and where it comes from.

    :param threshold: Trust a verdict when ``confidence >= threshold``; ``None``: every verdict is
        trusted; ``math.inf``: none is (no threshold reaches the target).
    :param selection: With ``target_agreement``, the test's choice and what it keeps of the calibration.
    :param source: Where the threshold comes from: chosen on ``"yours"`` or the ``"shipped"``
        calibration, ``"given"`` (``escalate_below``), the ``"default"`` with an LLM, or ``None``.
    :param llm_selection: The cascade's LLM level (``None``: every LLM verdict is trusted, as without a
        cascade); :attr:`selection` is then the judge level's, both at ``delta / 2``.
    """

    threshold: float | None
    selection: Selection | None = None
    source: str | None = None
    llm_selection: Selection | None = None

    @property
    def cascade(self) -> bool:
        """Whether the LLM's verdicts pass a threshold of their own (the cascade)."""
        return self.llm_selection is not None

    @property
    def promised(self) -> float | None:
        """The agreement promised for the trusted verdicts (``None``: no promise, or no threshold passed).

        A cascade promises it whenever either level keeps verdicts: each level that keeps some agrees at
        least the target (each at ``delta / 2``), and so does their mixture.
        """
        levels = [self.selection, self.llm_selection] if self.cascade else [self.selection]
        if not any(level is not None and level.guarantee_met for level in levels):
            return None
        assert self.selection is not None
        return self.selection.target_agreement

    def llm_keeps(self, confidence: float) -> bool:
        """Whether an LLM verdict with this confidence is kept (every one without a cascade)."""
        return self.llm_selection is None or confidence >= self.llm_selection.threshold

    def unsure(self, confidences: Sequence[float]) -> list[bool]:
        """Which verdicts are not trusted (none without a threshold)."""
        if self.threshold is None:
            return [False] * len(confidences)
        return [confidence < self.threshold for confidence in confidences]

    def as_dict(self) -> dict[str, Any]:
        """The figures a summary shows (JSON-ready: no infinity, ``guarantee_met`` says when nothing is trusted)."""
        selection = self.selection
        finite = self.threshold is not None and math.isfinite(self.threshold)
        data: dict[str, Any] = {"threshold": self.threshold if finite else None, "source": self.source}
        if selection is not None:
            data.update(
                target_agreement=selection.target_agreement,
                delta=selection.delta,
                guarantee_met=selection.guarantee_met,
                calibration_answers=selection.total,
                calibration_kept_share=selection.kept_share,
            )
        llm = self.llm_selection
        if llm is not None:
            data.update(
                cascade=True,
                delta=llm.delta * 2,  # the whole promise's: each level is chosen at half of it
                level_delta=llm.delta,
                llm_threshold=llm.threshold if math.isfinite(llm.threshold) else None,
                llm_guarantee_met=llm.guarantee_met,
                llm_calibration_answers=llm.total,
                llm_calibration_kept_share=llm.kept_share,
            )
        return data


def choose_trust(
    options: JudgeOptions, user: UserCalibration | None, escalating: bool, grader: Mapping[str, Any] | None = None
) -> Trust:
    """The threshold of ``options`` (see the module docstring); a warning when no threshold reaches the target.

    :param grader: The escalation's grader signature
        (:func:`~answer_eval.evaluators.judge.escalation.grader_signature`), checked against a calibration's LLM level.
    :raises CalibrationFileError: For a cascade whose grader differs from the level's, or a target above the level's.
    """
    if options.escalate_below is not None:
        return Trust(options.escalate_below, source="given")
    if options.target_agreement is None:
        return Trust(DEFAULT_ESCALATE_BELOW, source="default") if escalating else Trust(None)
    if escalating and user is not None and user.escalation is not None:
        check_grader(user.escalation.grader, grader or {})
        cascade = cascade_thresholds(user.calibration, user.escalation, options.target_agreement, options.delta)
        if not (cascade.judge.guarantee_met or cascade.llm.guarantee_met):
            logger.warning(
                "the judge: neither the judge's nor the LLM's verdicts agree with people %.0f%% of the time with "
                "probability %.0f%% on the user's calibration; every verdict is abstained",
                100 * options.target_agreement,
                100 * (1 - options.delta / 2),
            )
        return Trust(cascade.judge_threshold, cascade.judge, "yours", cascade.llm)
    if user is not None:
        selection, source = choose_threshold(options.target_agreement, options.delta, user.calibration), "yours"
    else:
        sets = None if options.calibration_sets is None else list(options.calibration_sets)
        selection, source = default_selection(options.target_agreement, options.delta, sets), "shipped"
    if not selection.guarantee_met:
        advice = (
            ""
            if user is not None
            else "; calibrate on about 300 of your own labelled answers (answer-eval "
            "calibrate) and give the file as calibration"
        )
        logger.warning(
            "the judge: no threshold keeps verdicts that agree with people %.0f%% of the time with probability "
            "%.0f%% on the %s calibration data; every verdict is %s%s",
            100 * options.target_agreement,
            100 * (1 - options.delta),
            "user's" if user is not None else "shipped",
            "escalated" if escalating else "abstained",
            advice,
        )
    return Trust(selection.threshold, selection, source)
