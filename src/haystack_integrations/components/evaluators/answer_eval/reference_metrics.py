"""ReferenceMetricsEvaluator: exact match, BLEU (sacrebleu) and ROUGE (rouge-score) as one Haystack component."""

from __future__ import annotations

from typing import Any, ClassVar

from haystack import component

from answer_eval.evaluators.reference_scoring import ReferenceMetricsCore, ReferenceOptions
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    documented,
    socket_types,
)

__all__ = ["ReferenceMetricsEvaluator"]


@component
class ReferenceMetricsEvaluator(EvaluatorComponent):
    """Scores answers against reference answers with exact match, BLEU and ROUGE, computed locally.

    Each metric gives a value in [0, 1] per answer; an answer with several references takes the
    best value over them. BLEU is sacrebleu's sentence BLEU divided by 100 (and a corpus BLEU
    over the whole run in `metrics["bleu"]["corpus_score"]`); ROUGE is the F-measure of
    `rouge-score`. The outputs hold every metric in `metrics`, plus a flat `score` and
    `individual_scores` of the first metric so `EvaluationRunResult` takes the output unchanged.

    Predictions may be in any form `AnswerContainsEvaluator` reads (strings, `GeneratedAnswer`,
    `ChatMessage`, generator and agent outputs, mappings); one with no text scores 0 with failure
    kind `parse_failure` (`error` for a failed result).

    BLEU and ROUGE need the `metrics` extra: `pip install "answer-eval-haystack[metrics]"`.

    Usage example:
    ```python
    from haystack_integrations.components.evaluators.answer_eval import ReferenceMetricsEvaluator

    evaluator = ReferenceMetricsEvaluator(metrics=["exact_match", "rouge", "bleu"], ignore_case=True)
    result = evaluator.run(
        ground_truth_answers=[["paris", "Paris, France"], "The tower is 330 metres high."],
        predicted_answers=["Paris", "The tower is 330 metres tall."],
    )
    print(result["metrics"]["exact_match"]["individual_scores"])  # [1, 0]
    print(round(result["metrics"]["rouge"]["individual_scores"][1], 3))  # 0.833
    print(result["score"])  # 0.5
    ```
    """

    sockets: ClassVar[dict[str, str]] = {"ground_truth_answers": "reference", "predicted_answers": "prediction"}

    core = ReferenceMetricsCore
    _evaluator: ReferenceMetricsCore

    @documented(ReferenceOptions)
    def __init__(
        self,
        metrics: list[str] | None = None,
        strip: bool = ReferenceOptions.strip,
        ignore_case: bool = ReferenceOptions.ignore_case,
        fold: bool = ReferenceOptions.fold,
        bleu_tokenize: str = ReferenceOptions.bleu_tokenize,
        bleu_smooth_method: str = ReferenceOptions.bleu_smooth_method,
        bleu_smooth_value: float | None = ReferenceOptions.bleu_smooth_value,
        bleu_lowercase: bool = ReferenceOptions.bleu_lowercase,
        use_effective_order: bool = ReferenceOptions.use_effective_order,
        rouge_type: str = ReferenceOptions.rouge_type,
        use_stemmer: bool = ReferenceOptions.use_stemmer,
        split_summaries: bool = ReferenceOptions.split_summaries,
    ) -> None:
        """Create a ReferenceMetricsEvaluator.

        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If a metric, tokenizer, smoothing method or ROUGE type is unknown.
        :raises ImportError: If BLEU or ROUGE is asked for and sacrebleu or rouge-score is missing.
        """
        self._evaluator = self._build(locals())

    @component.output_types(**socket_types(ReferenceMetricsCore.sockets))
    def run(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Score each predicted answer against its reference answer(s).

        :param ground_truth_answers:
            Per item, one reference (a str or a finite number) or a list of them; the best value over the
            references is kept. The same list that feeds `AnswerExactMatchEvaluator` works here.
        :param predicted_answers:
            Per item, the pipeline's output (any form `read_output` reads).
        :returns:
            A dictionary with:
            - `metrics`: metric name to `{"score", "individual_scores"}` (`"corpus_score"` too for `bleu`).
            - `score`, `individual_scores`: those of the first metric.
            - `failure_kinds`: `None` where the answer has text, else `parse_failure` or `error`.
            - `failure_counts`: failure kind to count.
        :raises TypeError: If an input is not a list or a reference is neither a str nor a number.
        :raises ValueError: If the lists are empty or differ in length, or a reference is blank or
            an empty list; the message names the position.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)

    @component.output_types(**socket_types(ReferenceMetricsCore.sockets))
    async def run_async(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Asynchronously score answers; same inputs, outputs and errors as `run`.

        Scoring is CPU work with no I/O, so this runs it directly rather than in a thread.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)
