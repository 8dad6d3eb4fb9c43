"""Agreement of the contains evaluator and the judge with people, on every human-judged set in data/judge/.

Prints one row per set and evaluator: agreement, Cohen's kappa and the number of answers. The sets:
NQ301 dev (804 answers), EfficientQA (5,886; "definitely" or "possibly correct" counts as acceptable,
and "definitely correct" only), EVOUNA TriviaQA (9,690; per answering system too). The judge runs as
shipped (its rules and acceptance model).

Nothing is fitted here: the figures are those of the rules as they are, on data the rules were not
tuned on except NQ301 dev (the set the judge's rules were written against, so its figure is in-sample).

Run: python scripts/agreement_table.py [--json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from answer_eval.evaluators.contains_rules import AnswerContainsScorer
from answer_eval.evaluators.judge.cascade import AnswerJudge
from answer_eval.stats.rater_agreement import agreement, cohen_kappa

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data" / "judge"


def _rows(name: str) -> list[dict[str, Any]]:
    with open(DATA / name, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _sets() -> Iterator[tuple[str, list[dict[str, Any]], Callable[[dict[str, Any]], bool]]]:
    yield "nq301-dev (in-sample for the rules)", _rows("nq301-dev.jsonl"), lambda r: bool(r["human_acceptable"])
    efficient = _rows("efficientqa-test-judged.jsonl")
    yield "efficientqa, definitely or possibly", efficient, lambda r: r["rating"] != "definitely_incorrect"
    yield "efficientqa, definitely only", efficient, lambda r: r["rating"] == "definitely_correct"
    evouna = _rows("evouna-tq.jsonl")
    yield "evouna-tq, all systems", evouna, lambda r: bool(r["human_acceptable"])
    for model in sorted({row["model"] for row in evouna}):
        subset = [row for row in evouna if row["model"] == model]
        yield f"evouna-tq, {model}", subset, lambda r: bool(r["human_acceptable"])


def measure() -> list[dict[str, Any]]:
    """One record per set and evaluator."""
    contains = AnswerContainsScorer()
    judge = AnswerJudge()
    results = []
    for name, rows, label in _sets():
        people = [label(row) for row in rows]
        golds = [row["answers"] for row in rows]
        predictions = [row["prediction"] for row in rows]
        questions = [row.get("question") for row in rows]
        verdicts = {
            "contains": [score == 1 for score in contains.score_columns(golds, predictions)[0]],
            "judge (lexical)": [v.correct for v in judge.judge_batch(golds, predictions, questions)],
        }
        for evaluator, values in verdicts.items():
            results.append(
                {
                    "set": name,
                    "evaluator": evaluator,
                    "answers": len(rows),
                    "agreement": round(agreement(values, people), 4),
                    "kappa": round(cohen_kappa(values, people), 4),
                }
            )
    return results


def main() -> None:
    """Print the table (Markdown) or, with --json, the records."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = measure()
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print("| set | evaluator | answers | agreement | kappa |\n| --- | --- | --- | --- | --- |")
    for row in results:
        print(f"| {row['set']} | {row['evaluator']} | {row['answers']} | {row['agreement']:.4f} | {row['kappa']:.4f} |")


if __name__ == "__main__":
    main()
