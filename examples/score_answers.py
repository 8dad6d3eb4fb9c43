"""Score a handful of answers with AnswerContainsEvaluator, standalone, and with the core helpers.

Run: python examples/score_answers.py
"""

from haystack.dataclasses import ChatMessage, GeneratedAnswer

from answer_eval import contains_answer, fold, is_not_found
from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

ground_truth_answers = ["12400", ["Paris", "Paris, France"], "NOT_IN_DOCUMENT", "2019", "45.2"]
predicted_answers = [
    "Sheffield produced 12,400 units.",  # a sentence: exact match would call it wrong
    GeneratedAnswer(data="The head office is in Lyon.", query="Where is the head office?", documents=[]),
    ChatMessage.from_assistant("The document does not mention the CEO's salary."),  # unanswerable: right
    {"answer": "The plant opened in", "partial": True, "notes": ["cost_cap_reached"]},  # stopped by a limit
    "The tower is 145.2 m tall.",  # 45.2 is not found inside 145.2
]

evaluator = AnswerContainsEvaluator()
result = evaluator.run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)
print("score:", result["score"])
for label, score, kind in zip(ground_truth_answers, result["individual_scores"], result["failure_kinds"], strict=False):
    print(f"  {label!s:<28} {score}  {kind or ''}")
print("failure counts:", {k: v for k, v in result["failure_counts"].items() if v})

print()
print(fold("1\u202f204 units"), "|", contains_answer("Take 5mg twice a day", "5"), "|", is_not_found("Unknown."))
