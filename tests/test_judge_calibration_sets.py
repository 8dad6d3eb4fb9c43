"""AnswerJudgeEvaluator's `calibration_sets`: a mistake is refused at construction, so from_dict refuses it too."""

from __future__ import annotations

from typing import Any

import pytest

from answer_eval.evaluators.judge.calibration_data import Calibration, calibration_set_names
from answer_eval.evaluators.judge.selective import choose_threshold
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator

KNOWN = "nq301-dev, efficientqa, evouna-tq"


def _saved(**changes: Any) -> dict[str, Any]:
    """A saved judge (as Pipeline.dumps holds it) with some init parameters changed."""
    data = AnswerJudgeEvaluator(target_agreement=0.85, calibration_sets=["nq301-dev"]).to_dict()
    data["init_parameters"].update(changes)
    return data


def test_an_empty_or_unknown_calibration_set_is_refused_naming_the_known_sets() -> None:
    assert calibration_set_names() == ("nq301-dev", "efficientqa", "evouna-tq")
    for options in (
        {"calibration_sets": []},  # used to mean all three sets, silently
        {"calibration_sets": [], "target_agreement": 0.85},
        {"calibration_sets": ["squad"]},  # used to be ignored without target_agreement
        {"calibration_sets": ["nq301-dev", "squad"], "target_agreement": 0.85},
    ):
        with pytest.raises(ValueError, match=f"calibration_sets.*the known sets are {KNOWN}"):
            AnswerJudgeEvaluator(**options)
    with pytest.raises(ValueError, match="calibration_sets is empty"):
        AnswerJudgeEvaluator.from_dict(_saved(calibration_sets=[]))
    with pytest.raises(ValueError, match=r"unknown or no sets \['squad'\]"):
        AnswerJudgeEvaluator.from_dict(_saved(calibration_sets=["squad"]))


def test_calibration_sets_without_a_target_or_named_twice_are_refused() -> None:
    with pytest.raises(ValueError, match="without target_agreement it does nothing"):
        AnswerJudgeEvaluator(calibration_sets=["nq301-dev"])
    with pytest.raises(ValueError, match="without target_agreement it does nothing"):
        AnswerJudgeEvaluator(escalate_below=0.7, calibration_sets=["nq301-dev"])
    with pytest.raises(ValueError, match="without target_agreement it does nothing"):
        AnswerJudgeEvaluator.from_dict(_saved(target_agreement=None))
    with pytest.raises(ValueError, match="names nq301-dev more than once"):
        AnswerJudgeEvaluator(target_agreement=0.85, calibration_sets=["nq301-dev", "nq301-dev"])
    with pytest.raises(TypeError, match="calibration_sets must be a list of str"):
        AnswerJudgeEvaluator(target_agreement=0.85, calibration_sets="nq301-dev")


def test_the_sets_named_or_none_still_choose_the_threshold() -> None:
    every = AnswerJudgeEvaluator(target_agreement=0.85)
    assert every.to_dict()["init_parameters"]["calibration_sets"] is None
    two = AnswerJudgeEvaluator(target_agreement=0.8, calibration_sets=["evouna-tq", "nq301-dev"])
    expected = choose_threshold(0.8, 0.1, Calibration.load_sources(sets=["evouna-tq", "nq301-dev"]))
    result = two.run(ground_truth_answers=[["Paris"]], predicted_answers=["Paris"])
    assert result["threshold"] == expected.threshold
    again = AnswerJudgeEvaluator.from_dict(two.to_dict())
    assert again.to_dict()["init_parameters"]["calibration_sets"] == ["evouna-tq", "nq301-dev"]
