import asyncio

import pytest
from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator
from haystack.core.errors import DeserializationError
from haystack.dataclasses import ChatMessage, GeneratedAnswer
from haystack.evaluation import EvaluationRunResult

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

GROUND_TRUTHS = ["12400", ["Paris", "Paris, France"], "NOT_IN_DOCUMENT", 1250]
PREDICTIONS = [
    "Sheffield produced 12,400 units.",
    GeneratedAnswer(data="Lyon", query="q", documents=[]),
    ChatMessage.from_assistant("The text does not say.", meta={"finish_reason": "stop"}),
    {"replies": ["It costs $1,"], "meta": [{"finish_reason": "length"}]},
]


def test_run_outputs():
    result = AnswerContainsEvaluator().run(ground_truth_answers=GROUND_TRUTHS, predicted_answers=PREDICTIONS)
    assert result["individual_scores"] == [1, 0, 1, 0]
    assert result["score"] == 0.5
    assert type(result["score"]) is float
    assert result["failure_kinds"] == [None, "wrong", None, "budget_stop"]
    assert result["outcomes"] == ["sheffield produced 12400 units.", "lyon", "the text does not say.", "it costs $1,"]
    assert result["failure_counts"]["wrong"] == 1
    assert result["failure_counts"]["budget_stop"] == 1


def test_same_inputs_as_exact_match_with_a_wider_verdict():
    truths, predictions = ["Berlin", "12400"], ["Berlin", "Sheffield produced 12,400 units."]
    exact = AnswerExactMatchEvaluator().run(ground_truth_answers=truths, predicted_answers=predictions)
    contains = AnswerContainsEvaluator().run(ground_truth_answers=truths, predicted_answers=predictions)
    assert exact["individual_scores"] == [1, 0]
    assert contains["individual_scores"] == [1, 1]


def test_run_async_matches_run():
    evaluator = AnswerContainsEvaluator()
    expected = evaluator.run(ground_truth_answers=GROUND_TRUTHS, predicted_answers=PREDICTIONS)
    got = asyncio.run(evaluator.run_async(ground_truth_answers=GROUND_TRUTHS, predicted_answers=PREDICTIONS))
    assert got == expected


def test_pipeline_run_async():
    pipeline = Pipeline()
    pipeline.add_component("contains", AnswerContainsEvaluator())
    result = asyncio.run(
        pipeline.run_async({"contains": {"ground_truth_answers": ["Paris"], "predicted_answers": ["Paris!"]}})
    )
    assert result["contains"]["individual_scores"] == [1]


def test_a_single_odd_prediction_never_stops_the_batch():
    result = AnswerContainsEvaluator().run(
        ground_truth_answers=["a", "b", "c"], predicted_answers=[object(), ValueError("x"), "c"]
    )
    assert result["failure_kinds"] == ["parse_failure", "error", None]


@pytest.mark.parametrize(
    ("truths", "predictions", "error", "match"),
    [
        (["a", "b"], ["a"], ValueError, "ground_truth_answers has 2 items but predicted_answers has 1"),
        (["a", []], ["a", "b"], ValueError, "position 1 is an empty list"),
        (["a", float("inf")], ["a", "b"], ValueError, r"position 1 is not a finite number \(inf\)"),
        (["a", {"x": 1}], ["a", "b"], TypeError, "position 1 must be a str or a number"),
        (["a", ["b", None]], ["a", "b"], TypeError, "position 1"),
        ("ab", ["a", "b"], TypeError, "ground_truth_answers must be a list"),
        (["a"], "a", TypeError, "predicted_answers must be a list"),
        ([], [], ValueError, "nothing to score"),
        (["a", " "], ["a", "b"], ValueError, "position 1 is blank"),
    ],
)
def test_bad_input_gets_a_clear_error(truths, predictions, error, match):
    with pytest.raises(error, match=match):
        AnswerContainsEvaluator().run(ground_truth_answers=truths, predicted_answers=predictions)


def test_to_dict_and_from_dict_round_trip():
    evaluator = AnswerContainsEvaluator(not_found_label="UNANSWERABLE", extra_not_found_phrases=["keine Angabe"])
    data = evaluator.to_dict()
    assert data == {
        "type": "haystack_integrations.components.evaluators.answer_eval.answer_contains.AnswerContainsEvaluator",
        "init_parameters": {"not_found_label": "UNANSWERABLE", "extra_not_found_phrases": ["keine Angabe"]},
    }
    restored = AnswerContainsEvaluator.from_dict(data)
    assert restored.run(ground_truth_answers=["UNANSWERABLE"], predicted_answers=["Keine Angabe"])["score"] == 1.0


def test_from_dict_validates_parameter_types():
    data = AnswerContainsEvaluator().to_dict()
    data["init_parameters"]["extra_not_found_phrases"] = "not a list"
    with pytest.raises(TypeError, match="extra_not_found_phrases"):
        AnswerContainsEvaluator.from_dict(data)
    data["init_parameters"] = {"not_found_label": 7}
    with pytest.raises(TypeError, match="not_found_label"):
        AnswerContainsEvaluator.from_dict(data)
    with pytest.raises(DeserializationError):
        AnswerContainsEvaluator.from_dict({"type": "os.system", "init_parameters": {}})


def test_feeds_evaluation_run_result():
    truths, predictions = ["Paris", "12400"], ["Paris, France", "12 400"]
    result = AnswerContainsEvaluator().run(ground_truth_answers=truths, predicted_answers=predictions)
    report = EvaluationRunResult(
        run_name="contains",
        inputs={"ground_truth_answers": truths, "predicted_answers": predictions},
        results={"answer_contains": result},
    )
    assert report.aggregated_report(output_format="json") == {"metrics": ["answer_contains"], "score": [1.0]}
    assert report.detailed_report(output_format="json")["answer_contains"] == [1, 1]


def test_pipeline_dumps_and_loads_without_an_allow_list():
    pipeline = Pipeline()
    pipeline.add_component("contains", AnswerContainsEvaluator(extra_not_found_phrases=["pas mentionné"]))
    text = pipeline.dumps()
    assert "haystack_integrations.components.evaluators.answer_eval" in text
    loaded = Pipeline.loads(text)
    result = loaded.run(
        {"contains": {"ground_truth_answers": ["NOT_IN_DOCUMENT"], "predicted_answers": ["Pas mentionné."]}}
    )
    assert result["contains"]["individual_scores"] == [1]
