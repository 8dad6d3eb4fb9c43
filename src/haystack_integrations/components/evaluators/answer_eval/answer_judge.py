"""AnswerJudgeEvaluator: a verdict close to a human grader's, offline, as a Haystack component."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from haystack import component
from haystack.core.serialization import component_to_dict

from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore, Judged, per_answer
from answer_eval.evaluators.judge.judge_options import JudgeOptions
from answer_eval.inputs.reading import check_batch_shape
from answer_eval.llm.jury import check_generator
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    check_progress_bar,
    documented,
    progress_bar,
    socket_outputs,
    socket_types,
)

__all__ = ["AnswerJudgeEvaluator"]


@component
class AnswerJudgeEvaluator(EvaluatorComponent):
    """Judges answers the way a person would, offline, with no API calls, and says why.

    A cascade of explainable stages: the strict answer-contains rules; lenient lexical evidence
    that people accept and the strict rules miss (words in another order or form, "Nixon" for
    "Richard Nixon", "six" for 6, "14 December 1972" for "December 14, 1972", a number inside the
    gold's range, a name without its middle name), never breaking the number rules or matching a
    person on a shared surname. Every verdict carries `acceptance`, the probability that a person
    accepts the answer, from a small logistic model fitted on ~16,000 human verdicts from three
    sources, and says which rule and which features decided. On human-judged NQ-open answers it
    agrees with people on 82% of answers (exact match: 59%, answer-contains: 73%); on TriviaQA
    answers from five systems, 96%. It needs no model and scores thousands of answers a second.
    An adapter over `answer_eval`'s `AnswerJudgeCore`, which `answer-eval judge` runs: the same
    verdicts, and the same `confidence` and `acceptance` (to 4 decimals).

    Usage example:
    ```python
    from haystack_integrations.components.evaluators.answer_eval import AnswerJudgeEvaluator

    judge = AnswerJudgeEvaluator()
    result = judge.run(
        ground_truth_answers=[["Richard Nixon"], ["Dollree Mapp"], ["December 14, 1972"]],
        predicted_answers=["Nixon", "Dolly Mapp", "14 December 1972"],
    )
    print(result["individual_scores"])  # [1, 0, 1]
    print(result["evidence"][0])
    ```
    """

    sockets: ClassVar[dict[str, str]] = {
        "ground_truth_answers": "answers",
        "predicted_answers": "prediction",
        "questions": "question",
    }
    generator_parameter: ClassVar[str | None] = "escalate_to"

    core = AnswerJudgeCore
    _evaluator: AnswerJudgeCore

    @documented(
        JudgeOptions,
        escalate_to="A Haystack chat generator: answers whose confidence is below the threshold go to it for a "
        "correctness check (question, acceptable answers, candidate), and its yes or no replaces the judge's "
        "verdict. `None`: the judge decides alone. A list of two or more distinct generators is a jury: the "
        "majority of their verdicts decides (a split leaves the judge's verdict; use an odd number of judges).",
        progress_bar="With `escalate_to`, show a progress bar (tqdm, on standard error) while the unsure answers "
        "are checked, as Haystack's `LLMEvaluator` (one step per answer and LLM).",
    )
    def __init__(
        self,
        not_found_label: str = JudgeOptions.not_found_label,
        extra_not_found_phrases: list[str] | None = None,
        escalate_to: Any = None,
        escalate_below: float | None = JudgeOptions.escalate_below,
        target_agreement: float | None = JudgeOptions.target_agreement,
        delta: float = JudgeOptions.delta,
        calibration_sets: list[str] | None = None,
        concurrency: int = JudgeOptions.concurrency,
        max_retries: int = JudgeOptions.max_retries,
        retry_backoff: float = JudgeOptions.retry_backoff,
        max_calls: int | None = JudgeOptions.max_calls,
        cache_path: str | None = JudgeOptions.cache_path,
        timeout: float | None = JudgeOptions.timeout,
        calibration: str | os.PathLike[str] | Mapping[str, Any] | None = JudgeOptions.calibration,
        structured: str = JudgeOptions.structured,
        progress_bar: bool = True,
    ) -> None:
        """Create an AnswerJudgeEvaluator.

        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If the label or a phrase is blank, both a
            threshold and a target are given, a threshold, target or delta is out of range, or
            `calibration_sets` is empty, names an unknown set or one twice, or comes without a target
            or with a `calibration`, or the calibration cannot be used.
        """
        if escalate_to is not None and not isinstance(escalate_to, list | tuple):  # a jury's: checked by the core
            check_generator("escalate_to", escalate_to)
        self._evaluator = self._build(locals(), generator=escalate_to)
        self.progress_bar = check_progress_bar(progress_bar)
        # Only the sockets this judge fills: llm_* need escalate_to, abstained a threshold (see docs/answer-judge.md).
        component.set_output_types(self, **socket_types(self._evaluator.output_sockets()))

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component (a jury's `escalate_to`: every generator, in order).

        :returns: The serialized component.
        """
        data = EvaluatorComponent.to_dict(self)
        jury = self._evaluator.jury
        if jury is not None:
            saved = [component_to_dict(obj=generator, name="escalate_to") for generator in jury.generators]
            data["init_parameters"]["escalate_to"] = saved
        data["init_parameters"]["progress_bar"] = self.progress_bar
        return data

    def warm_up(self) -> None:
        """Open the escalation's reply cache (before any request)."""
        self._evaluator.warm_up()

    def run(
        self, ground_truth_answers: list[Any], predicted_answers: list[Any], questions: list[str] | None = None
    ) -> dict[str, Any]:
        """Judge each predicted answer against the acceptable answers of its question.

        :param ground_truth_answers: Per question, one acceptable answer (a str or a finite number) or a list of them.
        :param predicted_answers: Per question, the pipeline's output in any form
            AnswerContainsEvaluator reads (str, GeneratedAnswer, ChatMessage, generator output, ...).
        :param questions: The questions, optional: an answer that only restates its question is not
            taken as evidence, and "when" questions accept the year of a gold date.
        :returns:
            A dictionary with:
            - `score`: the share of answers judged right.
            - `individual_scores`: 1 or 0 per answer.
            - `confidence`: per answer, the probability that a person agrees with the verdict.
            - `acceptance`: per answer, the probability that a person accepts the answer
              (calibrated on human verdicts; `confidence` is it for right verdicts, 1 minus it for wrong).
            - `evidence`: per answer, which stage decided and why, and the features that weighed most.
            - `stages`: per answer, the deciding stage (`contains`, `lexical`, `no_evidence`,
              `no_answer`).
            - `failure_kinds`: `None` where right, otherwise the kind AnswerContainsEvaluator gives.
            - `failure_counts`: failure kind to count.
            - `escalated`: per answer, whether it was sent to `escalate_to` (its confidence below the threshold).
            - `llm_verdicts`: per answer, the LLM's verdict (`None`: not asked, or no verdict); where
              it gave one it is the answer's score, its stage `llm` and its words the evidence
              (`confidence` and `acceptance` stay the judge's own). In a cascade (a calibration
              with an LLM level) only a kept LLM verdict (confidence at or above the level's threshold)
              is the score; an abstained answer keeps the judge's verdict, the LLM's beside it.
            - `llm_explanations`, `llm_failures`: the LLM's reply, and why it gave no verdict
              (`error`, `refusal`, `budget_stop`, `parse_failure`: the judge's verdict stands).
            - `escalated_share`: the share of answers sent to the LLM.
            - `abstained`, `abstained_share`: the answers left for a person (their verdict is still the
              judge's): without `escalate_to`, those below the threshold; in a cascade, those escalated
              whose LLM verdict is missing or below the LLM level's threshold.
            - `llm_confidences`: in a cascade, per answer the LLM verdict's confidence (a jury's majority
              share, one LLM's 1.0; `None`: not asked, or no verdict).
            - `threshold`: the confidence threshold used (`None`: none; infinite when no verdict
              can be kept for the target).
            - `usage`: the LLM's `calls`, `prompt_tokens`, `completion_tokens`, `cache_hits`, `retries`,
              `unreachable`, `cut_reply_warnings` (as RubricEvaluator's).
            - `llm_judge_verdicts`: per answer, each LLM's verdict in the order of `escalate_to`
              (one LLM: a list of one; an answer not escalated: an empty list).
            - `llm_agreement`: with a jury (`escalate_to` a list), its judges' `fleiss_kappa` over
              the `items` (escalated answers) every judge gave a verdict on; `None` otherwise.
        :raises TypeError, ValueError: For bad inputs, naming the position (as AnswerContainsEvaluator).
        """
        return self._run(
            ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers, questions=questions
        )

    async def run_async(
        self, ground_truth_answers: list[Any], predicted_answers: list[Any], questions: list[str] | None = None
    ) -> dict[str, Any]:
        """Asynchronously judge answers (the escalation requests without blocking the event loop); as `run`."""
        return await self._run_async(
            ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers, questions=questions
        )

    def _check(self, inputs: Mapping[str, Any]) -> None:
        """Two lists of one length; the rest is the judge's to check (`verdicts`: "nothing to judge")."""
        check_batch_shape(inputs["ground_truth_answers"], inputs["predicted_answers"])

    def _bar(self, total: int) -> Any:
        """The escalation's progress bar (``progress_bar``): one step per unsure answer and LLM asked."""
        return progress_bar(self.progress_bar, total, type(self).__name__)

    def _score(self, columns: Mapping[str, Sequence[Any]]) -> Judged:
        # The core's run has a budget of its own: max_calls bounds one run (the command line's bounds the file).
        return self._evaluator.run(columns, self._bar)

    async def _score_async(self, columns: Mapping[str, Sequence[Any]]) -> Judged:
        return await self._evaluator.run_async(columns, self._bar)

    def _outputs(self, result: Judged) -> dict[str, Any]:
        verdicts, unsure, asked, usage, per_judge = result
        columns = self._evaluator.decided(verdicts, unsure, asked)
        count = len(verdicts)
        escalated = columns.get("escalated", [False] * count)
        abstained = columns.get("abstained", [False] * count)
        batch = {
            **columns,
            "escalated_share": sum(escalated) / count,
            "abstained": abstained,
            "abstained_share": sum(abstained) / count,
            "llm_confidence": columns.get("llm_confidence", [None] * count),
            "threshold": self._evaluator.trust.threshold,
            "usage": usage.as_dict(),
            "llm_judge_verdicts": per_answer(unsure, per_judge),
            "llm_agreement": self._evaluator.agreement(per_judge),
        }
        return socket_outputs(self._evaluator.output_sockets(), batch)
