"""One evaluator contract: every component's run and run_async take ground_truth_answers, predicted_answers, the rest.

Positional calls are read in that order (PairwiseEvaluator takes its three lists by keyword only).
There is no shim for an older order: the package was never published with one.
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

# name: (factory, keyword inputs in the contract's order, whether run takes them positionally, the
# input sockets as they were before the change).
CASES: dict[str, tuple[Any, dict[str, Any], bool, dict[str, dict[str, Any]]]] = {
    "contains": (
        AnswerContainsEvaluator,
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS},
        True,
        {"ground_truth_answers": {"type": LIST, **MANDATORY}, "predicted_answers": {"type": LIST, **MANDATORY}},
    ),
    "judge": (
        AnswerJudgeEvaluator,
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS, "questions": ["q1", "q2", "q3", "q4"]},
        True,
        {
            "ground_truth_answers": {"type": LIST, **MANDATORY},
            "predicted_answers": {"type": LIST, **MANDATORY},
            "questions": {"type": list[str] | None, "is_mandatory": False, "default_value": None},
        },
    ),
    "reference": (
        lambda: ReferenceMetricsEvaluator(metrics=["rouge", "exact_match"], ignore_case=True),
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS},
        True,
        {"ground_truth_answers": {"type": LIST, **MANDATORY}, "predicted_answers": {"type": LIST, **MANDATORY}},
    ),
    "tools": (
        ToolCallEvaluator,
        {"ground_truth_answers": [TOOL_REFERENCE] * 3, "predicted_answers": TOOL_PREDICTIONS},
        True,
        {"ground_truth_answers": {"type": LIST, **MANDATORY}, "predicted_answers": {"type": LIST, **MANDATORY}},
    ),
    "typed": (
        TypedAnswerEvaluator,
        {"ground_truth_answers": TYPED_TRUTHS, "predicted_answers": TYPED_PREDICTIONS, "question_types": TYPES},
        True,
        {
            "ground_truth_answers": {"type": LIST, **MANDATORY},
            "predicted_answers": {"type": LIST, **MANDATORY},
            "question_types": {"type": list[str] | None, "is_mandatory": False, "default_value": None},
        },
    ),
    "pairwise": (
        lambda: PairwiseEvaluator(evaluator=AnswerContainsEvaluator()),
        {"ground_truth_answers": TRUTHS, "predicted_answers": PREDICTIONS, "baseline_answers": BASELINE},
        False,
        {
            "ground_truth_answers": {"type": LIST, **MANDATORY},
            "predicted_answers": {"type": LIST, **MANDATORY},
            "baseline_answers": {"type": LIST, **MANDATORY},
        },
    ),
}
POSITIONAL = [name for name, case in CASES.items() if case[2]]


def _build(name: str) -> tuple[Any, dict[str, Any], bool, dict[str, dict[str, Any]]]:
    factory, inputs, positional, sockets = CASES[name]
    return factory(), inputs, positional, sockets


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


@pytest.mark.parametrize("name", POSITIONAL)
def test_positional_calls_are_read_in_the_contract_order_sync_and_async(name):
    component, inputs, _, _ = _build(name)
    expected = component.run(**inputs)
    assert component.run(*inputs.values()) == expected
    assert asyncio.run(component.run_async(*inputs.values())) == expected


def test_pairwise_takes_its_lists_by_keyword_only():
    component, inputs, _, _ = _build("pairwise")
    with pytest.raises(TypeError, match="positional"):
        component.run(*inputs.values())


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
