"""TypedAnswerEvaluator as a Haystack component: run, run_async, serialisation, pipelines."""

import asyncio
import subprocess
import sys

import pytest
from haystack import Pipeline
from haystack.core.errors import DeserializationError, SerializationError
from haystack.evaluation import EvaluationRunResult
from rouge_score import rouge_scorer

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, TypedAnswerEvaluator
from tests.conftest import ROOT

PREDICTIONS = [
    "The answer is <answer>B</answer>",
    "The result is <answer>42.5</answer>",
    "<answer>The cat is sitting on the mat</answer>",
    "Sales reached 1,204 units.",
    "<answer>hello wrld</answer>",
    "I estimate 9",
]
TRUTHS = [
    "The correct answer is <answer>B</answer>",
    "The answer is <answer>42.50</answer>",
    "<answer>A cat is sitting on a mat</answer>",
    "1204",
    "hello world",
    "10",
]
TYPES = ["multiple choice", "numerical", "free-form", "Numerical", "OCR", "regression"]


def rouge_mean(reference, prediction):
    values = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(reference, prediction)
    return (values["rouge1"].fmeasure + values["rouge2"].fmeasure + values["rougeL"].fmeasure) / 3


def yes_no(answer: str, reference: str) -> float:
    """A module-level custom scorer: serialisable by import path."""
    return 1.0 if answer.strip(" .").casefold() == reference.strip(" .").casefold() else 0.0


def test_run_scores_every_type():
    result = TypedAnswerEvaluator().run(
        predicted_answers=PREDICTIONS, ground_truth_answers=TRUTHS, question_types=TYPES
    )
    free_form = rouge_mean("A cat is sitting on a mat", "The cat is sitting on the mat")
    assert result["individual_scores"] == [1.0, 1.0, free_form, 1.0, 0.5, 0.9]
    assert all(isinstance(value, float) for value in result["individual_scores"])
    assert isinstance(result["score"], float)
    assert result["score"] == pytest.approx(sum(result["individual_scores"]) / 6)
    assert result["failure_kinds"] == [None] * 6
    assert result["outcomes"][:2] == ["B", "42.5"]
    assert result["per_type"] == {
        "multiple choice": {"score": 1.0, "count": 1},
        "numerical": {"score": 1.0, "count": 2},
        "free-form": {"score": free_form, "count": 1},
        "OCR": {"score": 0.5, "count": 1},
        "regression": {"score": 0.9, "count": 1},
    }


def test_the_docstring_example_holds():
    evaluator = TypedAnswerEvaluator()
    result = evaluator.run(
        predicted_answers=["The answer is <answer>B</answer>", "Sales: 1,204 units", "It is 9"],
        ground_truth_answers=["<answer>B</answer>", "1204", "10"],
        question_types=["multiple choice", "numerical", "regression"],
    )
    assert "[1.0, 1.0, 0.9]" in TypedAnswerEvaluator.__doc__
    assert result["individual_scores"] == [1.0, 1.0, 0.9]
    assert result["per_type"]["regression"] == {"score": 0.9, "count": 1}


def test_failure_kinds_output():
    result = TypedAnswerEvaluator(on_unknown="zero").run(
        predicted_answers=[None, "C", "no number", "qwerty", "x"],
        ground_truth_answers=["B", "B", "5", "hello world", "y"],
        question_types=["mcq", "mcq", "numerical", "OCR", "essay"],
    )
    assert result["failure_kinds"] == ["parse_failure", "wrong", "parse_failure", "wrong", "unknown_type"]
    assert result["failure_counts"]["parse_failure"] == 2
    assert result["failure_counts"]["unknown_type"] == 1
    assert result["score"] == 0.0


def test_run_async_gives_the_same_result():
    evaluator = TypedAnswerEvaluator()
    expected = evaluator.run(predicted_answers=PREDICTIONS, ground_truth_answers=TRUTHS, question_types=TYPES)
    got = asyncio.run(
        evaluator.run_async(predicted_answers=PREDICTIONS, ground_truth_answers=TRUTHS, question_types=TYPES)
    )
    assert got == expected


def test_default_type_when_no_question_types():
    evaluator = TypedAnswerEvaluator(default_type="Numeric")
    result = evaluator.run(predicted_answers=["1,204"], ground_truth_answers=["1204"])
    assert result["per_type"] == {"numerical": {"score": 1.0, "count": 1}}
    with pytest.raises(ValueError, match="question_types is missing"):
        TypedAnswerEvaluator().run(predicted_answers=["1"], ground_truth_answers=["1"])
    with pytest.raises(ValueError, match="default_type 'essay' is not a known question type"):
        TypedAnswerEvaluator(default_type="essay")


def test_bad_inputs_name_the_position():
    evaluator = TypedAnswerEvaluator()
    with pytest.raises(
        ValueError, match=r"unknown question type 'essay' at position 1; known types: 'multiple choice'"
    ):
        evaluator.run(predicted_answers=["a", "b"], ground_truth_answers=["a", "b"], question_types=["OCR", "essay"])
    with pytest.raises(ValueError, match=r"position 0 \(numerical\) holds no number"):
        evaluator.run(predicted_answers=["1"], ground_truth_answers=["none"], question_types=["numerical"])
    with pytest.raises(ValueError, match="same length"):
        evaluator.run(predicted_answers=["1"], ground_truth_answers=["1", "2"], question_types=["OCR"])
    with pytest.raises(ValueError, match="empty"):
        evaluator.run(predicted_answers=[], ground_truth_answers=[], question_types=[])
    with pytest.raises(TypeError, match="predicted_answers must be a list"):
        evaluator.run(predicted_answers="1", ground_truth_answers=["1"], question_types=["OCR"])


@pytest.mark.parametrize(
    ("parameters", "error"),
    [
        ({"use_stemmer": "yes"}, TypeError),
        ({"decimals": 2.5}, TypeError),
        ({"decimals": True}, TypeError),
        ({"decimals": -1}, ValueError),
        ({"rel_tol": "0.1"}, TypeError),
        ({"rel_tol": -0.1}, ValueError),
        ({"number": "middle"}, ValueError),
        ({"percent": 1}, TypeError),
        ({"on_unknown": "skip"}, ValueError),
        ({"rouge_types": "rouge1"}, TypeError),
        ({"rouge_types": ["rougeLsum"]}, ValueError),
        ({"custom_types": [yes_no]}, TypeError),
        ({"custom_types": {"numerical": yes_no}}, ValueError),
    ],
)
def test_init_validates_parameters(parameters, error):
    with pytest.raises(error):
        TypedAnswerEvaluator(**parameters)


def test_to_dict_and_from_dict_round_trip():
    evaluator = TypedAnswerEvaluator(
        use_stemmer=False, decimals=3, rel_tol=0.01, number="first", percent="either", ocr_ignore_case=True,
        rouge_types=["rouge1", "rougeL"], on_unknown="zero", default_type="OCR",
    )  # fmt: skip
    data = evaluator.to_dict()
    assert data == {
        "type": "haystack_integrations.components.evaluators.answer_eval.typed_answer.TypedAnswerEvaluator",
        "init_parameters": {
            "use_stemmer": False,
            "decimals": 3,
            "rel_tol": 0.01,
            "abs_tol": 0.0,
            "number": "first",
            "percent": "either",
            "ocr_ignore_case": True,
            "ocr_ignore_punctuation": False,
            "rouge_types": ["rouge1", "rougeL"],
            "on_unknown": "zero",
            "default_type": "OCR",
            "custom_types": None,
        },
    }
    loaded = TypedAnswerEvaluator.from_dict(data)
    assert loaded.to_dict() == data
    inputs = {"predicted_answers": PREDICTIONS, "ground_truth_answers": TRUTHS, "question_types": TYPES}
    assert loaded.run(**inputs) == evaluator.run(**inputs)


def test_from_dict_validates():
    data = TypedAnswerEvaluator().to_dict()
    data["init_parameters"]["percent"] = "ratio"
    with pytest.raises(ValueError, match="percent"):
        TypedAnswerEvaluator.from_dict(data)


def test_custom_scorers_are_saved_by_import_path_and_load_only_from_allowed_modules():
    evaluator = TypedAnswerEvaluator(custom_types={"yes/no": yes_no})
    data = evaluator.to_dict()
    assert data["init_parameters"]["custom_types"] == {"yes/no": "tests.test_typed_component.yes_no"}
    pipeline = Pipeline()
    pipeline.add_component("typed", evaluator)
    saved = pipeline.dumps()
    with pytest.raises(DeserializationError):
        Pipeline.loads(saved)  # tests.* is not on Haystack's deserialisation allow-list
    loaded = Pipeline.loads(saved, allowed_modules=["tests.*"])
    inputs = {
        "predicted_answers": ["Yes.", "no"],
        "ground_truth_answers": ["yes", "yes"],
        "question_types": ["Yes_No"] * 2,
    }
    assert loaded.run({"typed": inputs})["typed"]["individual_scores"] == [1.0, 0.0]


def test_a_lambda_custom_scorer_cannot_be_saved():
    evaluator = TypedAnswerEvaluator(custom_types={"essay": lambda answer, reference: 1.0})
    assert evaluator.run(predicted_answers=["x"], ground_truth_answers=["y"], question_types=["essay"])["score"] == 1.0
    with pytest.raises(SerializationError, match=r"custom type 'essay' cannot be saved.*module-level function"):
        evaluator.to_dict()


def pipeline_beside_answer_contains():
    pipeline = Pipeline()
    pipeline.add_component("contains", AnswerContainsEvaluator())
    pipeline.add_component("typed", TypedAnswerEvaluator())
    return pipeline


def run_both(pipeline):
    data = {"ground_truth_answers": ["1204", "Paris", "10"], "predicted_answers": ["1,204 units", "Lyon", "It is 9"]}
    return pipeline.run(
        {"contains": data, "typed": {**data, "question_types": ["numerical", "free-form", "regression"]}}
    )


def test_pipeline_beside_answer_contains_and_evaluation_run_result():
    result = run_both(pipeline_beside_answer_contains())
    assert result["contains"]["individual_scores"] == [1, 0, 0]
    assert result["typed"]["individual_scores"] == [1.0, 0.0, 0.9]
    report = EvaluationRunResult(
        run_name="typed",
        inputs={"question": ["q1", "q2", "q3"], "ground_truth_answers": ["1204", "Paris", "10"]},
        results={"contains": result["contains"], "typed": result["typed"]},
    )
    aggregated = report.aggregated_report(output_format="json")
    assert aggregated["metrics"] == ["contains", "typed"]
    assert aggregated["score"][1] == pytest.approx(1.9 / 3)


def test_pipeline_dumps_and_loads_without_an_allow_list():
    pipeline = pipeline_beside_answer_contains()
    loaded = Pipeline.loads(pipeline.dumps())
    assert set(loaded.graph.nodes) == {"contains", "typed"}
    assert run_both(loaded) == run_both(pipeline)


@pytest.mark.slow
@pytest.mark.subprocess  # what a fresh interpreter imports
def test_missing_extra_raises_an_import_error_naming_it():
    code = (
        "import sys; sys.modules['rouge_score'] = None\n"
        "from haystack_integrations.components.evaluators.answer_eval import TypedAnswerEvaluator\n"
        "try:\n    TypedAnswerEvaluator()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "needs rouge-score, which is not installed" in done.stdout
    assert 'pip install "answer-eval-haystack[typed]"' in done.stdout


@pytest.mark.slow
@pytest.mark.subprocess  # what a fresh interpreter imports
def test_importing_the_components_does_not_import_the_typed_extra():
    code = (
        "import sys\nimport haystack_integrations.components.evaluators.answer_eval\n"
        "print(sorted(name for name in ('jiwer', 'rouge_score', 'nltk') if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
