"""Haystack evaluator components of answer-eval-haystack."""

from haystack_integrations.components.evaluators.answer_eval.answer_contains import AnswerContainsEvaluator

__all__ = ["AnswerContainsEvaluator"]
