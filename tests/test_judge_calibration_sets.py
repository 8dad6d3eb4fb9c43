"""AnswerJudgeEvaluator's `calibration_sets`: a mistake is refused at construction, so from_dict refuses it too."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from haystack import Pipeline

from answer_eval.evaluators.judge.calibration import Calibration, calibration_set_names
from answer_eval.evaluators.judge.guarantee import choose_threshold
from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator
from tests.test_judge_trust_cli import calibration_file

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


def _raised_without_waiting(make: Callable[[], Any], fifo: Path) -> BaseException | None:
    """What ``make()`` raised, run in a thread that may wait 60 s at most.

    A plain open() of a FIFO with no writer blocks for ever; if ``make`` blocks there, a writer
    opened here releases it (so the test fails instead of hanging) and the wait is the failure.
    """
    caught: list[BaseException | None] = []

    def target() -> None:
        try:
            make()
            caught.append(None)
        except BaseException as exc:  # noqa: BLE001 - what it raised is the result
            caught.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive():
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # a reader waits: this open succeeds and frees it
        os.close(writer)
        worker.join(60)
        pytest.fail(f"{make} waited on the FIFO instead of refusing it")
    return caught[0]


def test_a_fifo_as_the_calibration_of_the_component_or_a_loaded_pipeline_is_refused_without_waiting(
    tmp_path: Path,
) -> None:
    fifo = tmp_path / "calibration.json"
    os.mkfifo(fifo)
    good = calibration_file(tmp_path / "good.json")
    pipeline = Pipeline()
    pipeline.add_component("judge", AnswerJudgeEvaluator(target_agreement=0.9, calibration=str(good)))
    saved = pipeline.dumps().replace(str(good), str(fifo))
    assert str(fifo) in saved
    for make in (
        lambda: AnswerJudgeEvaluator(target_agreement=0.9, calibration=str(fifo)),
        lambda: AnswerJudgeEvaluator(target_agreement=0.9, calibration=fifo),
        lambda: Pipeline.loads(saved),
    ):
        raised = _raised_without_waiting(make, fifo)
        assert raised is not None
        assert f"the calibration file {fifo} is not a regular file" in str(raised) + str(raised.__cause__)


def test_a_pathlib_path_as_the_calibration_is_taken_and_saved_as_a_string(tmp_path: Path) -> None:
    good = calibration_file(tmp_path / "good.json")
    by_path = AnswerJudgeEvaluator(target_agreement=0.9, calibration=good)
    by_text = AnswerJudgeEvaluator(target_agreement=0.9, calibration=str(good))
    saved = by_path.to_dict()
    assert saved["init_parameters"]["calibration"] == str(good)  # plain text in a saved pipeline
    assert saved == by_text.to_dict()
    again = AnswerJudgeEvaluator.from_dict(saved)
    assert again.to_dict() == saved
    answers = {"ground_truth_answers": [["Paris"], ["Rome"]], "predicted_answers": ["Paris", "It is Milan"]}
    assert by_path.run(**answers) == by_text.run(**answers) == again.run(**answers)
    pipeline = Pipeline()
    pipeline.add_component("judge", by_path)
    loaded = Pipeline.loads(pipeline.dumps())
    assert loaded.get_component("judge").to_dict() == saved
