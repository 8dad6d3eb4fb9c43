"""Tool-call metrics on the reference document's booking example and its variations.

Reads examples/data/tool_calls.jsonl (each row: a predicted call, a baseline call and the reference
call, as JSON strings), scores the predictions with ToolCallEvaluator under three settings, then
compares the predictions with the baselines with PairwiseEvaluator. Needs no extra.

Run: python examples/tool_calls.py
"""

import json
from pathlib import Path

from haystack.dataclasses import ChatMessage, ToolCall

from haystack_integrations.components.evaluators.answer_eval import PairwiseEvaluator, ToolCallEvaluator

DATA = Path(__file__).parent / "data" / "tool_calls.jsonl"
SHORT = {
    "tool_call_valid": "valid",
    "tool_name_match": "name",
    "tool_parameter_key_match": "keys",
    "tool_parameter_kv_match": "values",
}


def main() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    predictions = [row["prediction"] for row in rows]
    references = [row["reference"] for row in rows]

    # A Haystack ChatMessage carrying a ToolCall is read like the JSON strings.
    arguments = json.loads(references[0])["tool_calls"][0]["arguments"]
    predictions.append(ChatMessage.from_assistant(tool_calls=[ToolCall("book_tickets", {**arguments, "num_tix": 2})]))
    references.append(references[0])
    ids = [row["id"] for row in rows] + ["chat_message"]

    settings = {
        "normalised": ToolCallEvaluator(),
        "strict": ToolCallEvaluator(strict=True),
        "all calls, by name": ToolCallEvaluator(calls="all", alignment="name"),
    }
    for title, evaluator in settings.items():
        result = evaluator.run(ground_truth_answers=references, predicted_answers=predictions)
        print(f"{title}:")
        print(f"  {'id':<22}" + "".join(f"{SHORT[name]:>8}" for name in result["metrics"]) + "  failure")
        for index, item in enumerate(ids):
            values = "".join(f"{m['individual_scores'][index]:>8.2f}" for m in result["metrics"].values())
            print(f"  {item:<22}{values}  {result['failure_kinds'][index] or ''}")
        print(f"  {'mean':<22}" + "".join(f"{m['score']:>8.2f}" for m in result["metrics"].values()))
        print()

    pairwise = PairwiseEvaluator(evaluator=ToolCallEvaluator(), metric="tool_parameter_kv_match")
    result = pairwise.run(
        ground_truth_answers=[row["reference"] for row in rows],
        predicted_answers=[row["prediction"] for row in rows],
        baseline_answers=[row["baseline"] for row in rows],
    )
    print("prediction against baseline (tool_parameter_kv_match):")
    print(f"  choices  {result['pairwise_choices']}")
    print(
        f"  wins {result['wins']}, losses {result['losses']}, ties {result['ties']}; "
        f"win rate {result['win_rate']:.3f}; {result['test']} p = {result['p_value']:.3f}"
    )


if __name__ == "__main__":
    main()
