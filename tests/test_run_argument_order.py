"""One evaluator contract: every component's run and run_async take ground_truth_answers, predicted_answers, the rest.

The components that used to take predicted_answers first still read positional calls in that old
order, with a DeprecationWarning pointing at the caller; keyword calls, the Pipeline sockets and
Pipeline runs are exactly as before.
"""

import asyncio
import inspect
import warnings
from typing import Any

import pytest
from haystack import Pipeline

from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    AnswerJudgeEvaluator,
    PairwiseEvaluator,
    ReferenceMetricsEvaluator,
    ToolCallEvaluator,
    TypedAnswerEvaluator,
)
from haystack_integrations.components.evaluators.answer_eval._run_arguments import old_positional_order

TRUTHS = ["12400", ["Paris", "Paris, France"], "1912", "Berlin"]
PREDICTIONS = ["It made 12,400 units.", "paris", "1915", "Berlin, Germany"]
BASELINE = ["About 12,000 units.", "Paris", "1912", "Lyon"]
TOOL_REFERENCE = '{"content": "", "tool_calls": [{"name": "book", "arguments": {"movie": "Dune", "num_tix": "2"}}]}'
TOOL_PREDICTIONS = [
    '{"content": "", "tool_calls": [{"name": "book", "arguments": {"movie": "dune", "num_tix": 2}}]}',
    '{"content": "", "tool_calls": [{"name": "book", "arguments": {"movie": "Dune"}}]}',
    '{"content": "", "tool_calls": [',
]
TYPED_TRUTHS = ["<answer>B</answer>", "1204", "10"]
TYPED_PREDICTIONS = ["The answer is <answer>B</answer>", "Sales: 1,204 units", "It is 9"]
TYPES = ["multiple choice", "numerical", "regression"]

LIST = list[Any]
MANDATORY = {"is_mandatory": True}

# name: (factory, keyword inputs in the contract's order, the old positional order or None where
# it was already the contract's, the input sockets as they were before the change).
CASES: dict[str, tuple[Any, dict[str, Any], tuple[str, ...] | None, dict[str, dict[str, Any]]]] = {
    "contains": (
        AnswerContainsEvaluator,
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS},
        None,
        {"ground_truth_answers": {"type": LIST, **MANDATORY}, "predicted_answers": {"type": LIST, **MANDATORY}},
    ),
    "judge": (
        AnswerJudgeEvaluator,
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS, "questions": ["q1", "q2", "q3", "q4"]},
        None,
        {
            "ground_truth_answers": {"type": LIST, **MANDATORY},
            "predicted_answers": {"type": LIST, **MANDATORY},
            "questions": {"type": list[str] | None, "is_mandatory": False, "default_value": None},
        },
    ),
    "reference": (
        lambda: ReferenceMetricsEvaluator(metrics=["rouge", "exact_match"], ignore_case=True),
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS},
        ("predicted_answers", "ground_truth_answers"),
        {"ground_truth_answers": {"type": LIST, **MANDATORY}, "predicted_answers": {"type": LIST, **MANDATORY}},
    ),
    "tools": (
        ToolCallEvaluator,
        {"ground_truth_answers": [TOOL_REFERENCE] * 3, "predicted_answers": TOOL_PREDICTIONS},
        ("predicted_answers", "ground_truth_answers"),
        {"ground_truth_answers": {"type": LIST, **MANDATORY}, "predicted_answers": {"type": LIST, **MANDATORY}},
    ),
    "typed": (
        TypedAnswerEvaluator,
        {"ground_truth_answers": TYPED_TRUTHS, "predicted_answers": TYPED_PREDICTIONS, "question_types": TYPES},
        ("predicted_answers", "ground_truth_answers", "question_types"),
        {
            "ground_truth_answers": {"type": LIST, **MANDATORY},
            "predicted_answers": {"type": LIST, **MANDATORY},
            "question_types": {"type": list[str] | None, "is_mandatory": False, "default_value": None},
        },
    ),
    "pairwise": (
        lambda: PairwiseEvaluator(evaluator=AnswerContainsEvaluator()),
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS, "baseline_answers": BASELINE},
        ("predicted_answers", "baseline_answers", "ground_truth_answers"),
        {
            "ground_truth_answers": {"type": LIST, **MANDATORY},
            "predicted_answers": {"type": LIST, **MANDATORY},
            "baseline_answers": {"type": LIST, **MANDATORY},
        },
    ),
}
REORDERED = [name for name, case in CASES.items() if case[2] is not None]
DEPRECATED = r"Positional arguments to \w+\.run(_async)?\(\) are deprecated.*pass them by keyword"


def _build(name: str) -> tuple[Any, dict[str, Any], tuple[str, ...] | None, dict[str, dict[str, Any]]]:
    factory, inputs, old, sockets = CASES[name]
    return factory(), inputs, old, sockets


def _positional(inputs: dict[str, Any], old: tuple[str, ...]) -> list[Any]:
    return [inputs[name] for name in old]


@pytest.mark.parametrize("name", CASES)
def test_signature_starts_with_ground_truth_then_predictions_for_run_and_run_async(name):
    component, inputs, _, _ = _build(name)
    for method in (component.run, component.run_async):
        assert list(inspect.signature(method).parameters) == list(inputs)
    assert inspect.signature(component.run) == inspect.signature(component.run_async)
    assert inspect.iscoroutinefunction(component.run_async)


@pytest.mark.parametrize("name", CASES)
def test_keyword_calls_give_the_same_result_in_either_keyword_order_and_do_not_warn(name):
    component, inputs, _, _ = _build(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        forward = component.run(**inputs)
        backward = component.run(**dict(reversed(inputs.items())))
        awaited = asyncio.run(component.run_async(**dict(reversed(inputs.items()))))
    assert forward == backward == awaited


@pytest.mark.parametrize("name", REORDERED)
def test_the_old_positional_order_gives_the_keyword_result_with_a_deprecation_warning(name):
    component, inputs, old, _ = _build(name)
    expected = component.run(**inputs)
    with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
        got = component.run(*_positional(inputs, old))
    assert got == expected
    assert [warning.filename for warning in caught] == [__file__]  # the caller's line, not the wrapper's


@pytest.mark.parametrize("name", REORDERED)
def test_run_async_takes_the_old_positional_order_with_the_warning_at_the_awaiting_line(name):
    component, inputs, old, _ = _build(name)
    expected = component.run(**inputs)

    async def awaiting() -> dict[str, Any]:
        return await component.run_async(*_positional(inputs, old))

    with pytest.warns(DeprecationWarning, match=DEPRECATED) as caught:
        got = asyncio.run(awaiting())
    assert got == expected
    assert [warning.filename for warning in caught] == [__file__]


def test_positional_and_keyword_inputs_mix_in_the_old_order():
    evaluator = TypedAnswerEvaluator(default_type="numerical")
    expected = evaluator.run(ground_truth_answers=["1204", "3"], predicted_answers=["1,204", "4"])
    with pytest.warns(DeprecationWarning, match=r"old order \(predicted_answers, ground_truth_answers\)"):
        assert evaluator.run(["1,204", "4"], ["1204", "3"]) == expected
    with pytest.warns(DeprecationWarning, match=r"old order \(predicted_answers\)"):
        assert evaluator.run(["1,204", "4"], ground_truth_answers=["1204", "3"]) == expected


@pytest.mark.parametrize("name", REORDERED)
def test_a_positional_input_also_given_by_keyword_or_one_too_many_is_a_type_error(name):
    component, inputs, old, _ = _build(name)
    with pytest.raises(TypeError, match="multiple values for argument 'predicted_answers'"):
        component.run(inputs["predicted_answers"], predicted_answers=inputs["predicted_answers"])
    with pytest.raises(TypeError, match="at most"):
        component.run(*_positional(inputs, old), None)


@pytest.mark.parametrize("name", CASES)
def test_input_sockets_and_pipeline_inputs_are_as_before(name):
    component, _, _, sockets = _build(name)
    assert set(component.__haystack_input__._sockets_dict) == set(sockets)
    for socket_name, expected in sockets.items():
        socket = component.__haystack_input__._sockets_dict[socket_name]
        assert socket.type == expected["type"]
        assert socket.is_mandatory is expected["is_mandatory"]
        if "default_value" in expected:
            assert socket.default_value == expected["default_value"]
    pipeline = Pipeline()
    pipeline.add_component("evaluator", component)
    assert pipeline.inputs() == {"evaluator": sockets}


@pytest.mark.parametrize("name", CASES)
def test_pipelines_run_the_components_by_keyword_sync_and_async_without_warnings(name):
    component, inputs, _, _ = _build(name)
    expected = component.run(**inputs)
    pipeline = Pipeline()
    pipeline.add_component("evaluator", component)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pipeline.run({"evaluator": inputs})["evaluator"] == expected
        assert asyncio.run(pipeline.run_async({"evaluator": inputs}))["evaluator"] == expected


@pytest.mark.parametrize(
    ("inner", "inputs"),
    [
        (lambda: ReferenceMetricsEvaluator(metrics=["exact_match"]), {"ground_truth_answers": TRUTHS}),
        (ToolCallEvaluator, {"ground_truth_answers": [TOOL_REFERENCE] * 3}),
        (lambda: TypedAnswerEvaluator(default_type="free-form"), {"ground_truth_answers": TRUTHS}),
    ],
)
def test_pairwise_still_wraps_the_reordered_evaluators(inner, inputs):
    evaluator = inner()
    predictions = TOOL_PREDICTIONS if isinstance(evaluator, ToolCallEvaluator) else PREDICTIONS
    baseline = list(reversed(predictions))
    pairwise = PairwiseEvaluator(evaluator=evaluator)
    result = pairwise.run(**inputs, predicted_answers=predictions, baseline_answers=baseline)
    candidate = evaluator.run(**inputs, predicted_answers=predictions)
    assert result["candidate_individual_scores"] == candidate["individual_scores"]


def test_the_helper_refuses_names_that_are_not_keyword_only_parameters():
    def run(self: Any, ground_truth_answers: list[Any], *, predicted_answers: list[Any]) -> None: ...

    with pytest.raises(TypeError, match="keyword-only"):
        old_positional_order("predicted_answers", "ground_truth_answers")(run)
    with pytest.raises(TypeError, match="keyword-only"):
        old_positional_order("predicted_answers", "answers")(run)
