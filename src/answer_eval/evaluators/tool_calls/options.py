"""The options of the tool_calls evaluator: declared once, read by its evaluator, its scorer and its component."""

from __future__ import annotations

from dataclasses import dataclass

from answer_eval.evaluators.base import Options, list_option, option
from answer_eval.evaluators.checks import check_bool, check_names, check_str

__all__ = ["TOOL_CALL_METRICS", "ToolCallsOptions"]

TOOL_CALL_METRICS = ("tool_call_valid", "tool_name_match", "tool_parameter_key_match", "tool_parameter_kv_match")
"""The tool-call metric names, in a stable order."""


@dataclass(frozen=True)
class ToolCallsOptions(Options):
    """The options of :class:`ToolCallCore` (see :class:`~.scorer.ToolCallScorer`)."""

    metrics: tuple[str, ...] = list_option(
        TOOL_CALL_METRICS,
        flag="--metric",
        choices=TOOL_CALL_METRICS,
        help="a metric to compute (repeatable; default: all four)",
    )
    strict: bool = option(False, help="compare argument values exactly, not normalised")
    calls: str = option("first", choices=("first", "all"), help="calls inspected (default: %(default)s)")
    alignment: str = option(
        "order", choices=("order", "name"), help="with --calls all, how calls are paired (default: %(default)s)"
    )
    extra_keys: str = option(
        "ignore",
        choices=("ignore", "penalize"),
        help="whether parameters the reference lacks count against the prediction (default: %(default)s)",
    )

    def check(self) -> None:
        """The types; the values are checked by the scorer."""
        check_names("metrics", self.metrics)
        check_bool("strict", self.strict)
        for name in ("calls", "alignment", "extra_keys"):
            check_str(name, getattr(self, name))
