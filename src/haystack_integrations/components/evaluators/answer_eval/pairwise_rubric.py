"""PairwiseRubricEvaluator: an LLM says which of two answers is better on a rubric, with position bias cancelled."""

from __future__ import annotations

from typing import Any

from haystack import component, default_to_dict

from answer_eval.llm.calls import Usage
from answer_eval.llm.grading import BASELINE, CANDIDATE, TIE, PairGrade, grade_pairs, win_figures
from answer_eval.llm.options import SamplingOptions
from answer_eval.llm.rubrics import rubric
from haystack_integrations.components.evaluators.answer_eval._checks import check_bool
from haystack_integrations.components.evaluators.answer_eval._llm import (
    GraderComponent,
    LLMLimits,
    grader_outputs,
)
from haystack_integrations.components.evaluators.answer_eval.rubric import (
    check_samples,
    items_of,
    metric_value,
    rubric_signature,
)

__all__ = ["PairwiseRubricEvaluator"]

_OUTPUTS: dict[str, Any] = {
    "pairwise_choices": list[str | None],
    "explanations": list[str | None],
    "confidences": list[float | None],
    "failure_kinds": list[str | None],
    "failure_counts": dict[str, int],
    "wins": int,
    "losses": int,
    "ties": int,
    "win_rate": float | None,
    "p_value": float | None,
    "position_flips": int,
    "flip_rate": float | None,
    "usage": dict[str, int],
    "signature": str,
}


def pairwise_summary(grades: list[PairGrade]) -> dict[str, Any]:
    """Wins, losses, ties, win rate (a tie counts half), the sign test's p-value and the flips, of graded pairs."""
    choices = [grade.choice for grade in grades]
    swapped = [grade.flipped for grade in grades if grade.flipped is not None]
    return {
        **win_figures(choices.count(CANDIDATE), choices.count(BASELINE), choices.count(TIE)),
        "position_flips": sum(swapped),
        "flip_rate": sum(swapped) / len(swapped) if swapped else None,
    }


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

    def __init__(
        self,
        metric: str | dict[str, Any] = "question_answering_quality",
        chat_generator: Any = None,
        samples: int = 1,
        swap: bool = True,
        concurrency: int = 4,
        max_retries: int = 2,
        retry_backoff: float = 1.0,
        max_calls: int | None = None,
        cache_path: str | None = None,
        sampling: str = "auto",
        timeout: float | None = None,
    ) -> None:
        """Create a PairwiseRubricEvaluator.

        :param metric: A catalogue metric that compares pairs (`summarization_quality`,
            `question_answering_quality`) or a rubric dict with `"pairwise": true`.
        :param chat_generator: Any Haystack chat generator; default `OpenAIChatGenerator()`.
        :param samples: Replies drawn per order of a pair (self-consistency).
        :param swap: Also ask each pair in the other order; a choice that flips is a tie.
        :param concurrency: Requests in flight at most.
        :param max_retries: Retries after HTTP 429, 5xx, a timeout or a lost connection.
        :param retry_backoff: Seconds before the first retry, doubled each time.
        :param max_calls: Requests one run may send; the pairs left get `budget_stop`.
        :param cache_path: A JSONL file of replies, so that a rerun costs nothing.
        :param sampling: `auto`, `n` or `calls` (see RubricEvaluator).
        :param timeout: Seconds one request may take in all (see RubricEvaluator).
        :raises ValueError: For a metric that does not compare pairs, or a bad limit.
        """
        check_samples(samples)
        check_bool("swap", swap)
        chosen = rubric(metric)
        if not chosen.pairwise:
            raise ValueError(f"metric {chosen.name!r} does not compare pairs; pairwise metrics: {_pairwise_names()}")
        self.metric = metric_value(metric)
        self._rubric = chosen
        self.samples, self.swap = samples, swap
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
        """What these choices depend on (as RubricEvaluator's, with swap)."""
        swap = "|swap:yes" if self.swap else "|swap:no"
        return rubric_signature("pairwise_rubric", self._rubric, self.samples, self.chat_generator, swap)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component (the generator with it, its API key as the name of its env var).

        :returns: The serialized component.
        """
        return default_to_dict(self, metric=self.metric, samples=self.samples, swap=self.swap, **self._llm.to_dict())

    def _work(self, predicted_answers: list[Any], baseline_answers: list[Any], given: dict[str, Any]) -> Any:
        items = items_of(self._rubric, predicted_answers, given)
        if not isinstance(baseline_answers, list) or len(baseline_answers) != len(predicted_answers):
            raise ValueError("baseline_answers must be a list as long as predicted_answers")
        baselines = items_of(self._rubric, baseline_answers, given)
        pairs = [(item["prediction"], base["prediction"]) for item, base in zip(items, baselines, strict=True)]
        return lambda: grade_pairs(self._llm.caller, self._rubric, items, pairs, self.samples, self.swap)

    def _result(self, ran: tuple[list[PairGrade], Usage]) -> dict[str, Any]:
        grades, usage = ran
        return {
            "pairwise_choices": [grade.choice for grade in grades],
            **pairwise_summary(grades),
            **grader_outputs(grades, usage, self.signature),
        }

    @component.output_types(**_OUTPUTS)
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
            - `failure_kinds`, `failure_counts`: as RubricEvaluator's.
            - `wins`, `losses`, `ties`, `win_rate` (ties count half), `p_value` (two-sided sign test).
            - `position_flips`, `flip_rate`: pairs whose choice changed with the order (with `swap`).
            - `usage`, `signature`: as RubricEvaluator's.
        :raises ValueError: When an input the metric needs is missing, or lengths differ.
        """
        given = {"instruction": questions, "context": contexts, "reference": ground_truth_answers}
        return self._result(self._llm.run_sync(self._work(predicted_answers, baseline_answers, given)))

    @component.output_types(**_OUTPUTS)
    async def run_async(
        self,
        predicted_answers: list[Any],
        baseline_answers: list[Any],
        questions: list[str] | None = None,
        contexts: list[Any] | None = None,
        ground_truth_answers: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Asynchronously compare each pair; as `run`."""
        given = {"instruction": questions, "context": contexts, "reference": ground_truth_answers}
        return self._result(await self._llm.run_async(self._work(predicted_answers, baseline_answers, given)))


def _pairwise_names() -> str:
    from answer_eval.llm.rubrics import catalogue

    return ", ".join(name for name, item in catalogue().items() if item.pairwise)
