"""GraderComponent: the base of the rubric components, adapters over the rubric grader given a chat generator."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from haystack.core.serialization import component_to_dict

from answer_eval.errors import count_failures
from answer_eval.evaluators.base import check_number
from answer_eval.evaluators.rubric_grading import RubricCore
from answer_eval.llm.batches import current_book
from answer_eval.llm.jury import check_generator
from answer_eval.llm.rubric_prompts import Rubric
from answer_eval.llm.spending import Usage
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    check_progress_bar,
    progress_bar,
)
from haystack_integrations.components.evaluators.answer_eval._generators import default_generator

__all__ = [
    "CALLED",
    "CHAT_GENERATOR_DOC",
    "MIN_GRADED_SHARE",
    "MIN_GRADED_SHARE_DOC",
    "PROGRESS_BAR_DOC",
    "GraderComponent",
    "Scored",
    "check_graded_share",
]

logger = logging.getLogger(__name__)


Scored = tuple[Sequence[Any], Usage, list[list[Any]]]
"""A run's grades, what they cost, and per item each judge's own grade (one judge: a list of one)."""

MIN_GRADED_SHARE = 0.8
"""The default share of items that must be graded for a batch figure (`score`, `win_rate`) to be given.

Below it the figure is `None`, so that `EvaluationRunResult.aggregated_report()`, which shows `score` alone,
does not show a mean over a few items as one over all: with a share `s` graded, the mean over all items can
lie anywhere within `(1 - s)` of the scale's range of the graded mean (docs/model-based-metrics.md)."""


def check_graded_share(value: Any) -> float:
    """``min_graded_share`` as a float after checking it is a number from 0 to 1 (`TypeError`/`ValueError`)."""
    check_number("min_graded_share", value)
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"min_graded_share must be a number from 0 to 1, got {value!r}")
    return float(value)


CHAT_GENERATOR_DOC = (
    "Any Haystack chat generator (`OpenAIChatGenerator`, and through its `api_base_url` Ollama, vLLM or any "
    "OpenAI-compatible server); default `OpenAIChatGenerator()`. It is saved with the pipeline as Haystack saves "
    "components (API keys as env var names). A list of two or more distinct generators is a jury: each judge grades "
    'every item (`samples` each), their samples pooled (see docs/model-based-metrics.md, "A jury of judges").'
)
"""The rubric components' ``chat_generator``, documented once."""

MIN_GRADED_SHARE_DOC = (
    "The share of items that must be graded for the batch figure (`score`; `win_rate` and `p_value`) to be given "
    "(0 to 1): below it the figure is `None` and a warning gives it over the graded ones, so that "
    "`EvaluationRunResult.aggregated_report()` never shows a figure over a few items as one over all. 0: the figure "
    "over whatever was graded, as Haystack's `FaithfulnessEvaluator` gives it."
)
"""The rubric components' ``min_graded_share``, documented once."""

PROGRESS_BAR_DOC = (
    "Show a progress bar (tqdm, on standard error) while the items are graded, as Haystack's `LLMEvaluator`: one "
    "step per item (and judge, for a jury)."
)
"""The rubric components' ``progress_bar``, documented once."""


class GraderComponent(EvaluatorComponent):
    """The base of the rubric components: adapters over :class:`RubricCore` given their chat generator.

    A subclass's ``__init__`` builds its core as every component does (:meth:`_build`); its ``_outputs`` gives the
    graded items (:meth:`RubricCore.columns`) and the run's figures (:meth:`_graded`) to the sockets
    the core declares. Each run has
    its own budget (``max_calls`` bounds one run; the command line's bounds the file). A grader the
    server refuses to serve (a bad key, a dead server) raises ``GraderUnavailable`` for the run; a
    stop once the server answered some request returns those grades instead, the items left
    ``error`` (``not sent: the run stopped: ...``), with a warning.

    ``chat_generator`` may be a list of two or more generators: a jury, which the core runs
    (:class:`~answer_eval.evaluators.rubric_jury.RubricJury`), every judge grading every item, their
    samples pooled; ``_score`` gives, beside the grades and usage, each judge's own consensus per
    item (one judge: a column of one).
    """

    sockets: ClassVar[dict[str, str]] = {
        "predicted_answers": "prediction",
        "questions": "question",
        "contexts": "context",
        "ground_truth_answers": "reference",
    }
    generator_parameter: ClassVar[str | None] = "chat_generator"
    core = RubricCore
    _evaluator: RubricCore

    def _build(self, parameters: Mapping[str, Any], *more: Any, **named: Any) -> Any:
        """The core, as every component builds it (:meth:`EvaluatorComponent._build`), and the component's own.

        ``progress_bar`` and ``min_graded_share`` are the component's (how it shows a run), not the
        grader's options; a rubric given as a :class:`Rubric` is kept as its dict (what ``to_dict``
        saves); the chat generator (OpenAI's when none is given; a list: a jury, checked by the core)
        is handed to the core.
        """
        self.progress_bar = check_progress_bar(parameters.get("progress_bar", True))
        self.min_graded_share = check_graded_share(parameters.get("min_graded_share", MIN_GRADED_SHARE))
        given = dict(parameters)
        if isinstance(given.get("metric"), Rubric):
            given["metric"] = given["metric"].to_dict()
        generator = given.get("chat_generator")
        generator = default_generator() if generator is None else generator
        if not isinstance(generator, list | tuple):
            check_generator("chat_generator", generator)
        return EvaluatorComponent._build(self, given, *more, generator=generator, **named)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component: its chat generator as Haystack serialises components, then its options.

        :returns: The serialized component.
        """
        data = EvaluatorComponent.to_dict(self)
        parameters = data["init_parameters"]
        # The component's own, after the options.
        parameters["min_graded_share"] = self.min_graded_share
        parameters["progress_bar"] = self.progress_bar
        jury = self._evaluator.jury
        if jury is not None:  # a jury: every judge saved as Haystack saves components, in order
            parameters["chat_generator"] = [
                component_to_dict(obj=generator, name="chat_generator") for generator in jury.generators
            ]
        return data

    @property
    def chat_generator(self) -> Any:
        """The chat generator the grader calls (a jury's: the list of its judges')."""
        jury = self._evaluator.jury
        return self._evaluator.generator if jury is None else jury.generators

    @property
    def signature(self) -> str:
        """What these grades depend on: metric, rubric fingerprint, prompt, samples, generator, server, model.

        A jury's names every judge's generator, server, model and options (``judge1.model:...``).
        """
        return self._evaluator.signature

    def warm_up(self) -> None:
        """Open the reply cache (``CacheError`` when it cannot serve) and warm the chat generator(s) up."""
        self._evaluator.warm_up()

    def _check(self, inputs: Mapping[str, Any]) -> None:
        """A non-empty list of answers; the other inputs are checked by name when the items are built."""
        answers = inputs["predicted_answers"]
        if not isinstance(answers, list) or not answers:
            raise ValueError("predicted_answers must be a non-empty list")

    def _bar(self, columns: Mapping[str, Sequence[Any]]) -> Any:
        """The run's progress bar (``progress_bar``): one step per item and judge graded."""
        judges = self._evaluator.panel_size
        return progress_bar(self.progress_bar, len(columns["prediction"]) * judges, type(self).__name__)

    def _score(self, columns: Mapping[str, Sequence[Any]]) -> Scored:
        with self._bar(columns) as progress:
            return self._evaluator.grade(columns, CALLED, progress)

    async def _score_async(self, columns: Mapping[str, Sequence[Any]]) -> Scored:
        with self._bar(columns) as progress:
            return await self._evaluator.grade_async(columns, CALLED, progress)

    def _judge_agreement(self, per_judge: list[list[Any]]) -> dict[str, Any] | None:
        """The jury's agreement between its judges (``None`` for a single grader)."""
        return self._evaluator.agreement(per_judge)

    def _enough_graded(self, kinds: Sequence[str | None]) -> bool:
        """Whether at least ``min_graded_share`` of the items (and at least one) were graded: a batch figure given."""
        graded = kinds.count(None)
        return graded > 0 and graded / len(kinds) >= self.min_graded_share

    def _graded(self, columns: Mapping[str, list[Any]], usage: Usage, figure: tuple[str, Any]) -> dict[str, Any]:
        """The run's figures every rubric component gives; a warning when some item was not graded.

        :param figure: The batch figure's name and its value over the graded items (``score``, the mean),
            named in the warning: given, or ``None`` below ``min_graded_share``.
        """
        kinds = columns["failure_kind"]
        graded = kinds.count(None)
        book = current_book()  # a batch pass that left requests for the next batch is no result: nothing to warn of
        if graded < len(kinds) and not (book is not None and book.pending):
            counts = ", ".join(f"{kind} {count}" for kind, count in count_failures(kinds).items() if count)
            name, value = figure
            if self._enough_graded(kinds):
                said = f"{name} is over the graded ones"
            elif graded:
                said = (
                    f"that is below min_graded_share {self.min_graded_share:g}, so {name} is None "
                    f"(over the graded ones it would be {value:.4g})"
                )
            else:
                said = f"{name} is None"
            logger.warning("%s graded %d of %d items (%s); %s", type(self).__name__, graded, len(kinds), counts, said)
        return {
            "graded": graded,
            "graded_share": graded / len(kinds),
            "usage": usage.as_dict(),
            "signature": self.signature,
        }


CALLED = {
    "prediction": "predicted_answers",
    "instruction": "questions",
    "context": "contexts",
    "reference": "ground_truth_answers",
}
"""How the components name each rubric input, for the errors."""
