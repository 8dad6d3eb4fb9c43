"""Keep the package's per-answer detail in Haystack's EvaluationRunResult reports.

`EvaluationRunResult.detailed_report()` shows the run's `inputs` and each evaluator's
`individual_scores`, and nothing else of an evaluator's outputs. To see *why* an answer is wrong
beside its score, put the per-answer outputs you want (failure kinds, the judge's stage and
evidence, a rubric grader's explanations) into `inputs` as columns of their own: every per-answer
output of these components is a list as long as `individual_scores`.

The shared data dict below feeds Haystack's `AnswerExactMatchEvaluator` correctly only because
ground truths and predictions are plain strings: exact match compares strings, so a list of
acceptable answers, a number or a `ChatMessage` would be compared as something else.

Run: python examples/detailed_report.py            (pandas for the DataFrame: the dask extra brings it)
"""

from __future__ import annotations

import importlib.util
from typing import Any

from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator
from haystack.evaluation import EvaluationRunResult

from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, AnswerJudgeEvaluator

QUESTIONS = ["How many units did Sheffield make?", "Who was president in 1972?", "How tall is the tower?"]
GROUND_TRUTHS = ["12400", "Richard Nixon", "45.2 m"]
PREDICTIONS = ["Sheffield produced 12,400 units.", "Nixon", "The tower is 145.2 m tall."]
# The per-answer outputs kept, for each evaluator: beside its individual scores in the report.
DETAIL = {"contains": ("failure_kinds",), "judge": ("stages", "evidence", "failure_kinds")}


def detail_columns(results: dict[str, dict[str, Any]], keep: dict[str, tuple[str, ...]]) -> dict[str, list[Any]]:
    """``{"<evaluator>_<output>": values}`` for every per-answer output named in ``keep``."""
    return {f"{name}_{output}": list(results[name][output]) for name, outputs in keep.items() for output in outputs}


def main() -> None:
    pipeline = Pipeline()
    pipeline.add_component("exact", AnswerExactMatchEvaluator())
    pipeline.add_component("contains", AnswerContainsEvaluator())
    pipeline.add_component("judge", AnswerJudgeEvaluator())
    data = {"ground_truth_answers": GROUND_TRUTHS, "predicted_answers": PREDICTIONS}  # plain strings: see above
    results = pipeline.run({"exact": data, "contains": data, "judge": data})

    inputs = {"question": QUESTIONS, "ground_truth": GROUND_TRUTHS, "prediction": PREDICTIONS}
    run = EvaluationRunResult(
        run_name="rag-v1",
        inputs={**inputs, **detail_columns(results, DETAIL)},
        results={name: results[name] for name in ("exact", "contains", "judge")},
    )
    print(run.aggregated_report())
    report = run.detailed_report()  # a dict of columns: the detail beside the scores
    columns = ("prediction", "contains", "contains_failure_kinds", "judge_stages")
    for row in zip(*(report[name] for name in columns), strict=True):
        print(row)
    if importlib.util.find_spec("pandas"):
        frame = run.detailed_report(output_format="df")
        print(frame[["prediction", "exact", "contains", "judge", "judge_evidence"]].to_string(max_colwidth=60))
    else:
        print("(the DataFrame needs pandas: the dask extra brings it, or pip install pandas)")


if __name__ == "__main__":
    main()
