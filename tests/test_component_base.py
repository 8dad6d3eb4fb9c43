"""The components over EvaluatorComponent: each holds its core evaluator, built from the options once."""

import pytest

from answer_eval.errors import ItemError
from answer_eval.evaluators.base import item_error, positioned
from answer_eval.evaluators.registry import EVALUATORS, evaluator_of
from answer_eval.inputs.reading import acceptable_answers
from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    ReferenceMetricsEvaluator,
    ToolCallEvaluator,
    TypedAnswerEvaluator,
)

COMPONENTS = {
    "contains": lambda: AnswerContainsEvaluator(extra_not_found_phrases=["keine Angabe"]),
    "metrics": lambda: ReferenceMetricsEvaluator(metrics=["rouge", "exact_match"], rouge_type="rouge2"),
    "tools": lambda: ToolCallEvaluator(calls="all", alignment="name"),
    "typed": lambda: TypedAnswerEvaluator(rouge_types=["rouge1"], default_type="OCR"),
}


@pytest.mark.parametrize("name", COMPONENTS)
def test_the_component_holds_its_registry_evaluator_and_its_to_dict_is_the_options(name):
    component = COMPONENTS[name]()
    evaluator = component._evaluator
    assert type(evaluator) is EVALUATORS[name].load()
    parameters = dict(component.to_dict()["init_parameters"])
    parameters.pop("custom_types", None)
    assert parameters == evaluator.options.to_dict()
    assert evaluator_of(component).signature == evaluator.signature


def test_a_none_question_type_takes_the_default_type_as_on_the_command_line():
    inputs = {
        "ground_truth_answers": ["1204", "3"],
        "predicted_answers": ["1,204", "4"],
        "question_types": [None, "OCR"],
    }
    result = TypedAnswerEvaluator(default_type="numerical").run(**inputs)
    assert result["individual_scores"] == [1.0, 0.0]
    assert result["per_type"] == {"numerical": {"score": 1.0, "count": 1}, "OCR": {"score": 0.0, "count": 1}}
    with pytest.raises(TypeError, match="question type at position 0 must be a str"):
        TypedAnswerEvaluator().run(**inputs)


def test_an_item_error_keeps_the_message_naming_the_position_for_components():
    try:
        acceptable_answers([])
    except ValueError as exc:
        error = item_error(lambda where: acceptable_answers([], where), "answers", 3, exc)
    assert str(error) == "ground truth is an empty list: give at least one acceptable answer"
    assert (error.role, error.position) == ("answers", 3)
    located = positioned(error)
    assert type(located) is ValueError
    assert str(located) == "ground truth at position 3 is an empty list: give at least one acceptable answer"


def test_an_item_error_without_a_located_message_names_its_role_and_position():
    assert str(positioned(ItemError("not a call", "reference", 2))) == "reference at position 2: not a call"
    assert str(positioned(ItemError("the batch is empty"))) == "the batch is empty"
