"""ReferenceMetricsEvaluator: exact match, BLEU (sacrebleu) and ROUGE (rouge-score) as one Haystack component."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from haystack import component

from answer_eval.evaluators.base import Columns
from answer_eval.evaluators.reference_scoring import ReferenceMetricsCore
from haystack_integrations.components.evaluators.answer_eval._base import (
    METRICS_OUTPUTS,
    EvaluatorComponent,
    metrics_outputs,
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

    def __init__(
        self,
        metrics: list[str] | None = None,
        strip: bool = True,
        ignore_case: bool = False,
        fold: bool = False,
        bleu_tokenize: str = "13a",
        bleu_smooth_method: str = "exp",
        bleu_smooth_value: float | None = None,
        bleu_lowercase: bool = False,
        use_effective_order: bool = True,
        rouge_type: str = "rougeLsum",
        use_stemmer: bool = False,
        split_summaries: bool = False,
    ) -> None:
        """Create a ReferenceMetricsEvaluator.

        :param metrics:
            Metric names among `exact_match`, `bleu` and `rouge`, each at most once; the first one
            gives the flat `score` and `individual_scores`. Default: all three in that order.
        :param strip:
            exact_match: ignore white space at both ends (default on).
        :param ignore_case:
            exact_match: compare case-folded text.
        :param fold:
            exact_match: compare in the package's normal form (`answer_eval.fold`: case, white
            space, Unicode digits and minus signs, thousands separators).
        :param bleu_tokenize:
            sacrebleu tokenizer: `13a` (default), `intl`, `char`, `none`, `zh`, `ja-mecab`, `ko-mecab`.
        :param bleu_smooth_method:
            sacrebleu smoothing: `exp` (default), `floor`, `add-k` or `none`.
        :param bleu_smooth_value:
            The value for `floor`/`add-k`; `None` keeps sacrebleu's default.
        :param bleu_lowercase:
            Lower-case both sides before BLEU.
        :param use_effective_order:
            Sentence BLEU leaves out n-gram orders a short answer does not have (default on).
        :param rouge_type:
            `rouge1` to `rouge9`, `rougeL` or `rougeLsum` (default).
        :param use_stemmer:
            ROUGE: Porter-stem words first.
        :param split_summaries:
            ROUGE `rougeLsum`: split sentences with NLTK (needs its `punkt_tab` data) rather than at newlines.
        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If a metric, tokenizer, smoothing method or ROUGE type is unknown.
        :raises ImportError: If BLEU or ROUGE is asked for and sacrebleu or rouge-score is missing.
        """
        self._evaluator: ReferenceMetricsCore = ReferenceMetricsCore.from_options(
            metrics=metrics,
            strip=strip,
            ignore_case=ignore_case,
            fold=fold,
            bleu_tokenize=bleu_tokenize,
            bleu_smooth_method=bleu_smooth_method,
            bleu_smooth_value=bleu_smooth_value,
            bleu_lowercase=bleu_lowercase,
            use_effective_order=use_effective_order,
            rouge_type=rouge_type,
            use_stemmer=use_stemmer,
            split_summaries=split_summaries,
        )

    @component.output_types(**METRICS_OUTPUTS)
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

    @component.output_types(**METRICS_OUTPUTS)
    async def run_async(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Asynchronously score answers; same inputs, outputs and errors as `run`.

        Scoring is CPU work with no I/O, so this runs it directly rather than in a thread.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)

    def _score(self, columns: Mapping[str, Sequence[Any]]) -> tuple[Columns, dict[str, float]]:
        return self._evaluator.score_with_corpus(columns)

    def _outputs(self, result: tuple[Columns, dict[str, float]]) -> dict[str, Any]:
        columns, corpus = result
        return metrics_outputs(columns, self._evaluator.scorer.metrics, corpus)
