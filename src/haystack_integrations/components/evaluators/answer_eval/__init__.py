"""Haystack evaluator components of answer-eval-haystack, and ``BatchGrading``: an LLM component through a batch API."""

from answer_eval.llm.batch_grading import BatchGrading, BatchRunning
from haystack_integrations.components.evaluators.answer_eval.answer_contains import AnswerContainsEvaluator
from haystack_integrations.components.evaluators.answer_eval.answer_judge import AnswerJudgeEvaluator
from haystack_integrations.components.evaluators.answer_eval.pairwise import PairwiseEvaluator
from haystack_integrations.components.evaluators.answer_eval.pairwise_rubric import PairwiseRubricEvaluator
from haystack_integrations.components.evaluators.answer_eval.reference_metrics import (
    ReferenceMetricsEvaluator,
)
from haystack_integrations.components.evaluators.answer_eval.rubric import RubricEvaluator
from haystack_integrations.components.evaluators.answer_eval.tool_calls import ToolCallEvaluator
from haystack_integrations.components.evaluators.answer_eval.typed_answer import TypedAnswerEvaluator

__all__ = [
    "AnswerContainsEvaluator",
    "AnswerJudgeEvaluator",
    "BatchGrading",
    "BatchRunning",
    "PairwiseEvaluator",
    "PairwiseRubricEvaluator",
    "ReferenceMetricsEvaluator",
    "RubricEvaluator",
    "ToolCallEvaluator",
    "TypedAnswerEvaluator",
]
