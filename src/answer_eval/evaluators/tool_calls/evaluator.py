"""The tool-call metrics (``answer-eval tools``): each predicted call against the reference call."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from answer_eval.evaluators.base import Columns, Evaluator, Role
from answer_eval.evaluators.item_errors import item_error
from answer_eval.evaluators.tool_calls.options import ToolCallsOptions
from answer_eval.evaluators.tool_calls.scorer import ToolCallScorer, read_tool_calls
from answer_eval.evaluators.value_summaries import MetricsSummary

__all__ = ["ToolCallCore", "ToolCallsOptions"]


class ToolCallCore(Evaluator):
    """Whether the call is valid, names the right tool, and has the right parameter keys and values."""

    name = "tools"
    component = "ToolCallEvaluator"
    options_type = ToolCallsOptions
    roles = (
        Role("reference", "reference", "the reference call"),
        Role("prediction", "prediction", "the predicted call"),
    )
    options: ToolCallsOptions

    def __init__(self, options: ToolCallsOptions | None = None) -> None:
        """Make the scorer; ``ValueError`` for a bad option."""
        super().__init__(options)
        self.scorer = ToolCallScorer(self.options)

    def outputs(self) -> dict[str, str]:
        """One column per metric, ``failure_kind`` and ``problem`` (why a call could not be read)."""
        return {**dict.fromkeys(self.scorer.metrics, "object"), "failure_kind": "object", "problem": "object"}

    def score(self, inputs: Mapping[str, Sequence[Any]]) -> Columns:
        """Every metric of every predicted call; an unreadable reference is bad input."""
        columns: Columns = {name: [] for name in self.outputs()}
        for position, (prediction, reference) in enumerate(zip(inputs["prediction"], inputs["reference"], strict=True)):
            try:
                calls = self.scorer.reference_calls(reference)
            except ValueError as exc:
                located = functools.partial(self.scorer.reference_calls, reference)
                raise item_error(located, "reference", position, exc) from None
            verdict = self.scorer.score_calls(read_tool_calls(prediction), calls)
            for name, value in verdict.scores.items():
                columns[name].append(value)
            columns["failure_kind"].append(verdict.failure_kind)
            columns["problem"].append(verdict.problem)
        return columns

    def new_summary(self) -> MetricsSummary:
        """Each metric's mean and the failure kinds."""
        return MetricsSummary(metrics=self.scorer.metrics)
