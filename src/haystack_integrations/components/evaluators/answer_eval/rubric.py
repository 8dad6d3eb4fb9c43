"""RubricEvaluator: an LLM grades each answer on a rubric (the catalogue's or yours), with explanation, confidence."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from haystack import component

from answer_eval.evaluators.rubric_grading import RubricOptions
from answer_eval.evaluators.rubric_summary import POINTWISE_SOCKETS
from haystack_integrations.components.evaluators.answer_eval._base import documented, socket_outputs, socket_types
from haystack_integrations.components.evaluators.answer_eval._grader import (
    CHAT_GENERATOR_DOC,
    MIN_GRADED_SHARE,
    MIN_GRADED_SHARE_DOC,
    PROGRESS_BAR_DOC,
    GraderComponent,
    Scored,
)

__all__ = ["RubricEvaluator"]


@component
class RubricEvaluator(GraderComponent):
    """Grades each answer with an LLM on a rubric: a score on the metric's scale, an explanation, a confidence.

    The catalogue holds the twelve model-based metrics of the metric reference
    (`summarization_quality`, `question_answering_correctness`, `groundedness`, `safety`, ...;
    see docs/model-based-metrics.md for each one's criteria, scale and prompt); a rubric of your
    own is a dict with the same keys. The grader reasons before it scores (the explanation), and
    with `samples > 1` it is sampled several times: the consensus is the score and the share of
    samples that agree with it is the confidence (self-consistency). Failures are data per item
    (`error`, `refusal`, `budget_stop`, `parse_failure`), never an exception for the batch.
    With `scoring="logprobs"` each answer is asked once for its score token's log-probabilities
    (G-Eval style): the score is the probability-weighted mean of the scale's values and the
    confidence the probability of the most likely one; a server that returns none gives the
    answer the failure `no_logprobs`, never a score read from the text alone.

    Usage example:
    ```python
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack_integrations.components.evaluators.answer_eval import RubricEvaluator

    grader = RubricEvaluator(
        metric="question_answering_correctness",
        chat_generator=OpenAIChatGenerator(model="gpt-4o-mini", generation_kwargs={"temperature": 0.7}),
        samples=3,
    )
    result = grader.run(
        predicted_answers=["Paris is the capital of France."],
        questions=["What is the capital of France?"],
        ground_truth_answers=["Paris"],
    )
    print(result["individual_scores"], result["confidences"], result["explanations"][0])
    ```
    """

    @documented(
        RubricOptions,
        chat_generator=CHAT_GENERATOR_DOC,
        min_graded_share=MIN_GRADED_SHARE_DOC,
        progress_bar=PROGRESS_BAR_DOC,
    )
    def __init__(
        self,
        metric: str | Mapping[str, Any] = RubricOptions.metric,
        chat_generator: Any = None,
        samples: int = RubricOptions.samples,
        concurrency: int = RubricOptions.concurrency,
        max_retries: int = RubricOptions.max_retries,
        retry_backoff: float = RubricOptions.retry_backoff,
        max_calls: int | None = RubricOptions.max_calls,
        cache_path: str | None = RubricOptions.cache_path,
        sampling: str = RubricOptions.sampling,
        timeout: float | None = RubricOptions.timeout,
        scoring: str = RubricOptions.scoring,
        structured: str = RubricOptions.structured,
        min_graded_share: float = MIN_GRADED_SHARE,
        progress_bar: bool = True,
    ) -> None:
        """Create a RubricEvaluator.

        :raises ValueError: For an unknown metric or a bad rubric or limit (NaN, infinite or negative seconds too),
            or a `min_graded_share` outside 0 to 1.
        :raises TypeError: For a `progress_bar` that is not a bool, or a `min_graded_share` that is not a number.
        """
        self._evaluator = self._build(locals())

    @component.output_types(**socket_types(POINTWISE_SOCKETS))
    def run(
        self,
        predicted_answers: list[Any],
        questions: list[str] | None = None,
        contexts: list[Any] | None = None,
        ground_truth_answers: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Grade each predicted answer on the rubric.

        :param predicted_answers: The responses, in any form the package reads (str, ChatMessage, GeneratedAnswer...).
        :param questions: The instruction of each (the question and any instructions); needed by most metrics.
        :param contexts: The text each response should rest on: a str, or a list of str or Documents (joined).
        :param ground_truth_answers: The reference response of each (a str, or a list of acceptable ones).
        :returns:
            A dictionary with:
            - `score`: the mean of the scores given, when at least `min_graded_share` of the answers
              got one; `None` otherwise (`graded` says how many did, and a warning is logged, with
              the mean over those, when some did not).
            - `individual_scores`: per answer, the consensus score on the metric's scale, or `None`
              (with `scoring="logprobs"`, the weighted mean, a float to 4 decimals).
            - `explanations`: per answer, the grader's reasoning; for a failure, what went wrong
              (for `parse_failure`, the start of the reply that could not be read).
            - `confidences`: per answer, the share of samples that agree with the score (4 decimals;
              with `scoring="logprobs"`, the probability of the most likely value).
            - `failure_kinds`: `None`, or `error`, `refusal`, `budget_stop`, `parse_failure`
              (and, with `scoring="logprobs"`, `no_logprobs`: the reply had no usable log-probabilities).
            - `failure_counts`: failure kind to count.
            - `samples_used`: per answer, the readable samples its score rests on (fewer than
              `samples` when `max_calls` cut them; 0 on failure; `None` when no grader was asked).
            - `graded`, `graded_share`: how many answers got a score, and their share.
            - `usage`: `calls`, `prompt_tokens`, `completion_tokens` (as the generator reports them),
              `cache_hits`, `retries`, `unreachable` (requests the server never answered),
              `cut_reply_warnings` (Haystack's warnings of replies cut by the token limit, counted
              here instead of logged) and `structured_fallbacks` (formats of structured output the
              server refused, see `structured`).
            - `signature`: what the grades depend on (a jury's names every judge).
            - `judge_scores`: per answer, each judge's own consensus score (`None` where it gave
              none), in the order of `chat_generator` (one judge: a list of one).
            - `judge_agreement`: a jury's agreement between its judges, `None` for one generator:
              `judges`, `items` (the answers every judge scored, which it is computed over),
              `level` (`ordinal`) and `krippendorff_alpha` (`None` when undefined: every score the same).
        :raises ValueError: When an input the metric needs is missing or empty (naming it), or lengths differ.
        """
        return self._run(
            predicted_answers=predicted_answers,
            questions=questions,
            contexts=contexts,
            ground_truth_answers=ground_truth_answers,
        )

    @component.output_types(**socket_types(POINTWISE_SOCKETS))
    async def run_async(
        self,
        predicted_answers: list[Any],
        questions: list[str] | None = None,
        contexts: list[Any] | None = None,
        ground_truth_answers: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Asynchronously grade each answer, without blocking the event loop; as `run`."""
        return await self._run_async(
            predicted_answers=predicted_answers,
            questions=questions,
            contexts=contexts,
            ground_truth_answers=ground_truth_answers,
        )

    def _outputs(self, result: Scored) -> dict[str, Any]:
        grades, usage, per_judge = result
        columns = self._evaluator.columns(grades)
        graded = [score for score in columns["score"] if score is not None]
        mean = sum(graded) / len(graded) if graded else None
        return socket_outputs(
            POINTWISE_SOCKETS,
            {
                **columns,
                **self._graded(columns, usage, ("score", mean)),
                "mean": mean if self._enough_graded(columns["failure_kind"]) else None,
                "per_judge": per_judge,
                "judge_agreement": self._judge_agreement(per_judge),
            },
        )
