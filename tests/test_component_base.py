"""The components over EvaluatorComponent: each holds its core evaluator, built from the options once."""

import ast
import dataclasses
import inspect
import sys

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
from haystack_integrations.components.evaluators.answer_eval._base import option_doc

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


def _components():
    from haystack_integrations.components.evaluators import answer_eval as package

    found = [getattr(package, name) for name in package.__all__]
    return [cls for cls in found if hasattr(cls, "core")]


def _option_fields(cls):
    return {item.name: item for item in dataclasses.fields(cls.core.options_type)}


@pytest.mark.parametrize("cls", _components(), ids=lambda cls: cls.__name__)
def test_a_component_declares_no_option_default_of_its_own(cls):
    """An option parameter's default is the core's declaration (``Options.name``), or ``None`` for a list."""
    tree = ast.parse(inspect.getsource(sys.modules[cls.__module__]))
    init = next(
        node
        for klass in ast.walk(tree)
        if isinstance(klass, ast.ClassDef) and klass.name == cls.__name__
        for node in klass.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    )
    arguments = init.args.args[1:] + init.args.kwonlyargs
    defaults = [*[None] * (len(init.args.args) - 1 - len(init.args.defaults)), *init.args.defaults]
    defaults += init.args.kw_defaults
    fields = _option_fields(cls)
    options_name = cls.core.options_type.__name__
    for argument, default in zip(arguments, defaults, strict=True):
        item = fields.get(argument.arg)
        if item is None:
            continue
        if item.metadata.get("none_is_default"):
            assert ast.unparse(default) == "None", argument.arg
        else:
            assert ast.unparse(default) == f"{options_name}.{argument.arg}", argument.arg


@pytest.mark.parametrize("cls", _components(), ids=lambda cls: cls.__name__)
def test_a_component_option_default_is_the_core_one_and_its_doc_the_option_help(cls):
    fields = _option_fields(cls)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    for parameter in parameters:
        assert f":param {parameter.name}: " in cls.__init__.__doc__
        item = fields.get(parameter.name)
        if item is not None:
            expected = None if item.metadata.get("none_is_default") else item.default
            assert parameter.default == expected, parameter.name
            assert option_doc(item) in cls.__init__.__doc__
