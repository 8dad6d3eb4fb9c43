"""AnswerContainsEvaluator: number-aware "answer contains" scoring as a Haystack component."""

from __future__ import annotations

from typing import Any

from haystack import component

from answer_eval.evaluators.contains import AnswerContainsCore, ContainsOptions
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    documented,
    socket_types,
)

__all__ = ["AnswerContainsEvaluator"]


@component
class AnswerContainsEvaluator(EvaluatorComponent):
    """Grades answers as right when they contain an acceptable answer, and says why the others are wrong.

    Where `AnswerExactMatchEvaluator` needs the answer to equal the label character for character,
    this evaluator accepts "Sheffield produced 12,400 units." for the label "12400": both sides are
    folded (case, white space, thousands separators, Unicode digits and minus signs) and numbers are
    matched whole, so "12" is not found in "2012", "0.12" or "12.5". Questions labelled
    `NOT_IN_DOCUMENT` are right when the answer reports the document does not hold the answer.
    Every wrong answer gets a failure kind: `parse_failure`, `budget_stop`, `refusal`,
    `not_in_document`, `wrong` or `error`.

    Predictions may be strings, `GeneratedAnswer`s, `ChatMessage`s, generator outputs
    (`{"replies": [...], "meta": [...]}`), agent results (`{"messages": [...]}`) or mappings with
    `answer`/`text` and optional `partial`, `notes`, `trace`, `failure_kind`, `error`, `status`.

    Usage example:
    ```python
    from haystack_integrations.components.evaluators.answer_eval import AnswerContainsEvaluator

    evaluator = AnswerContainsEvaluator()
    result = evaluator.run(
        ground_truth_answers=["12400", ["Paris", "Paris, France"], "NOT_IN_DOCUMENT"],
        predicted_answers=["Sheffield produced 12,400 units.", "Lyon", "The text does not say."],
    )
    print(result["individual_scores"])  # [1, 0, 1]
    print(result["failure_kinds"])  # [None, 'wrong', None]
    print(result["score"])  # 0.666...
    ```
    """

    core = AnswerContainsCore
    _evaluator: AnswerContainsCore

    @documented(ContainsOptions)
    def __init__(
        self,
        not_found_label: str = ContainsOptions.not_found_label,
        extra_not_found_phrases: list[str] | None = None,
    ) -> None:
        """Create an AnswerContainsEvaluator.

        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If the label or a phrase is blank.
        """
        self._evaluator = self._build(locals())

    @component.output_types(**socket_types(AnswerContainsCore.sockets))
    def run(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Score each predicted answer against the acceptable answers of its question.

        :param ground_truth_answers:
            Per question, one acceptable answer (a str or a number: int, finite float,
            `Decimal`, numpy scalar) or a list of them. The same list that
            feeds `AnswerExactMatchEvaluator` works here.
        :param predicted_answers:
            Per question, the pipeline's output in any form listed in the class docstring. An
            output that cannot be read is scored `parse_failure`; it never stops the batch.
        :returns:
            A dictionary with:
            - `score`: the share of right answers.
            - `individual_scores`: 1 or 0 per answer.
            - `failure_kinds`: `None` where right, otherwise the failure kind.
            - `outcomes`: each answer's folded text, `None` where there is none.
            - `failure_counts`: failure kind to count (every kind present, 0 when absent).
        :raises TypeError: If an input is not a list or a label is neither a str nor a number.
        :raises ValueError: If the lists are empty or differ in length, or a question has an
            empty list of acceptable answers; the message names the position.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)

    @component.output_types(**socket_types(AnswerContainsCore.sockets))
    async def run_async(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Asynchronously score answers; same inputs, outputs and errors as `run`.

        Scoring is pure CPU work with no I/O, so this runs it directly rather than in a thread.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)
