"""Score answers by question type with TypedAnswerEvaluator: standalone, then in a Haystack Pipeline.

Run: python examples/typed_answers.py   (needs: pip install "answer-eval-haystack[typed]")

The three rows of examples/data/typed_example.jsonl (multiple choice, numerical, free-form) are
scored first on their own, then in a Pipeline beside AnswerContainsEvaluator, with more items that
show the numerical, OCR and regression rules. The same file runs through the command line:

    answer-eval typed examples/data/typed_example.jsonl --output scored.jsonl
"""

import json
import os
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # set before Haystack is imported

from haystack import Pipeline

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, TypedAnswerEvaluator

DATA = Path(__file__).resolve().parent / "data" / "typed_example.jsonl"


def standalone() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    evaluator = TypedAnswerEvaluator()
    result = evaluator.run(
        ground_truth_answers=[row["solution"] for row in rows],
        predicted_answers=[row["model_output"] for row in rows],
        question_types=[row["problem_type"] for row in rows],
    )
    print("standalone, examples/data/typed_example.jsonl")
    for row, reward in zip(rows, result["individual_scores"], strict=True):
        print(f"  {row['problem_type']:<16} reward {reward:.4f}   {row['model_output']!r}")
    print(f"  mean reward      {result['score']:.4f}")


def in_a_pipeline() -> None:
    pipeline = Pipeline()
    pipeline.add_component("contains", AnswerContainsEvaluator())
    pipeline.add_component("typed", TypedAnswerEvaluator())
    data = {
        "predicted_answers": [
            "Sheffield produced 12,400 units.",
            "The result is <answer>42.5</answer>",
            "<answer>The quick brown fox jumps over the lazy dog</answer>",
            "I estimate <answer>9</answer>",
            "Option C",
        ],
        "ground_truth_answers": ["12400", "42.50", "The quick brown fox jumped over the lazy dog", "10", "B"],
    }
    types = ["numerical", "numerical", "OCR", "regression", "multiple choice"]
    result = pipeline.run({"contains": data, "typed": {**data, "question_types": types}})
    print("\nin a Pipeline beside AnswerContainsEvaluator")
    print(f"  contains  individual_scores {result['contains']['individual_scores']}")
    print(f"  typed     individual_scores {[round(score, 4) for score in result['typed']['individual_scores']]}")
    print(f"  typed     failure_kinds     {result['typed']['failure_kinds']}")
    for name, means in result["typed"]["per_type"].items():
        print(f"  typed     {name:<16} mean {means['score']:.4f} over {means['count']}")


if __name__ == "__main__":
    standalone()
    in_a_pipeline()
