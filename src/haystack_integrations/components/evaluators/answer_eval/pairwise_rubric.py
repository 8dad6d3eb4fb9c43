"""PairwiseRubricEvaluator: an LLM says which of two answers is better on a rubric, with position bias cancelled."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from haystack import component

from answer_eval.evaluators.rubric_grading import RubricOptions
from answer_eval.evaluators.rubric_summary import PAIRWISE_SOCKETS
from answer_eval.llm.grading import BASELINE, CANDIDATE, TIE, win_figures
from haystack_integrations.components.evaluators.answer_eval._base import documented, socket_outputs, socket_types
from haystack_integrations.components.evaluators.answer_eval._grader import (
    CHAT_GENERATOR_DOC,
    MIN_GRADED_SHARE,
    MIN_GRADED_SHARE_DOC,
    PROGRESS_BAR_DOC,
    GraderComponent,
    Scored,
)

__all__ = ["PairwiseRubricEvaluator"]


@component
class PairwiseRubricEvaluator(GraderComponent):
    """Compares a candidate system's answers with a baseline's, pair by pair, with an LLM grading on a rubric.

    Each pair gets `CANDIDATE`, `BASELINE` or `TIE`, an explanation and a confidence. With
    `swap=True` (the default) each pair is also asked with the two answers in the other order; a
    choice that changes with the order is position bias, so the pair is a tie, and the share of
    such flips is reported. The batch gets the candidate's win rate (ties count half) and the sign
    test's two-sided p-value (ties left out), as `PairwiseEvaluator` reports them.

    Usage example:
    ```python
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack_integrations.components.evaluators.answer_eval import PairwiseRubricEvaluator

    compare = PairwiseRubricEvaluator(metric="question_answering_quality", chat_generator=OpenAIChatGenerator())
    result = compare.run(
        predicted_answers=["France is a country in Western Europe."],
        baseline_answers=["France is a country."],
        questions=["Where is France?"],
        contexts=["France is a country located in Western Europe. It borders Belgium and Spain."],
    )
    print(result["pairwise_choices"], result["win_rate"], result["flip_rate"])
    ```
    """

    sockets: ClassVar[dict[str, str]] = {**GraderComponent.sockets, "baseline_answers": "baseline"}

    @documented(
        RubricOptions,
        chat_generator=CHAT_GENERATOR_DOC + " The choice is the majority of all their samples in each order.",
        min_graded_share=MIN_GRADED_SHARE_DOC,
        progress_bar=PROGRESS_BAR_DOC,
    )
    def __init__(
        self,
        metric: str | Mapping[str, Any] = RubricOptions.metric,
        chat_generator: Any = None,
        samples: int = RubricOptions.samples,
        swap: bool = RubricOptions.swap,
        concurrency: int = RubricOptions.concurrency,
        max_retries: int = RubricOptions.max_retries,
        retry_backoff: float = RubricOptions.retry_backoff,
        max_calls: int | None = RubricOptions.max_calls,
        cache_path: str | None = RubricOptions.cache_path,
        sampling: str = RubricOptions.sampling,
        timeout: float | None = RubricOptions.timeout,
        structured: str = RubricOptions.structured,
        min_graded_share: float = MIN_GRADED_SHARE,
        progress_bar: bool = True,
    ) -> None:
        """Create a PairwiseRubricEvaluator.

        Its metric is one that compares pairs (`summarization_quality`, `question_answering_quality`,
        or a rubric dict with `"pairwise": true`).

        :raises ValueError: For a metric that does not compare pairs, a bad limit, or a `min_graded_share`
            outside 0 to 1.
        """
        self._evaluator = self._build({**locals(), "pairwise": True})

    @component.output_types(**socket_types(PAIRWISE_SOCKETS))
    def run(
        self,
        predicted_answers: list[Any],
        baseline_answers: list[Any],
        questions: list[str] | None = None,
        contexts: list[Any] | None = None,
        ground_truth_answers: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Compare each candidate answer with the baseline's answer to the same input.

        :param predicted_answers: The candidate system's responses (any form the package reads).
        :param baseline_answers: The baseline system's responses, in the same order.
        :param questions: The instruction of each pair (the question and any instructions).
        :param contexts: The text both responses should rest on: a str, or a list of str or Documents.
        :param ground_truth_answers: A reference response per pair, when the rubric reads one.
        :returns:
            A dictionary with:
            - `pairwise_choices`: per pair, `CANDIDATE`, `BASELINE`, `TIE`, or `None` on failure.
            - `explanations`, `confidences`: per pair (confidence: the share of samples, both orders, agreeing).
            - `failure_kinds`, `failure_counts`, `samples_used`, `graded`, `graded_share`: as
              RubricEvaluator's (`samples_used` counts both orders).
            - `wins`, `losses`, `ties`, `win_rate` (ties count half), `p_value` (two-sided sign test);
              `win_rate` and `p_value` are `None` when fewer than `min_graded_share` of the pairs got a choice.
            - `position_flips`, `flip_rate`: pairs whose choice changed with the order (with `swap`).
            - `usage`, `signature`: as RubricEvaluator's.
            - `judge_choices`: per pair, each judge's own choice (`None` where it gave none).
            - `judge_agreement`: a jury's agreement between its judges, `None` for one generator:
              `judges`, `items` (the pairs every judge graded, which it is computed over) and
              `fleiss_kappa` (`None` when undefined: every choice the same).
        :raises ValueError: When an input the metric needs is missing, or lengths differ.
        """
        return self._run(
            predicted_answers=predicted_answers,
            baseline_answers=baseline_answers,
            questions=questions,
            contexts=contexts,
            ground_truth_answers=ground_truth_answers,
        )

    @component.output_types(**socket_types(PAIRWISE_SOCKETS))
    async def run_async(
        self,
        predicted_answers: list[Any],
        baseline_answers: list[Any],
        questions: list[str] | None = None,
        contexts: list[Any] | None = None,
        ground_truth_answers: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Asynchronously compare each pair; as `run`."""
        return await self._run_async(
            predicted_answers=predicted_answers,
            baseline_answers=baseline_answers,
            questions=questions,
            contexts=contexts,
            ground_truth_answers=ground_truth_answers,
        )

    def _check(self, inputs: Mapping[str, Any]) -> None:
        """As RubricEvaluator's, and a list of baseline answers as long."""
        GraderComponent._check(self, inputs)  # not super(): @component makes the class anew
        baselines = inputs["baseline_answers"]
        if not isinstance(baselines, list) or len(baselines) != len(inputs["predicted_answers"]):
            raise ValueError("baseline_answers must be a list as long as predicted_answers")

    def _outputs(self, result: Scored) -> dict[str, Any]:
        grades, usage, per_judge = result
        columns = self._evaluator.columns(grades)
        choices = columns["choice"]
        swapped = [flipped for flipped in columns["flipped"] if flipped is not None]
        figures = win_figures(choices.count(CANDIDATE), choices.count(BASELINE), choices.count(TIE))
        over_graded = figures["win_rate"]
        if not self._enough_graded(columns["failure_kind"]):  # a rate over a few pairs is not one over all
            figures = {**figures, "win_rate": None, "p_value": None}
        return socket_outputs(
            PAIRWISE_SOCKETS,
            {
                **columns,
                **self._graded(columns, usage, ("win_rate", over_graded)),
                **figures,
                "position_flips": sum(swapped),
                "flip_rate": sum(swapped) / len(swapped) if swapped else None,
                "per_judge": per_judge,
                "judge_agreement": self._judge_agreement(per_judge),
            },
        )
