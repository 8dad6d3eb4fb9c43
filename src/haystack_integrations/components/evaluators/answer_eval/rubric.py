"""RubricEvaluator: an LLM grades each answer on a rubric (the catalogue's or yours), with explanation, confidence."""

from __future__ import annotations

from typing import Any

from haystack import component, default_to_dict

from answer_eval.llm.calls import Usage
from answer_eval.llm.generators import shown_generator
from answer_eval.llm.grading import Grade, grade_pointwise
from answer_eval.llm.items import build_items
from answer_eval.llm.options import SamplingOptions
from answer_eval.llm.prompts import PROMPT_VERSION
from answer_eval.llm.rubrics import Rubric, rubric
from haystack_integrations.components.evaluators.answer_eval._checks import check_number
from haystack_integrations.components.evaluators.answer_eval._llm import (
    GraderComponent,
    LLMLimits,
    grader_outputs,
)

__all__ = ["RubricEvaluator"]

CALLED = {
    "prediction": "predicted_answers",
    "instruction": "questions",
    "context": "contexts",
    "reference": "ground_truth_answers",
}
"""How the components name each rubric input."""

_OUTPUTS: dict[str, Any] = {
    "score": float | None,
    "individual_scores": list[int | None],
    "explanations": list[str | None],
    "confidences": list[float | None],
    "failure_kinds": list[str | None],
    "failure_counts": dict[str, int],
    "usage": dict[str, int],
    "signature": str,
}


def check_samples(samples: Any) -> None:
    """Raise ``TypeError`` or ``ValueError`` unless ``samples`` is an int of at least 1."""
    check_number("samples", samples, integer=True)
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples}")


def items_of(chosen: Rubric, predicted_answers: Any, given: dict[str, Any]) -> list[dict[str, str | None]]:
    """The items of a run, by rubric input name; ``ValueError`` for no answers or an input the metric lacks."""
    if not isinstance(predicted_answers, list) or not predicted_answers:
        raise ValueError("predicted_answers must be a non-empty list")
    return build_items(chosen, {"prediction": predicted_answers, **given}, CALLED)


def metric_value(metric: str | dict[str, Any] | Rubric) -> str | dict[str, Any]:
    """What ``to_dict`` saves of a metric: its catalogue name, or the rubric as data."""
    return metric.to_dict() if isinstance(metric, Rubric) else metric


def rubric_signature(kind: str, chosen: Rubric, samples: int, generator: Any, extra: str = "") -> str:
    """The grader's signature: metric, rubric fingerprint, prompt, samples, generator, server, model, options."""
    described = shown_generator(generator)  # its credentials masked: a signature is printed and saved
    options = "".join(f"|{key}:{value}" for key, value in sorted(described["generation_kwargs"].items()))
    return (
        f"{kind}|metric:{chosen.name}|rubric:{chosen.fingerprint}|prompt:v{PROMPT_VERSION}|samples:{samples}{extra}"
        f"|generator:{type(generator).__name__}|server:{described['api_base_url']}|model:{described['model']}"
        f"{options}"
    )


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
    ) -> None:
        """Create a RubricEvaluator.

        :param metric: A catalogue name or a rubric as a dict (`name`, `description`, `criteria`
            as [name, description] pairs, `scale` as [value, label] pairs, `inputs`, optionally
            `optional_inputs` and `pairwise`).
        :param chat_generator: Any Haystack chat generator (`OpenAIChatGenerator`, and through its
            `api_base_url` Ollama, vLLM or any OpenAI-compatible server); default `OpenAIChatGenerator()`.
            It is saved with the pipeline as Haystack saves components (API keys as env var names).
        :param samples: Replies drawn per answer (self-consistency); at the generator's temperature,
            so give it one above 0 when `samples > 1`.
        :param concurrency: Requests in flight at most.
        :param max_retries: Retries after HTTP 429, 5xx, a timeout or a lost connection.
        :param retry_backoff: Seconds before the first retry, doubled each time.
        :param max_calls: Requests one run may send; the answers left get `budget_stop`.
        :param cache_path: A JSONL file of replies, so that a rerun costs nothing and grades the same
            (only replies that could be read are kept). It is opened when the component warms up,
            before any request: a link, a file that is not such a cache, or a file or folder that
            cannot be read or written raises `CacheError` (a `ValueError`) there.
        :param sampling: `auto` (ask for `n` replies from OpenAI's generators, one request a sample
            otherwise), `n` or `calls`.
        :param timeout: Seconds one request may take in all, from sending it to its last byte
            (`None`: the generator's own `timeout`, else 600). A reply that trickles in is given up
            at it, whatever the generator does (a transient failure: retried).
        :raises ValueError: For an unknown metric or a bad rubric or limit (NaN, infinite or negative seconds too).
        """
        check_samples(samples)
        self.metric = metric_value(metric)
        self._rubric = rubric(metric)
        self.samples = samples
        limits = SamplingOptions(
            timeout=timeout,
            concurrency=concurrency,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
            max_calls=max_calls,
            cache_path=cache_path,
            sampling=sampling,
        )
        self._llm = LLMLimits(chat_generator, limits)
        self.chat_generator = self._llm.chat_generator

    @property
    def signature(self) -> str:
        """What these grades depend on: metric, rubric fingerprint, prompt version, samples, generator and model."""
        return rubric_signature("rubric", self._rubric, self.samples, self.chat_generator)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component (the generator with it, its API key as the name of its env var).

        :returns: The serialized component.
        """
        return default_to_dict(self, metric=self.metric, samples=self.samples, **self._llm.to_dict())

    def _result(self, ran: tuple[list[Grade], Usage]) -> dict[str, Any]:
        grades, usage = ran
        scores = [grade.score for grade in grades]
        graded = [score for score in scores if score is not None]
        return {
            "score": sum(graded) / len(graded) if graded else None,
            "individual_scores": scores,
            **grader_outputs(grades, usage, self.signature),
        }

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
            - `score`: the mean of the scores given (`None` when none could be given).
            - `individual_scores`: per answer, the consensus score on the metric's scale, or `None`.
            - `explanations`: per answer, the grader's reasoning.
            - `confidences`: per answer, the share of samples that agree with the score.
            - `failure_kinds`: `None`, or `error`, `refusal`, `budget_stop`, `parse_failure`.
            - `failure_counts`: failure kind to count.
            - `usage`: `calls`, `prompt_tokens`, `completion_tokens` (as the generator reports them),
              `cache_hits`, `retries`.
            - `signature`: what the grades depend on.
        :raises ValueError: When an input the metric needs is missing or empty (naming it), or lengths differ.
        """
        given = {"instruction": questions, "context": contexts, "reference": ground_truth_answers}
        items = items_of(self._rubric, predicted_answers, given)
        return self._result(
            self._llm.run_sync(lambda: grade_pointwise(self._llm.caller, self._rubric, items, self.samples))
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
        given = {"instruction": questions, "context": contexts, "reference": ground_truth_answers}
        items = items_of(self._rubric, predicted_answers, given)
        work = lambda: grade_pointwise(self._llm.caller, self._rubric, items, self.samples)  # noqa: E731
        return self._result(await self._llm.run_async(work))
