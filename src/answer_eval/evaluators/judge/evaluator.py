"""The judge (``answer-eval judge``): the verdict a person would give, with a calibrated acceptance and evidence."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from answer_eval.evaluators.base import Columns, Evaluator, Role, option
from answer_eval.evaluators.contains.evaluator import ANSWERS, PREDICTION, ContainsOptions, locate_bad_answers
from answer_eval.evaluators.judge.cascade import AnswerJudge
from answer_eval.evaluators.summaries import FileSummary

__all__ = ["JudgeEvaluator", "JudgeOptions"]

logger = logging.getLogger(__name__)

QUESTION = Role("question", "question", "the question, used when present", optional=True)


@dataclass(frozen=True)
class JudgeOptions(ContainsOptions):
    """The options of :class:`JudgeEvaluator`: the contains rules' not-found options and the semantic stage's.

    :param semantic: Deprecated: add the MiniLM semantic stage (it changes no verdict with the shipped model).
    :param model_path: The semantic stage's sentence-transformers folder (default: the packaged MiniLM).
    :param batch_size: Texts the semantic stage encodes per batch.
    """

    semantic: bool = option(
        False,
        flag="--semantic",
        help="deprecated: add the MiniLM semantic stage (changes no verdict with the shipped model; ~50x slower)",
        off_flag="--no-semantic",
        off_help="the default now; kept so old command lines work",
    )
    model_path: str | None = option(None, cli=False, help="the semantic stage's model folder")
    batch_size: int = option(64, cli=False, help="texts the semantic stage encodes per batch")

    def check(self) -> None:
        """The contains options' checks; ``semantic`` a bool, ``batch_size`` a positive int."""
        super().check()
        if not isinstance(self.semantic, bool):
            raise TypeError(f"semantic must be a bool, got {type(self.semantic).__name__}")
        if self.model_path is not None and not isinstance(self.model_path, str):
            raise TypeError(f"model_path must be a str or None, got {type(self.model_path).__name__}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int):
            raise TypeError(f"batch_size must be an int, got {type(self.batch_size).__name__}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")


class JudgeEvaluator(Evaluator):
    """The AnswerJudge: the contains rules and lenient lexical rules, each verdict with its acceptance."""

    name = "judge"
    component = "AnswerJudgeEvaluator"
    options_type = JudgeOptions
    roles = (ANSWERS, PREDICTION, QUESTION)
    options: JudgeOptions

    def __init__(self, options: JudgeOptions | None = None) -> None:
        """Make the judge (its model file is read now); ``ValueError`` for a blank label or phrase."""
        super().__init__(options)
        self.judge = AnswerJudge(
            similarity=None,
            not_found_label=self.options.not_found_label,
            extra_not_found_phrases=self.options.extra_not_found_phrases,
        )

    def warm_up(self) -> None:
        """With the deprecated semantic stage: load its model once (the lexical stages alone without the extra)."""
        from answer_eval.evaluators.judge.semantic import SEMANTIC_DEPRECATION, MiniLMSimilarity, semantic_available

        if not self.options.semantic or self.judge.similarity is not None:
            return
        logger.warning("the judge's semantic stage is deprecated: %s", SEMANTIC_DEPRECATION)
        if not semantic_available():
            logger.warning("the 'semantic' extra is not installed; the judge runs its lexical stages only")
            return
        similarity = MiniLMSimilarity(self.options.model_path, self.options.batch_size)
        similarity.warm_up()
        self.judge.similarity = similarity

    def outputs(self) -> dict[str, str]:
        """The verdict, its confidence and acceptance (4 decimals), the deciding stage, evidence, kind, outcome."""
        return {
            "correct": "bool",
            "confidence": "float64",
            "acceptance": "float64",
            "stage": "object",
            "evidence": "object",
            "failure_kind": "object",
            "outcome": "object",
        }

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Judge a batch; a question that is not a string counts as none."""
        answers = inputs["answers"]
        given = inputs.get("question")
        questions = None if given is None else [value if isinstance(value, str) else None for value in given]
        try:
            verdicts = self.judge.judge_batch(answers, inputs["prediction"], questions)
        except (TypeError, ValueError) as exc:
            raise locate_bad_answers(answers, exc) from None
        return {
            "correct": [verdict.correct for verdict in verdicts],
            "confidence": [round(verdict.confidence, 4) for verdict in verdicts],
            "acceptance": [round(verdict.acceptance, 4) for verdict in verdicts],
            "stage": [verdict.stage for verdict in verdicts],
            "evidence": [verdict.evidence for verdict in verdicts],
            "failure_kind": [verdict.failure_kind for verdict in verdicts],
            "outcome": [verdict.outcome for verdict in verdicts],
        }

    def new_summary(self) -> FileSummary:
        """Right answers, failure kinds and the deciding stages."""
        return FileSummary(stages={})
