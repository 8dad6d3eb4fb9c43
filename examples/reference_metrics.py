"""Reference metrics (exact match, BLEU, ROUGE) in an evaluation pipeline, then a pairwise comparison.

Scores InstructGPT's zero-shot answers to 301 Natural Questions (bundled in examples/data) with
ReferenceMetricsEvaluator beside AnswerContainsEvaluator, prints Haystack's EvaluationRunResult
report, then compares those answers (the candidate) with a deliberately weaker baseline, the same
answers cut to their first four words, with PairwiseEvaluator. Needs the `metrics` extra.

Run: python examples/reference_metrics.py [--limit N]
"""

import argparse
import json
from pathlib import Path

from haystack import Pipeline
from haystack.evaluation import EvaluationRunResult

from haystack_integrations.components.evaluators.answer_eval import (
    AnswerContainsEvaluator,
    PairwiseEvaluator,
    ReferenceMetricsEvaluator,
)

DATA = Path(__file__).parent / "data" / "nq301_davinci_zeroshot.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None, help="score only the first N rows")
    args = parser.parse_args()

    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()][: args.limit]
    questions = [row["question"] for row in rows]
    predictions = [row["prediction"] for row in rows]
    references = [row["answers"] for row in rows]  # one or more acceptable answers per question

    pipeline = Pipeline()
    pipeline.add_component("answer_contains", AnswerContainsEvaluator())
    pipeline.add_component("reference", ReferenceMetricsEvaluator(metrics=["rouge", "bleu", "exact_match"]))
    data = {"ground_truth_answers": references, "predicted_answers": predictions}
    results = pipeline.run({"answer_contains": data, "reference": data})

    metrics = results["reference"]["metrics"]
    # EvaluationRunResult takes one score and one list per metric: split the mapping.
    report = EvaluationRunResult(
        run_name="davinci-003 zero-shot",
        inputs={"question": questions, "predicted_answers": predictions},
        results={
            "answer_contains": results["answer_contains"],
            **{name: {"score": m["score"], "individual_scores": m["individual_scores"]} for name, m in metrics.items()},
        },
    )
    print(f"items: {len(rows)}")
    aggregated = report.aggregated_report(output_format="json")
    for name, score in zip(aggregated["metrics"], aggregated["score"], strict=True):
        print(f"  {name:<16} {score:.4f}")
    print(f"  corpus BLEU      {metrics['bleu']['corpus_score']:.4f}")

    baseline = [" ".join(answer.split()[:4]) for answer in predictions]
    print("\ncandidate (full answers) against baseline (first four words):")
    for name, evaluator in (
        ("answer_contains", PairwiseEvaluator(evaluator=AnswerContainsEvaluator())),
        ("rouge", PairwiseEvaluator(evaluator=ReferenceMetricsEvaluator(metrics=["rouge"]))),
    ):
        result = evaluator.run(
            ground_truth_answers=references, predicted_answers=predictions, baseline_answers=baseline
        )
        print(
            f"  {name:<16} wins {result['wins']:>3}  losses {result['losses']:>3}  ties {result['ties']:>3}  "
            f"win rate {result['win_rate']:.3f}  {result['test']} p = {result['p_value']:.2g}"
        )


if __name__ == "__main__":
    main()
