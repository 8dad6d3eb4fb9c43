"""ToolCallEvaluator: an agent's tool calls against the reference calls, as a Haystack component."""

from __future__ import annotations

from typing import Any, ClassVar

from haystack import component

from answer_eval.evaluators.tool_call_scoring import ToolCallCore, ToolCallsOptions
from haystack_integrations.components.evaluators.answer_eval._base import (
    EvaluatorComponent,
    documented,
    socket_types,
)

__all__ = ["ToolCallEvaluator"]


@component
class ToolCallEvaluator(EvaluatorComponent):
    """Grades predicted tool calls against reference calls: validity, tool name, parameter names and values.

    Metrics (each per item, in [0, 1]):
    - `tool_call_valid`: the prediction is well-formed: it reads, and each inspected call has a
      string name and an object of arguments (arguments given as a JSON string are decoded).
    - `tool_name_match`: the tool name equals the reference's.
    - `tool_parameter_key_match`: the share of the reference's parameter names the call has.
    - `tool_parameter_kv_match`: the share it has with an equal value (normalised by default:
      numbers by value, so `"2"` equals `2`; strings folded; `strict=True` for exact values).

    Predictions and references may be a JSON string `{"content": ..., "tool_calls": [...]}`
    (`tool_calls` may be JSON-encoded too), the decoded mapping, a list of calls, a Haystack
    `ChatMessage` carrying `ToolCall`s, a `ToolCall` or a list of them, a generator output
    (`{"replies": [...]}`) or an Agent result (`{"messages": [...]}`). An invalid prediction scores
    0 on every metric with failure kind `parse_failure`; it never raises.

    Usage example:
    ```python
    from haystack.dataclasses import ChatMessage, ToolCall
    from haystack_integrations.components.evaluators.answer_eval import ToolCallEvaluator

    reference = '{"content": "", "tool_calls": [{"name": "book", "arguments": {"movie": "Dune", "num_tix": "2"}}]}'
    evaluator = ToolCallEvaluator()
    result = evaluator.run(
        ground_truth_answers=[reference] * 3,
        predicted_answers=[
            ChatMessage.from_assistant(tool_calls=[ToolCall("book", {"movie": "dune", "num_tix": 2})]),
            '{"content": "", "tool_calls": [{"name": "book", "arguments": {"movie": "Dune"}}]}',
            '{"content": "", "tool_calls": [',
        ],
    )
    print(result["metrics"]["tool_parameter_kv_match"]["individual_scores"])  # [1.0, 0.5, 0.0]
    print(result["failure_kinds"])  # [None, 'wrong', 'parse_failure']
    print(result["individual_scores"])  # [1, 1, 0]
    ```
    """

    sockets: ClassVar[dict[str, str]] = {"ground_truth_answers": "reference", "predicted_answers": "prediction"}
    core = ToolCallCore
    _evaluator: ToolCallCore

    @documented(ToolCallsOptions)
    def __init__(
        self,
        metrics: list[str] | None = None,
        strict: bool = ToolCallsOptions.strict,
        calls: str = ToolCallsOptions.calls,
        alignment: str = ToolCallsOptions.alignment,
        extra_keys: str = ToolCallsOptions.extra_keys,
    ) -> None:
        """Create a ToolCallEvaluator.

        :raises TypeError: If a parameter has the wrong type.
        :raises ValueError: If a metric or an option value is unknown.
        """
        self._evaluator = self._build(locals())

    @component.output_types(**socket_types(ToolCallCore.sockets))
    def run(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Score each predicted tool call against its reference call.

        :param ground_truth_answers:
            Per item, the reference tool call(s), in the forms listed in the class docstring.
        :param predicted_answers:
            Per item, the model's output, in the same forms.
        :returns:
            A dictionary with:
            - `metrics`: metric name to `{"score", "individual_scores"}`.
            - `score`, `individual_scores`: those of the first metric.
            - `failure_kinds`: `None` where every metric is 1; `parse_failure` when no well-formed
              call could be read; `error` for an exception; `wrong` otherwise.
            - `failure_counts`: failure kind to count.
            - `problems`: why each invalid prediction is invalid, `None` where it is valid.
        :raises TypeError: If an input is not a list.
        :raises ValueError: If the lists are empty or differ in length, or a reference is not a
            valid tool call; the message names the position.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)

    @component.output_types(**socket_types(ToolCallCore.sockets))
    async def run_async(self, ground_truth_answers: list[Any], predicted_answers: list[Any]) -> dict[str, Any]:
        """Asynchronously score tool calls; same inputs, outputs and errors as `run`.

        Scoring is CPU work with no I/O, so this runs it directly rather than in a thread.
        """
        return self._run(ground_truth_answers=ground_truth_answers, predicted_answers=predicted_answers)
