"""RubricEvaluator: an LLM grades each answer on a rubric (the catalogue's or yours), with explanation, confidence."""

from __future__ import annotations

from typing import Any

from haystack import component

from haystack_integrations.components.evaluators.answer_eval._grader import GRADER_OUTPUTS, GraderComponent, Scored

__all__ = ["RubricEvaluator"]

_OUTPUTS: dict[str, Any] = {
    "score": float | None,
    "individual_scores": list[int | float | None],
    **GRADER_OUTPUTS,
    "judge_scores": list[list[int | None]],
    "judge_agreement": dict[str, Any] | None,
}


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

    def __init__(
        self,
        metric: str | dict[str, Any] = "question_answering_quality",
        chat_generator: Any = None,
        samples: int = 1,
        concurrency: int = 4,
        max_retries: int = 2,
        retry_backoff: float = 1.0,
        max_calls: int | None = None,
        cache_path: str | None = None,
        sampling: str = "auto",
        timeout: float | None = None,
        scoring: str = "samples",
        structured: str = "auto",
        min_graded_share: float = 0.8,
        progress_bar: bool = True,
    ) -> None:
        """Create a RubricEvaluator.

        :param metric: A catalogue name or a rubric as a dict (`name`, `description`, `criteria`
            as [name, description] pairs, `scale` as [value, label] pairs, `inputs`, optionally
            `optional_inputs` and `pairwise`).
        :param chat_generator: Any Haystack chat generator (`OpenAIChatGenerator`, and through its
            `api_base_url` Ollama, vLLM or any OpenAI-compatible server); default `OpenAIChatGenerator()`.
            It is saved with the pipeline as Haystack saves components (API keys as env var names).
            A list of two or more distinct generators is a jury: each judge grades every answer
            (`samples` each), the score is the median of all their samples and the confidence the
            share of all of them that agree (see docs/model-based-metrics.md, "A jury of judges").
        :param samples: Replies drawn per answer (self-consistency); at the generator's temperature,
            so give it one above 0 when `samples > 1`.
        :param concurrency: Requests in flight at most.
        :param max_retries: Retries after HTTP 429, 5xx, a timeout or a lost connection.
        :param retry_backoff: Seconds before the first retry, doubled each time.
        :param max_calls: Requests one run may send; the answers left get `budget_stop`. A jury's
            buys whole panels, answer by answer: an answer is sent to every judge or to none.
        :param cache_path: A JSONL file of replies, so that a rerun costs nothing and grades the same
            (only replies that could be read are kept). It is opened when the component warms up,
            before any request: a link, a file that is not such a cache, or a file or folder that
            cannot be read or written raises `CacheError` (a `ValueError`) there. Its key names
            every server and model the generator reaches (a `FallbackChatGenerator`'s every one);
            a generator that names no model (a custom one without a `model` attribute) is refused
            a cache (`ValueError` naming `cache_path`).
        :param sampling: `auto` (ask for `n` replies from OpenAI's generators, one request a sample
            otherwise), `n` or `calls`.
        :param timeout: Seconds one request may take in all, from sending it to its last byte
            (`None`: the generator's own `timeout`, else 600). A reply that trickles in is given up
            at it, whatever the generator does (a transient failure: retried).
        :param scoring: `samples` (the consensus of `samples` replies) or `logprobs` (one reply a
            answer, with `logprobs` and `top_logprobs: 20` asked; the score is the probability-weighted
            mean of the scale's values at the score's token, a float to 4 decimals, and the confidence
            the probability of the most likely value, renormalised over the scale's values among the
            token's top alternatives; needs `samples=1`). See docs/model-based-metrics.md.
        :param structured: Ask for a JSON schema of the reply (`response_format`): `auto` (from an
            OpenAI-compatible generator `json_schema`, then `json_object`, then the prompt alone, each
            after the server refused the one before, once a run: `usage["structured_fallbacks"]`;
            other generators: the prompt alone), `json_schema`, `json_object` or `off`.
        :param min_graded_share: The share of answers that must get a score for `score` to be given
            (0 to 1): below it `score` is `None` and a warning gives the mean over the graded ones, so
            that `EvaluationRunResult.aggregated_report()` never shows a mean over a few answers as one
            over all. 0: the mean over whatever was graded, as Haystack's `FaithfulnessEvaluator` gives it.
        :param progress_bar: Show a progress bar (tqdm, on standard error) while the answers are graded,
            as Haystack's `LLMEvaluator`: one step per answer (and judge, for a jury).
        :raises ValueError: For an unknown metric or a bad rubric or limit (NaN, infinite or negative seconds too),
            or a `min_graded_share` outside 0 to 1.
        :raises TypeError: For a `progress_bar` that is not a bool, or a `min_graded_share` that is not a number.
        """
        self._make(locals())

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component; `scoring` only when it is `logprobs` (a sampled grader saves as before it existed).

        :returns: The serialized component.
        """
        data = GraderComponent.to_dict(self)  # @component remakes the class: no bare super()
        if data["init_parameters"].get("scoring") == "samples":
            del data["init_parameters"]["scoring"]
        return data

    @component.output_types(**_OUTPUTS)
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

    @component.output_types(**_OUTPUTS)
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
        scores = columns["score"]
        graded = [score for score in scores if score is not None]
        mean = sum(graded) / len(graded) if graded else None
        return {
            "score": mean if self._enough_graded(columns["failure_kind"]) else None,
            "individual_scores": scores,
            **self._grader_outputs(columns, usage, ("score", mean)),
            "judge_scores": per_judge,
            "judge_agreement": self._judge_agreement(per_judge),
        }
