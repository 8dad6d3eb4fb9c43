"""Number ground truths (issue 19, item 7): finite floats, Decimals and numpy scalars are number labels."""

from __future__ import annotations

import decimal
import json

import numpy as np
import pytest

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, AnswerJudgeEvaluator
from tests.cli_runs import cli, write_jsonl

NUMBERS = [
    (3.5, "It is 3.5 metres long.", 1),
    ([3.5, "three and a half"], "three and a half", 1),
    (100.0, "about 100 people", 1),  # 100.0 is the number 100
    (decimal.Decimal("2.50"), "2.5", 1),
    (np.float32(0.1), "0.1", 1),  # its own shortest form, not 0.10000000149011612
    (np.float64(7.25), "7.25 dollars", 1),
    (np.int64(12400), "Sheffield produced 12,400 units.", 1),
    (1e20, "1e20", 1),
    (3.5, "It was 35 metres.", 0),  # numbers matched whole, as ever
    (0.12, "in 2012", 0),
]


@pytest.mark.parametrize("evaluator", [AnswerContainsEvaluator, AnswerJudgeEvaluator])
def test_number_labels_are_matched_by_the_number_reading(evaluator):
    truths = [truth for truth, _, _ in NUMBERS]
    result = evaluator().run(ground_truth_answers=truths, predicted_answers=[answer for _, answer, _ in NUMBERS])
    assert result["individual_scores"] == [expected for _, _, expected in NUMBERS]


@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), -float("inf"), decimal.Decimal("NaN"), decimal.Decimal("-Infinity"), np.nan]
)
def test_a_number_that_is_not_finite_is_refused_naming_its_position(bad):
    for evaluator in (AnswerContainsEvaluator(), AnswerJudgeEvaluator()):
        with pytest.raises(ValueError, match="position 2 is not a finite number"):
            evaluator.run(ground_truth_answers=["a", 1.5, [2.0, bad]], predicted_answers=["a", "1.5", "2"])


def test_the_command_line_reads_float_answers_and_names_a_nan_by_its_line(tmp_path):
    rows = [
        {"answers": 3.5, "prediction": "It is 3.5 metres"},
        {"answers": [3.5, "three and a half"], "prediction": "three and a half"},
        {"answers": 2.0, "prediction": "2"},
    ]
    source = write_jsonl(tmp_path / "floats.jsonl", rows)
    for command in ("score", "judge"):
        done = cli(command, source, "--format", "json", "--no-progress")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["correct"] == 3
    bad = tmp_path / "nan.jsonl"
    bad.write_text('{"answers": 3.5, "prediction": "x"}\n{"answers": NaN, "prediction": "x"}\n', encoding="utf-8")
    done = cli("score", bad, "--no-progress")
    assert done.returncode == 2
    assert "nan.jsonl:2: field 'answers': ground truth is not a finite number (nan)" in done.stderr
