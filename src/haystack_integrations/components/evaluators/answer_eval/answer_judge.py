"""AnswerJudgeEvaluator: a verdict close to a human grader's, offline, as a Haystack component."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from haystack import component
from haystack.core.serialization import component_to_dict

from answer_eval import NOT_IN_DOCUMENT
from answer_eval.evaluators.judge.judge_core import AnswerJudgeCore, Judged, per_answer
from answer_eval.evaluators.judge.judge_options import JudgeOptions, drop_removed_options
from answer_eval.inputs.reading import check_batch_shape
from answer_eval.llm.jury import check_generator
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    check_progress_bar,
    progress_bar,
    scores_outputs,
)

__all__ = ["AnswerJudgeEvaluator"]


_PLAIN: dict[str, Any] = {
    "score": float,
    "individual_scores": list[int],
    "confidence": list[float],
    "acceptance": list[float],
    "evidence": list[str],
    "stages": list[str],
    "failure_kinds": list[str | None],
}
"""The output sockets of every judge (and `failure_counts`, always last, as it always was)."""

_ABSTAINING: dict[str, Any] = {"abstained": list[bool], "abstained_share": float, "threshold": float | None}
"""The sockets of a judge with a threshold and no LLM: the answers it leaves for a person."""

_ESCALATING: dict[str, Any] = {
    "escalated": list[bool],
    "llm_verdicts": list[bool | None],
    "llm_explanations": list[str | None],
    "llm_failures": list[str | None],
    "escalated_share": float,
    "threshold": float | None,
    "usage": dict[str, int],
    "llm_judge_verdicts": list[list[bool | None]],
    "llm_agreement": dict[str, Any] | None,
}
"""The sockets of a judge with `escalate_to`: what the LLM was asked and said (they mean nothing without one)."""


_CASCADING: dict[str, Any] = {
    "abstained": list[bool],
    "abstained_share": float,
    "llm_confidences": list[float | None],
}
"""The sockets a cascade adds (`escalate_to`, a target, a calibration with an LLM level): what is left for a person."""


def _sockets(escalating: bool, threshold: bool, cascade: bool = False) -> dict[str, Any]:
    """The output sockets of a judge: declared per instance, as the core's columns are (``AnswerJudgeCore.outputs``)."""
    more = _ESCALATING if escalating else _ABSTAINING if threshold else {}
    return {**_PLAIN, **more, **(_CASCADING if cascade else {}), "failure_counts": dict[str, int]}


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

    def __init__(
        self,
        not_found_label: str = NOT_IN_DOCUMENT,
        extra_not_found_phrases: list[str] | None = None,
        escalate_to: Any = None,
        escalate_below: float | None = None,
        target_agreement: float | None = None,
        delta: float = 0.1,
        calibration_sets: list[str] | None = None,
        concurrency: int = 4,
        max_retries: int = 2,
        retry_backoff: float = 1.0,
        max_calls: int | None = None,
        cache_path: str | None = None,
        timeout: float | None = None,
        calibration: str | os.PathLike[str] | dict[str, Any] | None = None,
        structured: str = "auto",
        progress_bar: bool = True,
    ) -> None:
        """Create an AnswerJudgeEvaluator.

        :param not_found_label: The label that marks an unanswerable question.
        :param extra_not_found_phrases: More phrases that report the document does not hold the answer.
        :param escalate_to: A Haystack chat generator: answers whose confidence is below the
            threshold go to it for a correctness check (question, acceptable answers, candidate),
            and its yes or no replaces the judge's verdict. `None`: the judge decides alone. A list
            of two or more distinct generators is a jury: the majority of their verdicts decides
            (a split leaves the judge's verdict; use an odd number of judges).
        :param escalate_below: The confidence threshold (default with `escalate_to`: 0.8).
        :param target_agreement: Instead of a threshold, the agreement with people the kept
            verdicts must reach: the threshold is chosen on `calibration` (your labels), else on
            the shipped human-judged calibration data ("Trust or Escalate", Jung et al. 2024), so
            that, with probability at least 1 - `delta`, the verdicts the judge keeps agree with
            people at least this often, on data like the calibration's. Without `escalate_to`,
            the other answers are flagged `abstained` (for a person) instead of escalated.
        :param delta: The risk allowed for that guarantee.
        :param calibration_sets: With `target_agreement`, the shipped calibration sets the
            threshold must hold on, each on its own (`nq301-dev`, `efficientqa`, `evouna-tq`;
            `None`, the default: `nq301-dev` and `evouna-tq`, with a warning that the promise
            assumes annotators like theirs): choose the ones like your data, or better, calibrate. An empty list, an
            unknown or repeated name, or sets without `target_agreement` are refused.
        :param concurrency: Escalation requests in flight at most.
        :param max_retries: Retries after HTTP 429, 5xx, a timeout or a lost connection.
        :param retry_backoff: Seconds before the first retry, doubled each time.
        :param max_calls: Requests one run may send; answers left keep the judge's verdict
            (`llm_failures`: `budget_stop`). A jury's buys whole panels, answer by answer: an
            answer is sent to every judge or to none (`max_calls=5` with three judges: one answer).
        :param cache_path: A JSONL file of the LLM's replies, so that a rerun costs nothing (opened
            when the component warms up, or at its first escalation, before any request). A
            generator that names no model (a custom one without a `model` attribute) is refused a
            cache (`ValueError` naming `cache_path`).
        :param timeout: Seconds one escalation request may take in all (`None`: the generator's
            own `timeout`, else 600).
        :param calibration: A calibration on your own labels: the path of the file `answer-eval
            calibrate` writes (a `str` or a `pathlib.Path`, saved by `to_dict` as a string), or its
            content as a dict. `target_agreement`'s threshold is chosen on
            it and its recalibration applied. Made for a judge with other verdict options or
            another model, it is refused (`ValueError` naming what differs), as is a damaged file.
            A file with an LLM level (`answer-eval calibrate --escalate-model`), with `escalate_to`
            and `target_agreement`, runs the cascade judge -> LLM -> person: the judge's and the
            LLM's thresholds are each chosen at `delta / 2`, an LLM verdict below its own (a jury's
            majority share; one LLM's is 1.0) is `abstained` for a person, and every kept verdict
            agrees with people at least `target_agreement` of the time with probability 1 - `delta`
            (outputs `abstained`, `abstained_share`, `llm_confidences`). `escalate_to` must be the
            grader the level was calibrated with (its models, servers and generation options such as
            `temperature`; `ValueError` naming what differs). `answer-eval calibrate --escalate-model`
            calibrates one LLM: a jury's level cannot be calibrated from the command line yet.
        :param structured: Ask `escalate_to` for a JSON schema of its verdict (`response_format`:
            `explanation`, then `correct`, a boolean), as RubricEvaluator's `structured`: `auto`
            (the default; from an OpenAI-compatible generator `json_schema`, then `json_object`, then the
            prompt alone, each after the server refused the one before: `usage["structured_fallbacks"]`),
            `json_schema`, `json_object` (a server refusing the one given stops the run at its first
            request: a `ValueError` naming the values to give) or `off`. Without `escalate_to`, only `auto`.
        :param progress_bar: With `escalate_to`, show a progress bar (tqdm, on standard error) while the
            unsure answers are checked, as Haystack's `LLMEvaluator` (one step per answer and LLM).
            The judge's own verdicts take no time worth a bar.
        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If the label or a phrase is blank, both a
            threshold and a target are given, a threshold, target or delta is out of range, or
            `calibration_sets` is empty, names an unknown set or one twice, or comes without a target
            or with a `calibration`, or the calibration cannot be used.
        """
        if escalate_to is not None and not isinstance(escalate_to, list | tuple):  # a jury's: checked by the core
            check_generator("escalate_to", escalate_to)
        # The parameters besides the generator are the options, by name: the signature is their one list here.
        not_options = ("self", "escalate_to", "progress_bar")  # taken before locals() is read
        options = {name: value for name, value in locals().items() if name not in (*not_options, "not_options")}
        self._evaluator: AnswerJudgeCore = AnswerJudgeCore(JudgeOptions.from_dict(options), generator=escalate_to)
        self.progress_bar = check_progress_bar(progress_bar)
        # Only the sockets this judge fills: llm_* need escalate_to, abstained a threshold (see docs/answer-judge.md).
        component.set_output_types(self, **self._sockets())

    def _sockets(self) -> dict[str, Any]:
        trust = self._evaluator.trust
        return _sockets(self._evaluator.escalating, trust.threshold is not None, trust.cascade)

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

    @classmethod
    def _saved_parameters(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        """A pipeline saved before the deprecated semantic stage was removed still loads when the stage was off.

        Its `semantic`, `model_path` and `batch_size` changed nothing then, and are dropped; a saved
        `semantic=True` is a `ValueError` naming it (run Haystack's `SASEvaluator` beside the judge).
        """
        return drop_removed_options(parameters)

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
        outputs = scores_outputs(
            [int(correct) for correct in columns["correct"]],
            columns["failure_kind"],
            confidence=columns["confidence"],
            acceptance=columns["acceptance"],
            evidence=columns["evidence"],
            stages=columns["stage"],
            escalated=escalated,
            llm_verdicts=columns.get("llm_verdict", [None] * count),
            llm_explanations=columns.get("llm_explanation", [None] * count),
            llm_failures=columns.get("llm_failure", [None] * count),
            escalated_share=sum(escalated) / count,
            abstained=abstained,
            abstained_share=sum(abstained) / count,
            llm_confidences=columns.get("llm_confidence", [None] * count),
            threshold=self._evaluator.trust.threshold,
            usage=usage.as_dict(),
            llm_judge_verdicts=per_answer(unsure, per_judge),
            llm_agreement=self._evaluator.agreement(per_judge),
        )
        return {name: outputs[name] for name in self._sockets()}  # only the declared sockets, in their order
